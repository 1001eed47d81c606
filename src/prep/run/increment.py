"""An incremental refresh: the new version continues the published one.

A published dataset is the final state of a stream. When the recipe, the tokenizer and the
output-affecting package versions are unchanged, no shuffle is set, no budget stopped the
published run early, and the source's ordered listing extends the published one (every
published file unchanged and in place, new files only after them), a from-scratch build
over the new listing passes through exactly the published state. So staging starts there:
each split's sealed shards are hard links to the published ones (never opened for writing),
its last shard is a private copy reopened as the open shard, and the stream continues at the
first new file from the published counts and prefix digest. Every reused shard is checked
against the published manifest's SHA-256 before it is trusted. Anything else is a full
rebuild, for the reason :func:`plan_increment` returns.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from prep.errors import IntegrityError
from prep.formats import ShardFormat
from prep.fsio import file_sha256, make_parents
from prep.outputs import Output, Swappable
from prep.recipe import Recipe, RunOptions
from prep.run.committed import RunState, lock_not_checked, make_writers, output_format
from prep.run.inputs import Inputs
from prep.run.resume.replay import base_cursor
from prep.run.start import run_facts, stage, start
from prep.sources import Source, hash_and_check
from prep.state.changes import output_versions, trusted, version_changes
from prep.state.checkpoint import StreamBase
from prep.state.manifest import CONTINUABLE_VERSIONS, Manifest, ManifestFile, SplitSummary
from prep.state.provenance import RefreshNote, read_packages
from prep.state.shards import EMPTY_CHAIN, FileRecord, OpenFile, SplitState
from prep.stream.order import StreamItem, open_stream

logger = logging.getLogger(__name__)


class ReuseRefused(IntegrityError):
    """A published shard does not match its manifest: it cannot be reused."""


@dataclass(frozen=True)
class Increment:
    """The published version a refresh continues, and how much of the listing it covers."""

    manifest: Manifest
    files: int  # the published files: the first ``files`` of the new read order

    def note(self, previous: str | None, changes: tuple[str, ...]) -> RefreshNote:
        """The provenance note of a refresh that continues this version."""
        m = self.manifest
        return RefreshNote(
            previous,
            changes,
            incremental=True,
            reused_files=self.files,
            reused_rows=m.source.rows_visited,
            reused_shards=sum(t.n_files - 1 for t in m.totals.values()),
            reused_tokens=sum(t.n_tokens for t in m.totals.values()),
        )

    def base(self) -> StreamBase:
        m = self.manifest
        s = m.source
        return StreamBase(
            self.files,
            s.rows_visited,
            s.empty_rows_skipped,
            str(s.prefix_sha256),  # plan_increment refuses a manifest without one
            {split: t.n_docs for split, t in m.totals.items()},
            {split: _base_text_bytes(m, split) for split in m.totals},
        )


def _budget_stop(manifest: Manifest, recipe: Recipe) -> str | None:
    if recipe.max_documents is not None and manifest.source.rows_visited >= recipe.max_documents:
        return "--max-documents stopped the published run before the end of its files"
    if recipe.train_tokens is not None and manifest.totals["train"].n_tokens >= recipe.train_tokens:
        return "--train-tokens stopped the published run before the end of its files"
    return None


def _listing_break(manifest: Manifest, source: Source, rehash: bool) -> str | None:
    """Why the source's listing does not extend the published one (None when it does).
    A published file whose fingerprint is unchanged is trusted to hold the published bytes
    (:func:`prep.state.changes.trusted`: its SHA-256 is taken from the manifest, nothing is
    read); any other (one recorded without a fingerprint too), or every one with
    ``rehash``, is hashed and its bytes decide."""
    now = source.files
    paths = {f.path for f in now}
    for i, was in enumerate(manifest.source.files):
        if i >= len(now) or now[i].path != was.path:
            if was.path not in paths:
                return f"{was.path} was removed"
            return f"{now[i].path} was inserted before the end of the published files"
        if now[i].size != was.size:
            return f"{was.path} changed (size {was.size:,} -> {now[i].size:,} bytes)"
    for f, was in zip(now, manifest.source.files, strict=False):
        if not rehash and trusted(was, f.identity()):
            f.sha256 = f.expected_sha256 = was.sha256
            continue
        hash_and_check(source, f)
        if f.sha256 != was.sha256:
            return f"{was.path} changed (its SHA-256 differs)"
    return None


def plan_increment(
    out: Swappable, manifest: Manifest, recipe: Recipe, source: Source, settings: list[str],
    rehash: bool = False,
) -> Increment | str:
    """The published version to continue, or the one-line reason for a full rebuild
    (``settings``: how the tokenizer and recipe differ from the published ones; ``rehash``:
    hash every published file, trusting no fingerprint)."""
    if manifest.version not in CONTINUABLE_VERSIONS:
        return (
            f"the published manifest is {manifest.version}, whose prefix digest cannot be "
            f"continued ({' and '.join(CONTINUABLE_VERSIONS)} can)"
        )
    if manifest.source.prefix_sha256 is None:
        return "the published dataset has no prefix digest (merged from parts)"
    if recipe.shuffle_files or recipe.shuffle_buffer:
        return "--shuffle-files or --shuffle-buffer is set: new rows do not only go at the end"
    if settings:
        return "the tokenizer or recipe changed (" + "; ".join(settings) + ")"
    was = read_packages(out.refresh_base())
    if was is None:
        return "the published _PROVENANCE.json does not say which package versions built it"
    versions = version_changes(was, output_versions())
    if versions:
        return "package versions that decide the output changed (" + "; ".join(versions) + ")"
    reason = _budget_stop(manifest, recipe) or _listing_break(manifest, source, rehash)
    if reason is None and manifest.val_bytes_per_token is not None:
        val = manifest.totals["val"]
        if _text_bytes(val, manifest) is None:
            reason = "the published val split's byte count cannot be recovered exactly"
    return reason or Increment(manifest, len(manifest.source.files))


def _text_tokens(totals: SplitSummary, manifest: Manifest) -> int:
    """A split's tokens of text: its tokens less one separator per document."""
    return totals.n_tokens - (totals.n_docs if manifest.doc_sep_id is not None else 0)


