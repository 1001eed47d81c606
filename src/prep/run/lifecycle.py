"""The run's lifecycle: take the lock, decide what to do with the output and its staging
directory (start, resume, refuse, refresh), run the job, publish.

What an output is (a directory, a mount point) and how it publishes, recovers and swaps a
refresh in is :mod:`prep.outputs`'s; this module only sequences it.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prep.errors import (
    IntegrityError,
    Interrupted,
    MissingRecipe,
    OutputError,
    PrepError,
    never,
    os_failure,
)
from prep.fsio import fsync_dir
from prep.outputs import ABSENT, DATASET, EMPTY, HeldLock, Output, Seen
from prep.progress import Reporter, silent
from prep.readers.verify import verify_dataset
from prep.recipe import REQUIRED, Recipe, RunOptions
from prep.run.freshness import check_complete, check_fresh
from prep.run.increment import Increment, plan_increment, start_refresh
from prep.run.inputs import Inputs, fresh_inputs, recorded
from prep.run.loop import StopRequested, execute
from prep.run.resume.restore import apply_restore, check_recipe, plan_restore
from prep.run.start import start
from prep.sources import Source, resolve_source
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME, Manifest, read_manifest
from prep.state.provenance import RefreshNote, read_active_seconds

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What a run did: ``status`` is ``published``, ``already-complete`` or
    ``up-to-date``; ``manifest`` is the published one when this run published."""

    status: str
    out: Path | str
    manifest: Manifest | None = None
    seconds: float = 0.0
    changes: tuple[str, ...] = ()
    active_seconds: float | None = None  # over the run and its resumes (a publish's)


def run(
    recipe: Recipe | None,
    opts: RunOptions,
    out: Output,
    *,
    typed: dict[str, Any] | None = None,
    stop_requested: StopRequested = never,
    reporter: Reporter = silent,
) -> Outcome:
    """Prepare ``recipe`` into ``out`` (``opts.out`` resolved with its staging, and the
    recipe's format checked, by :func:`prep.api.prepare_outcome`). ``typed`` holds the
    recipe settings the user typed (on resume they must agree with the checkpoint's recipe,
    or with the manifest of a complete ``DIR``). ``recipe`` is None when the user typed no
    complete recipe: then only a resume can proceed, never a fresh start.

    Raises ``LockedError`` when another run holds the lock; ``OutputError`` when ``DIR``
    exists (unless resuming or refreshing) or staging is left over without ``--resume``;
    ``IntegrityError`` when staging does not verify or typed options contradict the run;
    ``MissingRecipe`` when a fresh start or a refresh needs a recipe and none was typed;
    ``InputError`` for bad input; ``Interrupted`` after a checkpoint when
    ``stop_requested()``."""
    life = _Lifecycle(out, recipe, opts, typed or {}, stop_requested, reporter)
    try:
        return life.run()
    except PrepError:
        raise
    except OSError as e:  # staging creation, the lock info, publishing: not only the job
        raise os_failure(e, str(life.out), life.out.staging) from e


