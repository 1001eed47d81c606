"""The run's lifecycle: take the lock, decide what to do with ``DIR`` and its staging
directory (start, resume, refuse, refresh), run the job, publish.

Publishing renames the finished staging directory to ``DIR`` (never replacing one); a
refresh swaps it in atomically instead (see ``prep.refresh``).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prep import checkpoint as ckpt
from prep.errors import IntegrityError, OutputError, PrepError
from prep.fsio import fsync_dir
from prep.job import Job, StopRequested, resolve_source, write_failure
from prep.manifest import MANIFEST_NAME, manifest_bytes, read_manifest
from prep.progress import Reporter, silent
from prep.publish import OutputPaths, hold_lock, publish
from prep.recipe import Recipe, RunOptions
from prep.refresh import check_fresh, recover_swap, swap_in
from prep.resume import recipe_conflicts
from prep.sources import Source

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What a run did: ``status`` is ``published``, ``already-complete`` or
    ``up-to-date``; ``manifest`` is the published one when this run published."""

    status: str
    out: Path
    manifest: dict[str, Any] | None = None
    seconds: float = 0.0
    changes: tuple[str, ...] = ()


def _never() -> bool:
    return False


def run(
    recipe: Recipe,
    opts: RunOptions,
    *,
    typed: dict[str, Any] | None = None,
    stop_requested: StopRequested = _never,
    argv: list[str] | None = None,
    reporter: Reporter = silent,
) -> Outcome:
    """Prepare ``recipe`` into ``opts.out``. ``typed`` holds the recipe settings the user
    typed (on resume they must agree with the checkpoint's recipe).

    Raises ``LockedError`` when another run holds the lock; ``OutputError`` when ``DIR``
    exists (unless resuming or refreshing) or staging is left over without ``--resume``;
    ``IntegrityError`` when staging does not verify; ``InputError`` for bad input;
    ``Interrupted`` after a checkpoint when ``stop_requested()``."""
    paths = OutputPaths.for_out(opts.out)
    try:
        return _run(paths, recipe, opts, typed or {}, stop_requested, argv, reporter)
    except PrepError:
        raise
    except OSError as e:  # staging creation, the lock info, publishing: not only the job
        raise write_failure(e, paths) from e


def _run(
    paths: OutputPaths,
    recipe: Recipe,
    opts: RunOptions,
    typed: dict[str, Any],
    stop_requested: StopRequested,
    argv: list[str] | None,
    reporter: Reporter,
) -> Outcome:
    t0 = time.monotonic()
    with hold_lock(paths, opts.wait_lock):
        if opts.refresh:
            return _refresh(paths, recipe, opts, typed, stop_requested, argv, t0, reporter)
        if paths.final.exists():
            if opts.resume:
                if paths.staging.exists():
                    logger.warning(
                        "%s holds an unfinished refresh; rerun with --refresh to finish it",
                        paths.staging,
                    )
                logger.info("%s is already complete; nothing to do", paths.final)
                return Outcome("already-complete", paths.final)
            raise OutputError(
                f"{paths.final} already exists; prep never overwrites a dataset. Choose "
                "another --out, delete it to rebuild, or use --refresh to update it",
                path=paths.final,
            )
        manifest = _build(paths, recipe, opts, typed, stop_requested, argv, reporter)
        _drop_checkpoint(paths)
        publish(paths)
        logger.info("published %s", paths.final)
        return Outcome("published", paths.final, manifest, time.monotonic() - t0)


