"""Helpers for the tests of ``--out hf://datasets/...``: runs of the real CLI in subprocesses
(huggingface_hub reads ``HF_ENDPOINT`` at import) against the loopback Hub, with the retry
and commit constants made short, and what the Hub then holds."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from conftest import dir_bytes

from .fakehub import FakeHub

OUT_REPO = "acme/tokens"
OUT = f"hf://datasets/{OUT_REPO}"
TOKEN = "hf_" + "w" * 34  # the writer's token; a redacted log never shows it
ARGS = ("--source", "sample", "--tokenizer", "byte", "--max-file-tokens", "20000",
        "--dataset", "sample")
SLOW = ("--workers", "1", "--batch-size", "2")

# The CLI with short retries, COMMIT_SECONDS from argv[1] (0: a commit at every seal), and
# the Hub's files-a-folder advice from PREP_TEST_FOLDER_FILES when set.
DRIVER = (
    "import os, sys, prep.hub.calls as h, prep.outputs.hf.run as r\n"
    "h.RETRY_ATTEMPTS = 3; h.RETRY_BASE_DELAY = 0.01; r.COMMIT_SECONDS = float(sys.argv[1])\n"
    "r.FOLDER_FILES = int(os.environ.get('PREP_TEST_FOLDER_FILES', r.FOLDER_FILES))\n"
    "from prep.cli.commands import run_prepare; sys.exit(run_prepare(sys.argv[2:]))"
)


def env_for(hub: FakeHub, home: Path, token: str | None = TOKEN, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    env.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"),
                "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1",
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    if token:
        env["HF_TOKEN"] = token
    env.update(extra)
    return env


def argv(commit_seconds: float, *args: object) -> list[str]:
    return [sys.executable, "-c", DRIVER, str(commit_seconds), *map(str, args)]


def publish(env: dict[str, str], *args: object, commit_seconds: float = 60,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv(commit_seconds, *ARGS, *args), env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def spawn(env: dict[str, str], *args: object, commit_seconds: float = 0
          ) -> subprocess.Popen[str]:
    return subprocess.Popen(argv(commit_seconds, *ARGS, *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def killed_when(proc: subprocess.Popen[str], arrived: threading.Event,
                release: threading.Event, what: str) -> str:
    """SIGKILL ``proc`` once the held request ``arrived`` (``what`` it is, for the failure
    message), then let the server drop it; returns the run's stderr."""
    try:
        assert arrived.wait(60), f"{what} never came"
    finally:
        proc.send_signal(signal.SIGKILL)
        err = proc.communicate()[1]
        release.set()
    return err


def prep_cli(env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prep", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def local_reference(root: Path) -> Path:
    """The sample prepared into a local directory: the bytes every Hub publish must hold."""
    out = root / "reference"
    r = subprocess.run([sys.executable, "-m", "prep", "prepare", *ARGS, "--out", str(out)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    return out


def published(hub: FakeHub, path: str = "") -> dict[str, bytes]:
    """The dataset files at the branch head (below ``path``), by name."""
    head = f"{path}/" if path else ""
    return {p[len(head):]: d for p, d in hub.head_files(OUT_REPO).items() if p.startswith(head)}


def same_as_reference(files: dict[str, bytes], reference: Path) -> None:
    """Every shard and the manifest byte-identical to the local run's."""
    ref = dir_bytes(reference)
    shards = {n: d for n, d in ref.items() if n.endswith(".bin")}
    assert shards and {n: files.get(n) for n in shards} == shards
    assert files["_MANIFEST.json"] == ref["_MANIFEST.json"]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def uploaded(hub: FakeHub) -> set[str]:
    """The SHA-256 of every LFS object PUT since the log was cleared."""
    return {r.path.split("/")[-2] for r in hub.requests("PUT", "/lfs/")}


def commits_with_manifest(hub: FakeHub, path: str = "") -> list[bool]:
    """For each commit of the branch, oldest first: whether it holds the manifest."""
    repo = hub.repos[("dataset", OUT_REPO)]
    name = f"{path}/_MANIFEST.json" if path else "_MANIFEST.json"
    return [name in repo.commits[c] for c in hub.history(OUT_REPO)]


def new_repo(hub: FakeHub, writers: Sequence[str] | None = None) -> None:
    """``acme/tokens`` as the Hub creates it (one commit holding ``.gitattributes``)."""
    hub.commit("dataset", OUT_REPO, {".gitattributes": b"*.bin filter=lfs\n"},
               git_files=(".gitattributes",))
    if writers is not None:
        hub.repos[("dataset", OUT_REPO)].writers = set(writers)
