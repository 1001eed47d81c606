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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep import checkpoint as ckpt
from prep.errors import IntegrityError, OutputError, PrepError
from prep.fsio import fsync_dir
from prep.job import Job, StopRequested
from prep.manifest import MANIFEST_NAME, manifest_bytes, read_manifest
from prep.progress import Reporter, silent
from prep.publish import OutputPaths, check_out, hold_lock, out_state, publish, write_failure
from prep.recipe import Recipe, RunOptions
from prep.refresh import check_fresh, recover_swap, swap_in
from prep.resume import check_recipe
from prep.sources import Source, resolve_source

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
    life = _Lifecycle(
        OutputPaths.for_out(opts.out), recipe, opts, typed or {}, stop_requested, argv, reporter
    )
    try:
        return life.run()
    except PrepError:
        raise
    except OSError as e:  # staging creation, the lock info, publishing: not only the job
        raise write_failure(e, life.paths) from e


@dataclass
class _Lifecycle:
    """One invocation: what it was asked, and the decisions about ``DIR`` and staging."""

    paths: OutputPaths
    recipe: Recipe
    opts: RunOptions
    typed: dict[str, Any]
    stop_requested: StopRequested
    argv: list[str] | None
    reporter: Reporter
    t0: float = field(default_factory=time.monotonic)

    def run(self) -> Outcome:
        paths, opts = self.paths, self.opts
        # Refusals that need no lock come first: a refused run leaves no DIR.lock behind.
        check_out(paths, resume=opts.resume, refresh=opts.refresh)
        with hold_lock(paths, opts.wait_lock):
            check_out(paths, resume=opts.resume, refresh=opts.refresh)  # may have changed
            if opts.refresh:
                return self.refresh()
            if out_state(paths.final) == "dataset":  # with --resume: check_out let it pass
                if paths.staging.exists():
                    logger.warning(
                        "%s holds an unfinished refresh; rerun with --refresh to finish it",
                        paths.staging,
                    )
                logger.info("%s is already complete; nothing to do", paths.final)
                return Outcome("already-complete", paths.final)
            return self.publish(self.build())

    def build(
        self, *, source: Source | None = None, refresh: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Bring staging to "ready to publish" (a verified manifest in it); returns the
        manifest."""
        paths, opts = self.paths, self.opts
        if paths.staging.exists():
            if not (opts.resume or opts.refresh):
                raise OutputError(
                    f"{paths.staging} is left over from an interrupted run; rerun with "
                    "--resume to continue it, or delete it to start over",
                    path=paths.staging,
                )
            if (paths.staging / MANIFEST_NAME).exists():
                return _verified_ready(paths.staging, self.typed)
            job = Job.restore(paths, opts, self.typed, self.stop_requested, self.argv)
        else:
            job = Job.start(
                paths,
                self.recipe,
                opts,
                self.stop_requested,
                self.argv,
                source=source,
                refresh=refresh,
            )
        job.reporter = self.reporter
        return job.execute()

    def publish(self, manifest: dict[str, Any], changes: tuple[str, ...] = ()) -> Outcome:
        """Drop the checkpoint and rename staging to ``DIR``, or swap it in over the
        published version (a refresh)."""
        paths = self.paths
        _drop_checkpoint(paths)
        if self.opts.refresh and out_state(paths.final) == "dataset":
            swap_in(paths)
            logger.info(
                "swapped in the new version of %s (previous kept as %s)",
                paths.final,
                paths.previous.name,
            )
        else:
            publish(paths)
            logger.info("published %s", paths.final)
        return Outcome("published", paths.final, manifest, time.monotonic() - self.t0, changes)

    def refresh(self) -> Outcome:
        """Up to date: exit quickly. Otherwise build (or resume building) the new version in
        staging and swap it in; the old version stays in place, untouched, until the swap."""
        paths = self.paths
        recover_swap(paths)
        if out_state(paths.final) != "dataset":  # absent or empty: a first build
            return self.publish(self.build())
        source: Source | None = None
        info: dict[str, Any] | None = None
        changes: tuple[str, ...] = ()
        if not paths.staging.exists():
            source = resolve_source(self.recipe.source, self.opts.token)
            fresh = check_fresh(paths, self.recipe, source, self.opts.token)
            if fresh.unchanged:
                logger.info("%s is up to date", paths.final)
                return Outcome("up-to-date", paths.final, seconds=time.monotonic() - self.t0)
            changes = tuple(fresh.changes)
            logger.info("%s changed: %s", paths.final, "; ".join(changes))
            info = {
                "previous_corpus_manifest_sha256": fresh.previous_corpus_sha256,
                "changes": list(changes),
            }
        else:
            logger.info("continuing the refresh in %s", paths.staging)
        try:
            manifest = self.build(source=source, refresh=info)
        except IntegrityError as e:
            if source is not None:
                raise
            raise IntegrityError(
                f"{e}\n{paths.final} is intact; {paths.staging} is an unfinished refresh that "
                f"cannot continue: delete {paths.staging} and rerun with --refresh to build "
                "the new version from the current source",
                path=e.path,
            ) from e
        if manifest_bytes(manifest) == (paths.final / MANIFEST_NAME).read_bytes():
            logger.info("the rebuilt version is identical; %s is up to date", paths.final)
            shutil.rmtree(paths.staging)
            return Outcome("up-to-date", paths.final, seconds=time.monotonic() - self.t0)
        return self.publish(manifest, changes)


def _verified_ready(staging: Path, typed: dict[str, Any]) -> dict[str, Any]:
    """A staging directory a crash left after its manifest was written: verify it (and
    that typed options agree with the run, as for any resume)."""
    from prep.verify import verify_dataset

    if typed and (staging / ckpt.CHECKPOINT_NAME).exists():
        check_recipe(staging, ckpt.load(staging).recipe, typed)
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