def _text_bytes(val: SplitSummary, manifest: Manifest) -> int | None:
    """The val split's UTF-8 bytes, recovered from β and checked to give it back exactly."""
    beta = manifest.val_bytes_per_token
    text_tokens = _text_tokens(val, manifest)
    if beta is None or text_tokens == 0:
        return 0
    text_bytes = round(beta * text_tokens)
    return text_bytes if text_bytes / text_tokens == beta else None


def _base_text_bytes(manifest: Manifest, split: str) -> int:
    """A split's text bytes as the continued run counts them: val's exactly (they give β);
    train's are not recorded, so only bytes read from now on count."""
    if split != "val":
        return 0
    return _text_bytes(manifest.totals[split], manifest) or 0


def _reuse(final: Path, building: Path, entry: ManifestFile, fmt: ShardFormat,
           link: bool) -> list[tuple[Path, str | None]]:
    """Hard-link (sealed) or copy (to be continued) a published shard and its companions
    into ``building``; returns each file there with the SHA-256 the manifest gives it, for
    :func:`_check_reused` (the linked inode itself is checked, so what is checked is what is
    published)."""
    expected = {entry.name: entry.sha256, **{c.name: c.sha256 for c in entry.companions}}
    placed = []
    make_parents(building, [entry.name])  # the format's split folder (fsynced on creation)
    for name in fmt.shard_files(entry.name):
        src, dst = final / name, building / name
        placed.append((dst, expected.get(name)))
        if link:
            try:
                os.link(src, dst)
                continue
            except OSError:  # no hard links here: a copy is as good, only slower
                pass
        shutil.copyfile(src, dst)
    return placed


def _check_reused(final: Path, placed: list[tuple[Path, str | None]]) -> None:
    """Hash the reused files, several at once (the workers are not started yet, and the
    hashing frees the GIL): ``ReuseRefused`` for the first, in order, that is not as the
    manifest says."""
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        hashes = list(pool.map(file_sha256, (path for path, _ in placed)))
    for (path, want), sha in zip(placed, hashes, strict=True):
        if sha != want:
            listed = f"the manifest's {want[:12]}…" if want else "one the manifest lists"
            raise ReuseRefused(
                f"{final / path.name}: SHA-256 {sha[:12]}… is not {listed}; the published "
                f"version was modified (prep verify {final})",
                path=final / path.name,
            )


