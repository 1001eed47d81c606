"""Finish a run: seal the open shards, build the manifest and the provenance (pure), and
write them into staging. A manifest in staging means "ready to publish"."""

from __future__ import annotations

import shutil
import time

from prep.errors import InputError
from prep.partition import Part
from prep.recipe import Recipe
from prep.run.committed import RunState
from prep.run.telemetry import Measurements
from prep.sources import hash_and_check
from prep.state.identity import FileIdentity, SourceIdentity
from prep.state.manifest import (
    Manifest,
    ManifestSource,
    SplitTotals,
    build_manifest,
    listing_sha256,
    write_manifest,
)
from prep.state.parts import PartOf
from prep.state.provenance import Provenance, write_provenance
from prep.stream.order import Cursor, ordered_files
from prep.stream.order import read_order as stream_files


def seal(state: RunState) -> dict[str, SplitTotals]:
    """Seal every split's open shard; returns each split's totals and files."""
    totals: dict[str, SplitTotals] = {}
    for split, w in state.writers.items():
        files = w.finish()
        totals[split] = SplitTotals(w.n_tokens, w.n_docs, w.text_bytes, w.text_tokens, tuple(files))
    return totals


def manifest_source(
    recipe: Recipe, identity: SourceIdentity, read_order: list[str], cursor: Cursor, digest: str
) -> ManifestSource:
    """The manifest's ``source``: the identity with files in read order, and the counts."""
    by_path: dict[str, FileIdentity] = {f.path: f for f in identity.files}
    return ManifestSource(
        kind=identity.kind,
        uri=identity.uri,
        revision=identity.revision,
        text_column=recipe.text_column,
        split_column=recipe.split_column,
        files=tuple(by_path[p] for p in read_order),
        rows_visited=cursor.rows_visited,
        empty_rows_skipped=cursor.empty_rows_skipped,
        prefix_sha256=digest,
    )


def empty_train(cursor: Cursor) -> InputError:
    return InputError(
        f"the train split is empty after {cursor.rows_visited:,} rows "
        f"({cursor.empty_rows_skipped:,} empty): nothing to publish. Check the "
        "source, --text-column, --split-column and --val-fraction"
    )


def provenance(
    state: RunState, totals: dict[str, SplitTotals], measured: Measurements,
) -> Provenance:
    """This run's facts, now (throughput over what this run wrote, not what it reused)."""
    note, seconds = state.facts.refresh, state.elapsed()
    reused = note.reused_tokens if note else 0
    return Provenance(
        started_at=state.facts.started_at,
        finished_at=time.time(),
        active_seconds=seconds,
        resumes=state.facts.resumes,
        tokens=sum(t.n_tokens for t in totals.values()) - reused,
        text_bytes=sum(t.text_bytes for t in totals.values()),
        argv=None if state.opts.argv is None else list(state.opts.argv),
        source_mtimes_ns=state.facts.source_mtimes,
        refresh=note.report(state.cursor.rows_visited, len(state.files), seconds) if note else None,
        engine=measured.engine,
        workers=measured.workers,
        cross_check=None if measured.cross_check is None else measured.cross_check.stats(),
        documents_by_engine=None if measured.cross_check is None
        else dict(sorted(measured.cross_check.by_engine.items())),
        main_cpu_seconds=measured.main_cpu,
        commit_thread_cpu_seconds=measured.commit_thread_cpu,
        main_threads_cpu_seconds=measured.threads_cpu,
        copiers=None if measured.copiers is None else measured.copiers.report(),
    )


def part_of(state: RunState, recipe: Recipe) -> PartOf | None:
    """For a part run, which part of which listing (the whole ordered listing's paths and
    sizes: every part of one run records the same ``listing_sha256``)."""
    if recipe.part is None:
        return None
    part = Part.parse(recipe.part)
    ident = state.source.identity()
    ordered = ordered_files(state.source.files, recipe.shuffle_files, recipe.seed)
    by_path = {f.path: f for f in ident.files}
    listing = [by_path[f.path] for f in ordered]
    return PartOf(part.index, part.count, listing_sha256(ident.kind, ident.revision, listing))


def finish(state: RunState, measured: Measurements) -> Manifest:
    """Seal, hash the source files never reached (they still belong to the identity),
    write ``_PROVENANCE.json`` (with what the run ``measured``) then ``_MANIFEST.json`` into
    staging; returns the manifest.
    An empty train split removes staging and raises ``InputError``."""
    staging, recipe, identity = state.out.staging, state.recipe, state.encoder.identity
    totals = seal(state)
    if totals["train"].n_tokens == 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise empty_train(state.cursor)
    read_order = stream_files(state.source.files, recipe)
    for f in read_order:  # a part's identity is its own files: the others are other parts'
        hash_and_check(state.source, f)
    source = manifest_source(
        recipe,
        state.source.identity(),
        [f.path for f in read_order],
        state.cursor,
        state.prefix_sha256,
    )
    manifest = build_manifest(
        part=part_of(state, recipe),
        recipe=recipe,
        dataset=recipe.dataset or state.out.name,
        tokenizer=identity,
        layout=(
            state.fmt.name,
            state.fmt.dtype_name(identity.vocab_size),
            state.fmt.layout_version(identity.vocab_size),
        ),
        source=source,
        totals=totals,
    )
    write_provenance(staging, provenance(state, totals, measured))
    write_manifest(staging, manifest)  # a manifest in staging means "ready to publish"
    return manifest
