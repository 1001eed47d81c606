"""Executors: who runs the parts of a partitioned run (``--parts N --executor NAME``).

An executor takes the argv of one ordinary part run (without ``--part``) and the parts, runs
``prep prepare ARGV --part I/N --resume`` for each, somewhere, and returns once every part is
published or raises naming the parts that failed. It schedules nothing of its own beyond
what its engine does: ``local`` runs the parts one after another in this process, ``ray``
runs them as Ray tasks with retries. The merge that follows is the same for every executor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from prep.errors import EXIT_ERROR, EXIT_TEMPFAIL, PrepError, UsageError
from prep.partition import Part, argv_without

if TYPE_CHECKING:
    from prep.merge import MergeOutcome
    from prep.outputs import Output
    from prep.outputs.hf.output import HubSettings


# Runs one ordinary ``prepare`` from its argv and returns its exit code: the CLI's
# ``run_prepare``, passed down so that no executor imports the CLI.
PrepareJob = Callable[[list[str]], int]


class Executor(Protocol):
    def run_parts(
        self, job: PrepareJob, argv: Sequence[str], out: Output, parts: Sequence[Part],
        threads: int | None,
    ) -> None:
        """Run ``job(part_argv(argv, part))`` for every part to completion, ``threads``
        tokenizer threads each (None: the executor's choice); ``out`` is the dataset's
        ``--out``, as the run writes it. Raises ``PrepError`` naming the parts that failed."""


def part_argv(argv: Sequence[str], part: Part) -> list[str]:
    """The command line of one part: the shared options, then ``--part I/N --resume`` (a
    retried or rerun part continues from its checkpoint, or reports itself complete)."""
    return [*argv, "--part", f"{part.index}/{part.count}", "--resume"]


class PartsFailed(PrepError):
    """Some parts did not publish; the published ones are kept and a rerun resumes the rest.
    Exit 75 when every failed part only stopped (resumable), else 1."""

    def __init__(self, codes: dict[str, int]) -> None:
        listed = ", ".join(f"{name} (exit {code})" for name, code in sorted(codes.items()))
        super().__init__(
            f"parts not published: {listed}; their logs say why. Fix the cause and rerun the "
            "same command: published parts are kept and the others resume"
        )
        self.codes = codes
        self.exit_code = (
            EXIT_TEMPFAIL if all(c == EXIT_TEMPFAIL for c in codes.values()) else EXIT_ERROR
        )


EXECUTORS = ("local", "ray")
_DRIVER_OPTIONS = ("--parts", "--executor", "--threads")


def driver_options_removed(argv: Sequence[str]) -> list[str]:
    """A ``--parts`` command line less the driver's options (``--parts``, ``--executor``;
    ``--threads``, which the executor passes to each part): what every part shares."""
    return argv_without(argv, _DRIVER_OPTIONS)


def executor_for(name: str) -> Executor:
    """The executor called ``name`` (``UsageError`` for an unknown one)."""
    if name == "local":
        from prep.executors.local import LocalExecutor

        return LocalExecutor()
    if name == "ray":
        from prep.executors.ray_tasks import RayExecutor

        return RayExecutor()
    raise UsageError(f"--executor {name!r}: choose one of {', '.join(EXECUTORS)}")


def run_partitioned(
    job: PrepareJob, argv: Sequence[str], out: Path | str, count: int, executor: str, *,
    threads: int | None, wait_lock: float, stop: Callable[[], bool],
    staging: Path | None = None, hub: HubSettings | None = None,
) -> MergeOutcome:
    """``--parts N --executor E``: run parts ``0..N-1`` with the executor, then merge them
    into ``out`` (staged in ``staging`` and written as ``hub`` says, as the parts are).
    A part that fails stops before the merge (``PartsFailed``); rerunning the same command
    keeps the published parts and resumes the others. ``stop()`` is the merge's stop
    request (each part polls its own)."""
    from prep.merge import merge
    from prep.outputs import resolve_output

    runner = executor_for(executor)
    target = resolve_output(out, staging, hub)
    runner.run_parts(job, argv, target, [Part(i, count) for i in range(count)], threads)
    return merge(out, wait_lock=wait_lock, threads=threads, argv=list(argv), stop=stop,
                 staging=staging, hub=hub)
