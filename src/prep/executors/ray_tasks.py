"""The ``ray`` executor: each part is a Ray task, retried when its worker or node dies.

It connects to ``RAY_ADDRESS`` when set (a real cluster: run the driver on the head node or
through ``ray job submit``), and otherwise starts a local Ray with this machine's cores.
A task runs the part in the worker's process (``prep.cli.commands.run_prepare``), so a killed worker
or a preempted node loses only what came after the part's last checkpoint: Ray runs the
task again (``max_retries``) and the part resumes. A part that stopped resumably (exit 75:
SIGTERM, a busy lock) raises :class:`PartStopped`, which Ray also retries.

Every node must see the same ``DIR.parts/``: a filesystem they all mount, or, with a bucket
``--out``, the same bucket (no shared filesystem then: each part stages on its node and
uploads). The driver leaves a random token there (:meth:`prep.outputs.Parted.mark_parts`)
and each task checks it before it starts, refusing on a node that does not see it.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Sequence
from types import ModuleType

from prep.errors import EXIT_OK, EXIT_TEMPFAIL, OutputError, UsageError
from prep.executors import PartsFailed, PrepareJob, part_argv
from prep.outputs import Output, resolve_output
from prep.partition import PARTS_SUFFIX, Part

logger = logging.getLogger(__name__)

PART_RETRIES = 3


class PartStopped(Exception):
    """A part exited 75 (stopped, resumable): Ray retries the task."""


class NotShared(Exception):
    """This node does not see the driver's ``DIR.parts/``: not retried."""


def _check_shared(out: str, token: str) -> None:
    if resolve_output(out).parts_mark() != token:
        raise NotShared(
            f"node {socket.gethostname()} does not see {out}{PARTS_SUFFIX} as the driver "
            "wrote it: every Ray node must reach the same --out (a filesystem every node "
            "mounts: NFS, Lustre; or a bucket, with the same endpoint and credentials)"
        )


def run_part_task(job: PrepareJob, argv: list[str], part: Part, out: str, token: str) -> str:
    """The body of one Ray task: check that this node sees the parts root, run the part in
    this process, map its exit code (0: done; 75: raise ``PartStopped`` to be retried; else
    fail)."""
    _check_shared(out, token)
    code = job(part_argv(argv, part))
    if code == EXIT_TEMPFAIL:
        raise PartStopped(f"part {part.name} stopped resumably (exit 75)")
    if code != EXIT_OK:
        raise RuntimeError(f"part {part.name} failed (exit {code})")
    return part.name


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--executor ray needs Ray: pip install 'prep[ray]' (or pip install ray)"
        ) from None
    module: ModuleType = ray  # untyped: its calls are checked by the tests that run it
    return module


class RayExecutor:
    def run_parts(
        self, job: PrepareJob, argv: Sequence[str], out: Output, parts: Sequence[Part],
        threads: int | None,
    ) -> None:
        ray = _ray()
        target = out
        token = secrets.token_hex(16)
        target.mark_parts(token)
        started_here = not ray.is_initialized()
        if started_here:
            if os.environ.get("RAY_ADDRESS"):
                ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=True)
            else:
                ray.init(num_cpus=os.cpu_count(), include_dashboard=False,
                         _node_ip_address="127.0.0.1")
        try:
            cpus = threads or 1
            task = ray.remote(run_part_task).options(
                num_cpus=cpus, max_retries=PART_RETRIES, retry_exceptions=[PartStopped]
            )
            full = [*argv, *part_cores(argv, cpus)]
            refs = {task.remote(job, full, p, str(target), token): p for p in parts}
            failed: dict[str, int] = {}
            for ref, part in refs.items():
                try:
                    ray.get(ref)
                    logger.info("part %s: published", part.name)
                except Exception as e:  # a Ray task error wraps the part's own error
                    logger.error("part %s: %s", part.name, _cause(e))
                    failed[part.name] = EXIT_TEMPFAIL if _is(e, PartStopped) else 1
                    if _is(e, NotShared):
                        raise OutputError(_cause(e), path=str(target)) from None
            if failed:
                raise PartsFailed(failed)
        finally:
            target.mark_parts(None)
            if started_here:
                ray.shutdown()


def part_cores(argv: Sequence[str], cpus: int) -> list[str]:
    """The options that keep a part within the ``cpus`` cores Ray reserved for it: as many
    worker processes with one tokenizer thread each (a part's ``--workers`` defaults to
    every core of the node, so several parts on one node would oversubscribe it), unless
    the user chose ``--workers`` themselves."""
    if any(a == "--workers" or a.startswith("--workers=") for a in argv):
        return ["--threads", str(cpus)]
    return ["--workers", str(cpus), "--threads", "1"]


def _is(e: BaseException, kind: type[BaseException]) -> bool:
    cause = getattr(e, "cause", None)
    return isinstance(e, kind) or isinstance(cause, kind)


def _cause(e: BaseException) -> str:
    cause = getattr(e, "cause", None)
    return str(cause) if cause is not None else str(e).strip().splitlines()[-1]
