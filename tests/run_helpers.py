"""Runs driven through ``prep.run`` directly (no CLI): a fresh start, a number of committed
batches, and a stop that leaves staging as a kill would (shards open, written past the last
checkpoint)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from conftest import make_corpus, numbered_docs

from prep.formats import ShardFormat, get_format
from prep.outputs import LocalDir, resolve_output
from prep.recipe import Recipe, RunOptions
from prep.run.committed import RunState
from prep.run.inputs import fresh_inputs
from prep.run.loop import commit_batch
from prep.run.resume.claims import Shard, shards_of
from prep.run.start import start
from prep.run.work.tokenize import laid_or_ids, tokenize
from prep.stream.order import Preparer, StreamItem, batches
from prep.stream.writer import SplitWriter

FMT = get_format()
BATCH = 16


@dataclass
class Setup:
    recipe: Recipe
    opts: RunOptions
    paths: LocalDir


def setup(root: Path, texts: list[str] | None = None, name: str = "out") -> Setup:
    """A two-file byte-tokenizer corpus with small shards (rollovers every few batches)."""
    docs = texts if texts is not None else numbered_docs(240)
    src = make_corpus(root / f"{name}-src", [docs[: len(docs) // 2], docs[len(docs) // 2 :]])
    recipe = Recipe(
        source=str(src), tokenizer="byte", doc_sep_id=0, max_file_tokens=700, val_fraction=0.2
    )
    opts = RunOptions(out=root / name, batch_size=BATCH)
    return Setup(recipe, opts, resolve_output(opts.out))


def started(s: Setup) -> tuple[RunState, Iterator[StreamItem]]:
    return start(s.paths, s.recipe, s.opts, fresh_inputs(s.recipe, s.opts))


def commit(state: RunState, stream: Iterator[StreamItem], n: int) -> None:
    """Commit ``n`` batches of ``stream`` as the loop does (no checkpoint)."""
    it = batches(stream, Preparer(state.recipe, state.files), BATCH)
    for _ in range(n):
        batch = next(it)
        ids = tokenize(state.encoder, batch)
        commit_batch(state, batch, laid_or_ids(batch, ids, state.encoder.identity,
                                               state.recipe))
        for w in state.writers.values():
            w.flush()


def killed(s: Setup, committed: int = 4, after: int = 3) -> None:
    """``committed`` batches checkpointed, ``after`` more written but never committed, then
    the process "dies": files closed, nothing sealed, staging left as it is."""
    state, stream = started(s)
    commit(state, stream, committed)
    state.checkpoint()
    commit(state, stream, after)
    state.close()


def tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def checked_shards(directory: Path, fmt: ShardFormat, lengths: list[int], limit: int,
                   append: bool, fixed: bool = False) -> list[Shard]:
    """Documents of ``lengths`` ids (document k's all k + 1, separator 0) written by a real
    writer at ``limit`` (``--pack fixed`` when ``fixed``), each file as resume checks it:
    sealed files whole, the open one's committed prefix, with what the check saw."""
    w = SplitWriter(directory, fmt, "train", 256, 0, append, limit, fixed=fixed)
    w.start()
    for k, n in enumerate(lengths):
        w.add(np.full(n, k + 1, dtype=np.uint32), n)
    w.sync()
    state = w.state()
    w.close()
    scans = [fmt.check_sealed(directory, r.name, r.n_tokens, r.sha256, 256, 0)
             for r in state.sealed]
    if state.open is None:
        raise AssertionError("a writer's state always has an open file")
    scans.append(fmt.check_open(directory, state.open, 256, 0).scan)
    return [replace(f, scan=s) for f, s in zip(shards_of(state), scans, strict=True)]