@dataclass
class _Lifecycle:
    """One invocation: what it was asked, and the decisions about the output and staging."""

    out: Output
    typed_recipe: Recipe | None
    opts: RunOptions
    typed: dict[str, Any]
    stop_requested: StopRequested
    reporter: Reporter
    t0: float = field(default_factory=time.monotonic)
    early: Inputs | None = None  # a fresh start's inputs, resolved before the lock
    early_source: Source | None = None  # a refresh's source, resolved before the lock
    held: HeldLock | None = None
    seen: Seen = field(init=False)  # one look before the lock, one under it: passed on

    def run(self) -> Outcome:
        out, opts = self.out, self.opts
        # Checks that need no lock come first: a refused run leaves no lock file behind.
        out.check_options(resume=opts.resume, refresh=opts.refresh)
        self.seen = out.state()
        out.check_out(self.seen, resume=opts.resume, refresh=opts.refresh)
        self.resolve_early()
        with out.hold_lock(opts.wait_lock, self.stop_requested) as self.held:
            self.seen = out.recover(out.state())  # what a kill during a publish left
            out.check_out(self.seen, resume=opts.resume, refresh=opts.refresh)  # changed?
            if opts.refresh:
                return self.refresh()
            if self.seen.holds is DATASET:  # with --resume: check_out let it pass
                check_complete(out, self.typed, self.opts.token, self.opts.offline)
                if out.staging.exists():
                    logger.warning(
                        "%s holds an unfinished refresh; rerun with --refresh to finish it",
                        out.staging,
                    )
                logger.info("%s is already complete; nothing to do", out)
                return Outcome("already-complete", out.location)
            return self.publish(self.build())

    def resolve_early(self) -> None:
        """Before the lock: a fresh start's source and tokenizer (a refresh's source), so a
        missing file, a bad tokenizer or a missing recipe is refused without creating the
        lock file. A resume resolves nothing here: its checkpoint pins what it reads."""
        if self.seen.staged:
            return
        if self.seen.holds in (ABSENT, EMPTY):
            self.early = fresh_inputs(self.recipe, self.opts)
        elif self.seen.holds is DATASET and self.opts.refresh:
            self.early_source = resolve_source(
                self.recipe.source, self.opts.token, offline=self.opts.offline
            )

    @property
    def recipe(self) -> Recipe:
        """The typed recipe, for a fresh start or a refresh's comparison; refused when the
        user did not type one (a bare ``--resume`` must never start something else)."""
        if self.typed_recipe is not None:
            return self.typed_recipe
        what = " and ".join(f"--{n}" for n in REQUIRED if n not in self.typed)
        what += " were" if " and " in what else " was"
        out = self.out
        if self.seen.holds is DATASET:  # only a refresh gets here with the dataset complete
            why = (
                f"--refresh of {out}: {what} not typed; a refresh compares the typed "
                "recipe with the published one. Type the recipe in full (--source, "
                "--tokenizer and the options the dataset was built with)"
            )
        else:
            why = (
                f"nothing to resume at {out}: neither it nor {out.staging.name} "
                "exists (a run stopped before its first checkpoint leaves nothing), and "
                f"{what} not typed, so there is no recipe to start from. Rerun the "
                "original command with --source, --tokenizer and its other options "
                "(--resume may stay)"
            )
        raise MissingRecipe(why, path=str(out))

    def build(
        self,
        *,
        source: Source | None = None,
        refresh: RefreshNote | None = None,
        increment: Increment | None = None,
    ) -> Manifest:
        """Bring staging to "ready to publish" (a verified manifest in it); returns the
        manifest."""
        out, opts = self.out, self.opts
        if self.seen.staged:
            if not (opts.resume or opts.refresh):
                raise OutputError(
                    f"{out.staging if out.staging.exists() else out} is left over from an "
                    "interrupted run; rerun with --resume to continue it, or delete it to "
                    "start over",
                    path=out.staging,
                )
            out.localize()
            if (out.staging / MANIFEST_NAME).exists():
                return self.verified_ready()
            plan = plan_restore(out, opts, self.typed, self.stop_requested)
            state, stream = apply_restore(plan, out, opts, self.check_lock), plan.stream
        else:
            inputs = self.early or fresh_inputs(self.recipe, opts, source)
            if refresh is None:
                state, stream = start(out, self.recipe, opts, inputs, None, self.check_lock)
            else:
                state, stream = start_refresh(out, self.recipe, opts, inputs, refresh, increment,
                                              self.check_lock)
        try:
            return execute(state, stream, self.stop_requested, self.reporter)
        except BaseException as e:
            out.settle(graceful=isinstance(e, Interrupted))
            raise

    def check_lock(self) -> None:
        """Raise once the lock this invocation holds is no longer its own (each commit
        checks)."""
        if self.held is not None:
            self.held.check()

    def verified_ready(self) -> Manifest:
        """A staging directory a crash left after its manifest was written: verify it, and
        that typed options agree with the run (its checkpoint's recipe, or once that is
        dropped, its manifest), as for any resume."""
        staging, opts = self.out.staging, self.opts
        if (staging / ckpt.CHECKPOINT_NAME).exists():
            if self.typed:
                check_recipe(staging, recorded(ckpt.load(staging)).recipe, self.typed)
        else:
            check_complete(self.out, self.typed, opts.token, opts.offline, staged=True)
        manifest = read_manifest(staging)
        problems = verify_dataset(staging, check_extra=False)
        if problems:
            raise IntegrityError(
                f"{staging} is ready to publish but does not verify:\n  "
                + "\n  ".join(problems)
                + f"\nDelete {staging} to start over"
            )
        return manifest

    def publish(self, manifest: Manifest, changes: tuple[str, ...] = ()) -> Outcome:
        """Drop the checkpoint and publish staging, or swap it in over the published
        version (a refresh)."""
        out = self.out
        if self.held is not None:
            self.held.check()
        _drop_checkpoint(out)
        active = read_active_seconds(out.staging)
        if self.opts.refresh and self.seen.holds is DATASET:
            out.swap_in()
        else:
            out.publish()
        seconds = time.monotonic() - self.t0
        return Outcome("published", out.location, manifest, seconds, changes, active)

    def refresh(self) -> Outcome:
        """Up to date: exit quickly. Otherwise build (or resume building) the new version in
        staging and swap it in; the old version stays in place, untouched, until the swap."""
        out = self.out
        self.seen = out.recover_swap(self.seen)
        if self.seen.holds is not DATASET:  # absent or empty: a first build
            return self.publish(self.build())
        plan = _RefreshPlan()
        if not self.seen.staged:
            found = _plan_refresh(out, self.recipe, self.opts, self.early_source)
            if found is None:
                return Outcome("up-to-date", out.location, seconds=time.monotonic() - self.t0)
            plan = found
        else:
            logger.info("continuing the refresh in %s", out.staging)
        source, note, inc, changes = plan.source, plan.note, plan.increment, plan.changes
        try:
            manifest = self.build(source=source, refresh=note, increment=inc)
        except IntegrityError as e:
            if source is not None:
                raise
            raise e.with_hint(
                f"{out} is intact; {out.staging} is an unfinished refresh that "
                f"cannot continue: delete {out.staging} and rerun with --refresh to build "
                "the new version from the current source"
            ) from e
        if manifest.to_bytes() == (out.refresh_base() / MANIFEST_NAME).read_bytes():
            logger.info("the rebuilt version is identical; %s is up to date", out)
            shutil.rmtree(out.staging)
            return Outcome("up-to-date", out.location, seconds=time.monotonic() - self.t0)
        return self.publish(manifest, changes)