def _build(
    paths: OutputPaths,
    recipe: Recipe,
    opts: RunOptions,
    typed: dict[str, Any],
    stop_requested: StopRequested,
    argv: list[str] | None,
    reporter: Reporter,
    *,
    source: Source | None = None,
    refresh: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Bring staging to "ready to publish" (a verified manifest in it); returns the manifest."""
    if paths.staging.exists():
        if not (opts.resume or opts.refresh):
            raise OutputError(
                f"{paths.staging} is left over from an interrupted run; rerun with "
                "--resume to continue it, or delete it to start over",
                path=paths.staging,
            )
        if (paths.staging / MANIFEST_NAME).exists():
            return _verified_ready(paths.staging, typed)
        job = Job.restore(paths, opts, typed, stop_requested, argv)
    else:
        job = Job.start(paths, recipe, opts, stop_requested, argv, source=source, refresh=refresh)
    job.reporter = reporter
    return job.execute()


def _verified_ready(staging: Path, typed: dict[str, Any]) -> dict[str, Any]:
    """A staging directory a crash left after its manifest was written: verify it (and
    that typed options agree with the run, as for any resume)."""
    from prep.verify import verify_dataset

    if typed and (staging / ckpt.CHECKPOINT_NAME).exists():
        conflicts = recipe_conflicts(ckpt.load(staging).recipe, typed)
        if conflicts:
            raise IntegrityError(
                f"--resume of {staging}: options contradict the run being resumed:\n  "
                + "\n  ".join(conflicts)
                + "\nDrop them (the recipe comes from the checkpoint), or use a new --out"
            )
    manifest = read_manifest(staging)
    problems = verify_dataset(staging, check_extra=False)
    if problems:
        raise IntegrityError(
            f"{staging} is ready to publish but does not verify:\n  "
            + "\n  ".join(problems)
            + f"\nDelete {staging} to start over"
        )
    return manifest


def _drop_checkpoint(paths: OutputPaths) -> None:
    with contextlib.suppress(FileNotFoundError):
        (paths.staging / ckpt.CHECKPOINT_NAME).unlink()
    fsync_dir(paths.staging)


def _refresh(
    paths: OutputPaths,
    recipe: Recipe,
    opts: RunOptions,
    typed: dict[str, Any],
    stop_requested: StopRequested,
    argv: list[str] | None,
    t0: float,
    reporter: Reporter,
) -> Outcome:
    """Up to date: exit quickly. Otherwise build (or resume building) the new version in
    staging and swap it in; the old version stays in place, untouched, until the swap."""
    recover_swap(paths)
    if not paths.final.exists():
        manifest = _build(paths, recipe, opts, typed, stop_requested, argv, reporter)
        _drop_checkpoint(paths)
        publish(paths)
        logger.info("published %s", paths.final)
        return Outcome("published", paths.final, manifest, time.monotonic() - t0)
    source: Source | None = None
    info: dict[str, Any] | None = None
    changes: tuple[str, ...] = ()
    if not paths.staging.exists():
        source = resolve_source(recipe, opts.token)
        fresh = check_fresh(paths, recipe, source, opts.token)
        if fresh.unchanged:
            logger.info("%s is up to date", paths.final)
            return Outcome("up-to-date", paths.final, seconds=time.monotonic() - t0)
        changes = tuple(fresh.changes)
        logger.info("%s changed: %s", paths.final, "; ".join(changes))
        info = {
            "previous_corpus_manifest_sha256": fresh.previous_corpus_sha256,
            "changes": list(changes),
        }
    else:
        logger.info("continuing the refresh in %s", paths.staging)
    try:
        manifest = _build(
            paths, recipe, opts, typed, stop_requested, argv, reporter, source=source, refresh=info
        )
    except IntegrityError as e:
        if source is not None:
            raise
        raise IntegrityError(
            f"{e}\n{paths.final} is intact; {paths.staging} is an unfinished refresh that "
            f"cannot continue: delete {paths.staging} and rerun with --refresh to build the "
            "new version from the current source",
            path=e.path,
        ) from e
    if manifest_bytes(manifest) == (paths.final / MANIFEST_NAME).read_bytes():
        logger.info("the rebuilt version is identical; %s is up to date", paths.final)
        shutil.rmtree(paths.staging)
        return Outcome("up-to-date", paths.final, seconds=time.monotonic() - t0)
    _drop_checkpoint(paths)
    swap_in(paths)
    logger.info(
        "swapped in the new version of %s (previous kept as %s)", paths.final, paths.previous.name
    )
    return Outcome("published", paths.final, manifest, time.monotonic() - t0, changes)