def _split_state(
    manifest: Manifest, split: str, sealed: list[ManifestFile], last: ManifestFile
) -> SplitState:
    """The split's committed state at the end of the published stream, ``last`` open."""
    t = manifest.totals[split]
    return SplitState(
        sealed=tuple(
            FileRecord(f.name, f.n_tokens, f.n_docs, f.sha256, f.companions, f.first_doc_at)
            for f in sealed
        ),
        open=OpenFile(last.name, last.n_tokens, last.n_docs, EMPTY_CHAIN,  # reopen's
                      (last.n_tokens,) if last.n_tokens else (),
                      first_doc_at=last.first_doc_at),
        n_tokens=t.n_tokens,
        n_docs=t.n_docs,
        text_bytes=_base_text_bytes(manifest, split),
        text_tokens=_text_tokens(t, manifest),
    )


def start_increment(
    out: Output,
    recipe: Recipe,
    opts: RunOptions,
    inputs: Inputs,
    inc: Increment,
    note: RefreshNote,
    check_lock: Callable[[], None] = lock_not_checked,
) -> tuple[RunState, Iterator[StreamItem]]:
    """Create staging from the published version (see the module docstring) with its first
    checkpoint; returns the run's state and the stream from the first new file. Raises
    ``ReuseRefused`` (staging not created) when a published shard fails its check."""
    source, encoder, m = inputs.source, inputs.encoder, inc.manifest
    vocab = encoder.identity.vocab_size
    fmt = output_format(recipe, encoder.identity)
    base = inc.base()
    files, stream = open_stream(source, recipe, base.files, base.rows_visited)
    writers = make_writers(out.building, recipe, encoder.identity, fmt, out.sealed)
    facts = run_facts(source, note)
    state = RunState(
        out, recipe, opts, source, encoder, fmt, facts, output_versions(), writers, files,
        cursor=base_cursor(base), base=base, check_lock=check_lock,
    )

    def order(f: ManifestFile) -> int:
        parsed = fmt.parse_name(f.name)
        return parsed[1] if parsed else -1

    published = out.refresh_base()

    def populate(building: Path) -> None:
        shards = {split: sorted((f for f in m.files if f.split == split), key=order)
                  for split in writers}
        placed: list[tuple[Path, str | None]] = []
        for *sealed, last in shards.values():
            for entry in sealed:
                placed += _reuse(published, building, entry, fmt, link=True)
            placed += _reuse(published, building, last, fmt, link=False)
        _check_reused(published, placed)
        for split, w in writers.items():
            *sealed, last = shards[split]
            try:
                verified = fmt.continue_sealed(building, last, m, vocab)
            except IntegrityError as e:  # its bytes are the manifest's, yet inconsistent
                raise ReuseRefused(str(e), path=e.path) from e
            w.restore(_split_state(m, split, sealed, last), fmt.reopen(building, verified, vocab))
            w.sync()
        state.save_checkpoint(building)

    stage(state, populate)
    n_sealed = sum(len(w.sealed) for w in writers.values())
    logger.info(
        "refreshing incrementally: reusing %d of %d source files (%s rows) and %d sealed "
        "shards; reading %d new files",
        base.files,
        len(files),
        f"{base.rows_visited:,}",
        n_sealed,
        len(files) - base.files,
    )
    return state, stream


def start_refresh(
    out: Output,
    recipe: Recipe,
    opts: RunOptions,
    inputs: Inputs,
    note: RefreshNote,
    inc: Increment | None,
    check_lock: Callable[[], None] = lock_not_checked,
) -> tuple[RunState, Iterator[StreamItem]]:
    """Create staging for a refresh: continuing the published version (``inc``) or, when
    there is none or one of its shards fails its check, from scratch (``check_lock``: as
    :func:`prep.run.start.start`'s)."""
    if inc is not None:
        try:
            return start_increment(out, recipe, opts, inputs, inc, note, check_lock)
        except ReuseRefused as e:
            reason = f"a published shard cannot be reused: {e}"
            logger.warning("full rebuild: %s", reason)
            note = RefreshNote(note.previous_corpus_manifest_sha256, note.changes, fallback=reason)
    return start(out, recipe, opts, inputs, note, check_lock)