@dataclass(frozen=True)
class _RefreshPlan:
    """How a refresh builds its new version: from ``source`` (None: a refresh that continues
    in staging reads its checkpoint's), continuing the published one (``increment``) or in
    full, and the changes that made it necessary."""

    source: Source | None = None
    note: RefreshNote | None = None
    increment: Increment | None = None
    changes: tuple[str, ...] = ()


def _plan_refresh(out: Output, recipe: Recipe, opts: RunOptions,
                  early_source: Source | None) -> _RefreshPlan | None:
    """What changed since the published version, and how to build the new one; None when it
    is up to date (logged). Raises ``OutputError`` when the output cannot swap a version in."""
    source = early_source or resolve_source(recipe.source, opts.token, offline=opts.offline)
    fresh = check_fresh(out, recipe, source, opts.token, opts.offline, opts.rehash)
    if fresh.unchanged:
        logger.info("%s is up to date", out)
        return None
    changes = tuple(fresh.changes)
    logger.info("%s changed: %s", out, "; ".join(changes))
    out.check_swap()
    plan = plan_increment(out, fresh.manifest, recipe, source, fresh.settings, opts.rehash)
    if isinstance(plan, Increment):
        return _RefreshPlan(source, plan.note(fresh.previous_corpus_sha256, changes), plan,
                            changes)
    logger.info("full rebuild: %s", plan)
    return _RefreshPlan(source, RefreshNote(fresh.previous_corpus_sha256, changes,
                                            fallback=plan), None, changes)


def _drop_checkpoint(out: Output) -> None:
    with contextlib.suppress(FileNotFoundError):
        (out.staging / ckpt.CHECKPOINT_NAME).unlink()
    fsync_dir(out.staging)
