"""Resume: check staging against its checkpoint and replay the source, reading only, into a
:class:`RestorePlan`; then apply the plan.

Every check in :func:`plan_restore` only reads. A refusal leaves staging byte-for-byte
intact; only :func:`apply_restore`, after every check passed, cuts the open shards back to
their commit point and deletes files the checkpoint does not name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prep.encoders import Encoder
from prep.errors import IntegrityError, lost_file
from prep.formats import ShardFormat, VerifiedOpen
from prep.formats.base import dataset_files
from prep.fsio import file_sha256, fsync_all, fsync_dir, stray_temps
from prep.outputs import Output
from prep.procs.pool import default_workers
from prep.recipe import Recipe, RunOptions
from prep.run.committed import RunState, lock_not_checked, make_writers, output_format
from prep.run.inputs import Inputs, pinned_encoder, pinned_source, recorded
from prep.run.resume.claims import (
    check_budgets,
    check_cuts,
    check_finished,
    check_records,
    check_replayed,
    check_source_cuts,
    shards_of,
    wanted_docs,
)
from prep.run.resume.replay import replay, stream_rows
from prep.sources import Source, SourceFile, arm_expected, hash_and_check
from prep.state import checkpoint as ckpt
from prep.state.changes import (
    listing_changes,
    output_versions,
    recipe_conflicts,
    tokenizer_change,
    version_changes,
)
from prep.state.checkpoint import Checkpoint, StreamBase
from prep.state.identity import TokenizerIdentity
from prep.stream.order import Cursor, Preparer, StreamItem, open_stream, read_order

logger = logging.getLogger(__name__)

StopRequested = Callable[[], bool]


@dataclass
class RestorePlan:
    """A checked staging directory and how to continue it: nothing was changed yet."""

    checkpoint: Checkpoint
    inputs: Inputs
    fmt: ShardFormat  # the checkpoint's --format/--dtype
    versions: dict[str, str]
    opened: dict[str, VerifiedOpen | None]  # per split, the open shard's checked prefix
    files: list[SourceFile]  # read order
    stream: Iterator[StreamItem] | None  # after the committed rows; None when finished
    cursor: Cursor
    stray: list[Path]  # written after the checkpoint: deleted when applied
    seconds: float


def check_recipe(staging: Path, saved: Recipe, typed: dict[str, Any]) -> None:
    """Refuse typed options that contradict the run being resumed, listing each."""
    conflicts = recipe_conflicts(saved, typed)
    if conflicts:
        raise IntegrityError(
            f"--resume of {staging}: options contradict the run being resumed:\n  "
            + "\n  ".join(conflicts)
            + "\nDrop them (the recipe comes from the checkpoint), or use a new --out"
        )


def check_source(staging: Path, cp: Checkpoint, source: Source) -> None:
    """Refuse a source whose listing changed, or whose unread files were modified (they have
    no recorded hash yet: the source's own evidence decides). Arms the per-file hash checks
    of the files already read (:func:`prep.sources.arm_expected`)."""
    diffs = listing_changes(cp.source, source.identity())
    if diffs:
        raise IntegrityError(
            f"--resume of {staging}: the source changed since the run started:\n  "
            + "\n  ".join(diffs)
            + "\nRestore the original files, or start a new run with a new --out"
        )
    first, _ = StreamBase.start(cp.progress.base)  # a refresh's published files: not read
    reused = read_order(source.files, cp.recipe)[:first]
    touched = arm_expected(
        source, cp.source, cp.run.source_mtimes, frozenset(f.path for f in reused)
    )
    if touched:
        raise IntegrityError(
            f"--resume of {staging}: source files not yet read were modified since the run "
            f"started (mtime changed): {', '.join(touched[:5])}"
            + (f" and {len(touched) - 5} more" if len(touched) > 5 else "")
            + ". Restore them, or start a new run with a new --out"
        )


def check_tokenizer(staging: Path, cp: Checkpoint, identity: TokenizerIdentity) -> None:
    change = tokenizer_change(cp.recipe.tokenizer, cp.tokenizer, identity)
    if change:
        raise IntegrityError(
            f"--resume of {staging}: {change}, or start a new run with a new --out"
        )


def check_versions(staging: Path, cp: Checkpoint, now: dict[str, str], allow: bool) -> None:
    diffs = version_changes(cp.versions, now)
    if diffs and not allow:
        raise IntegrityError(
            f"--resume of {staging}: installed versions differ from the run's "
            f"({'; '.join(diffs)}); they can change the output. Reinstall those versions, "
            "or pass --allow-version-change to accept the risk"
        )


@dataclass
class CheckedShards:
    """What :func:`check_shards` found: per split, the open shard's checked prefix and the
    length of the split's last document (None when the shards cannot tell it)."""

    opened: dict[str, VerifiedOpen | None]
    last_doc: dict[str, int | None]


def check_shards(
    staging: Path, cp: Checkpoint, fmt: ShardFormat, encoder: Encoder
) -> CheckedShards:
    """Check every sealed shard's SHA-256 and layout and each open shard's committed
    prefix, and what the shards say about the checkpoint's claims (``prep.run.resume.claims``).
    Raises ``IntegrityError`` naming the first file that disagrees; reads only."""
    vocab, sep = encoder.identity.vocab_size, encoder.identity.doc_sep_id
    recipe, exclusive = cp.recipe, encoder.sep_exclusive
    checked = CheckedShards({}, {})
    for split, state in cp.splits.items():
        fixed = recipe.pack == "fixed"
        check_records(staging, split, state, fmt, sep, recipe.max_file_tokens, fixed)
        scans = []
        for rec in state.sealed:
            _require_sealed(staging, staging / rec.name)
            scans.append(fmt.check_sealed(staging, rec.name, rec.n_tokens, rec.sha256, vocab, sep))
            for c in rec.companions:
                _check_sealed(staging, staging / c.name, c.sha256)
        op, verified = state.open, None
        if op is not None:
            verified = fmt.check_open(staging, op, vocab, sep)
            scans.append(verified.scan)
        files = [replace(f, scan=s) for f, s in zip(shards_of(state), scans, strict=True)]
        append = recipe.sep_position == "append"
        last = check_cuts(staging, files, sep, exclusive, append, recipe.max_file_tokens,
                          fixed)
        checked.opened[split], checked.last_doc[split] = verified, last
    return checked


def source_lengths(encoder: Encoder, texts: dict[tuple[str, int], str]
                   ) -> dict[tuple[str, int], int]:
    """Each document's length in the shards (its ids, and its separator if any), by the
    checkpoint's tokenizer."""
    keys = list(texts)
    docs = [texts[k] for k in keys]
    ids = encoder.encode_batch(docs, [d.encode() for d in docs]) if docs else []
    sep = int(encoder.identity.doc_sep_id is not None)
    return {k: int(a.size) + sep for k, a in zip(keys, ids, strict=True)}


def _require_sealed(staging: Path, path: Path) -> None:
    if not path.is_file():
        raise lost_file(path, "is missing but the checkpoint lists it as sealed", staging)


def _check_sealed(staging: Path, path: Path, sha256: str) -> None:
    _require_sealed(staging, path)
    sha = file_sha256(path)
    if sha != sha256:
        raise IntegrityError(
            f"{path}: SHA-256 {sha[:12]}… is not the checkpoint's {sha256[:12]}…; "
            f"the file was modified after it was sealed. Delete {staging} to start "
            "over",
            path=path,
        )


def unnamed_files(staging: Path, cp: Checkpoint, fmt: ShardFormat) -> list[Path]:
    """Files in staging written after the checkpoint: shard files it does not name, and
    temporary files of interrupted atomic writes."""
    named = {f for state in cp.splits.values() for n in state.names() for f in fmt.shard_files(n)}
    stray = [staging / n for n in dataset_files(staging, fmt)
             if fmt.owns_file(n) and n not in named]
    temps = [t for d in (staging, *(staging / f for f in fmt.folders)) for t in stray_temps(d)]
    return sorted(stray + temps)


def plan_restore(
    out: Output,
    opts: RunOptions,
    typed: dict[str, Any],
    stop_requested: StopRequested,
) -> RestorePlan:
    """Check staging against its checkpoint and replay the source, changing nothing."""
    t0 = time.monotonic()
    staging = out.staging
    cp = recorded(ckpt.load(staging))
    check_recipe(staging, cp.recipe, typed)
    check_budgets(staging, cp)
    source = pinned_source(cp, opts)
    check_source(staging, cp, source)
    encoder = pinned_encoder(cp, opts)
    check_tokenizer(staging, cp, encoder.identity)
    versions = output_versions()
    check_versions(staging, cp, versions, opts.allow_version_change)
    inputs = Inputs(source, encoder)
    fmt = output_format(cp.recipe, encoder.identity)
    shards = check_shards(staging, cp, fmt, encoder)
    base = cp.progress.base  # a continued stream opens after the published files
    files, stream = open_stream(source, cp.recipe, *StreamBase.start(base))
    parallel = None
    if cp.recipe.shuffle_buffer == 0:
        parallel = (source, files, opts.workers or default_workers())
    preparer = Preparer(cp.recipe, files)
    identity = encoder.identity
    # Where separators cannot tell documents apart, the few lengths the claims need are
    # tokenized from the replayed texts.
    told = identity.doc_sep_id is not None and encoder.sep_exclusive
    wanted = {} if told else wanted_docs(cp)
    # A finished stream is replayed too: its "finished" is a claim like any other.
    cursor, counts = replay(stream, preparer, cp, stop_requested, str(out), parallel, wanted)
    check_replayed(staging, cp, counts)
    last_train = shards.last_doc["train"]
    if wanted:
        last_train = check_source_cuts(staging, cp, source_lengths(encoder, counts.texts))
    if cp.progress.finished:
        rows = stream_rows(source, files, base)
        check_finished(staging, cp, counts, rows, last_train)
    live = None if cp.progress.finished else stream
    cursor.empty_rows_skipped = cp.progress.empty_rows_skipped
    # Files the reader had hashed ahead of the committed rows, which the replay did not
    # reach: check them too while staging is still untouched.
    for f in source.files:
        if f.sha256 is None and f.expected_sha256 is not None:
            hash_and_check(source, f)
    stray = unnamed_files(staging, cp, fmt)
    return RestorePlan(
        cp, inputs, fmt, versions, shards.opened, files, live, cursor, stray,
        time.monotonic() - t0,
    )


def apply_restore(plan: RestorePlan, out: Output, opts: RunOptions,
                  check_lock: Callable[[], None] = lock_not_checked) -> RunState:
    """Change staging as the plan says (delete stray files, cut the open shards back to
    their commit point) and return the run's state (``check_lock``: as
    :func:`prep.run.start.start`'s). Call only with a plan from :func:`plan_restore` for
    the same staging."""
    cp, staging, fmt = plan.checkpoint, out.staging, plan.fmt
    for extra in plan.stray:
        logger.info("removing %s (written after the last checkpoint)",
                    extra.relative_to(staging))
        extra.unlink()
    fsync_all([staging / f for f in fmt.folders if (staging / f).is_dir()])
    identity = plan.inputs.encoder.identity
    finished = cp.progress.finished
    # A finished run commits nothing more: the seals of its open shards at finishing are
    # not told to the output (its publish sends what staging holds), as they never were.
    writers = make_writers(staging, cp.recipe, identity, fmt, None if finished else out.sealed)
    for split, w in writers.items():
        verified = plan.opened.get(split)
        shard = None if verified is None else fmt.reopen(staging, verified, identity.vocab_size)
        w.restore(cp.splits[split], shard)
    fsync_dir(staging)
    logger.info(
        "resuming %s at row %s (%s docs; train %s tokens, val %s tokens); verified and "
        "replayed in %.2f s",
        staging,
        f"{cp.progress.rows_visited:,}",
        f"{cp.progress.docs_written:,}",
        f"{cp.splits['train'].n_tokens:,}",
        f"{cp.splits['val'].n_tokens:,}",
        plan.seconds,
    )
    return RunState(
        out=out,
        recipe=cp.recipe,
        opts=opts,
        source=plan.inputs.source,
        encoder=plan.inputs.encoder,
        fmt=fmt,
        facts=replace(cp.run, resumes=cp.run.resumes + 1),
        versions=plan.versions,
        writers=writers,
        files=plan.files,
        cursor=plan.cursor,
        finished=finished,
        fresh=False,
        final_digest=cp.progress.prefix_sha256 if finished else None,
        base=cp.progress.base,
        check_lock=check_lock,
    )
