"""``prep train-tokenizer``: the job, from the pinned stream to a published directory.

Two phases, each with checkpoints, over one staging directory (``DIR.incomplete``, under
``DIR.lock``, published by one rename as a dataset is):

1. **Counting the corpus.** The train split of the stream, exactly as ``prepare`` sees it
   (same files, order, empty-row rule and split hash; val documents are written aside and
   never read), is written by a ``prepare`` run of its own into ``DIR.incomplete/corpus``
   with the byte tokenizer in the Megatron layout (each document's length is in its
   ``.idx``). That run brings everything a dataset has: worker processes, checkpoints,
   SIGTERM, resume after SIGKILL with the same bytes, a pinned source (files and SHA-256,
   prefix digest).
2. **Counting pieces** (BPE with ``--pre-tokenizer``, :mod:`prep.tokenizer.counting`): the
   train documents split by the pattern, their distinct pieces counted, with checkpoints.
3. **Merging** (BPE). The trainer (:mod:`prep.tokenizer.bpe`) runs from the corpus; every
   ``--checkpoint-interval`` the merges so far and the sequence they leave
   (:class:`~prep.tokenizer.snapshot.MergeCheckpoint`) are written atomically, so a
   resume continues from them. With a pre-tokenizer, the trainer's documents are the
   distinct pieces, each weighted by its count. The byte strategy reads the corpus's
   distinct bytes instead.

Then the outputs (``tokenizer.json`` or ``byte_vocabulary.json``, ``generation_config.json``
with special tokens, and ``training.json`` last) are written into staging, the corpus and
checkpoint are removed, and staging is renamed to ``DIR``.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prep.api import prepare_outcome
from prep.encoders.vocab_bytes import BYTE_FILE, byte_file
from prep.errors import Interrupted, OutputError, UsageError, never
from prep.formats.megatron import MegatronFormat
from prep.fsio import atomic_write_bytes, fsync_dir
from prep.outputs import Output, resolve_output
from prep.progress import Reporter
from prep.recipe import RunOptions
from prep.sources import canonical_source
from prep.state.manifest import Manifest
from prep.tokenizer import bpe, counting
from prep.tokenizer.files import (
    GENERATION_CONFIG,
    TOKENIZER_FILE,
    generation_config,
    tokenizer_json,
)
from prep.tokenizer.pretokenize import NONE
from prep.tokenizer.record import TRAINING_FILE, training_json
from prep.tokenizer.settings import TrainRecipe
from prep.tokenizer.snapshot import MergeCheckpoint

logger = logging.getLogger(__name__)

RUN_DEFAULTS = RunOptions(out=Path("."))
RECIPE_FILE = "recipe.json"
CORPUS = "corpus"
STEP = 64  # merges between two looks at the clock and at signals


@dataclass(frozen=True)
class TrainOutcome:
    status: str  # "published" or "already-complete"
    out: Path
    ids: int = 0
    merges: int = 0
    documents: int = 0
    text_bytes: int = 0
    seconds: float = 0.0


def recipe_for(typed: dict[str, Any], staging: Path, resume: bool) -> TrainRecipe:
    """The recipe: staging's on a resume (typed settings must agree with it), else the
    typed one, which needs ``--source``."""
    stored = staging / RECIPE_FILE
    if resume and stored.is_file():
        recipe = TrainRecipe.from_json(json.loads(stored.read_text()))
        given = dict(typed)
        if "source" in given:
            given["source"] = canonical_source(given["source"])
        wrong = recipe.differences(given)
        if wrong:
            raise UsageError(
                f"{staging} was started with another recipe ({'; '.join(wrong)}); repeat the "
                f"first command's settings, or delete {staging} to start over"
            )
        return recipe
    if "source" not in typed:
        raise UsageError(
            "--source is required to start: a Parquet file, a directory or glob of them, "
            "hf://datasets/OWNER/NAME, or `sample`"
        )
    return TrainRecipe(**{**typed, "source": canonical_source(typed["source"])})


def train_tokenizer(
    out: Path,
    typed: dict[str, Any],
    run: dict[str, Any],
    *,
    stop: Callable[[], bool] = never,
    reporter: Reporter | None = None,
) -> TrainOutcome:
    """Train into ``out`` (see the module docstring). Raises ``PrepError`` s: ``UsageError``
    for bad settings, ``InputError`` for a source without train text, ``OutputError`` for
    an ``out`` in the way, ``Interrupted`` (exit 75) after a checkpoint when ``stop()``."""
    started = time.monotonic()
    target = resolve_output(out)
    final = Path(str(target))
    resume = bool(run.get("resume"))
    if final.exists():
        if resume and (final / TRAINING_FILE).is_file():
            logger.info("%s is already complete; nothing to do", final)
            return TrainOutcome("already-complete", final)
        raise OutputError(f"{final} already exists; prep never overwrites it. Choose "
                          "another --out or delete it", path=final)
    with target.hold_lock(float(run.get("wait_lock", 0.0)), stop):
        recipe = recipe_for(typed, target.staging, resume)
        _staging(target, recipe, resume)
        staging = target.staging
        if not (staging / TRAINING_FILE).is_file():
            manifest = _count(staging, recipe, run, stop, reporter)
            _learn(staging, recipe, manifest, run, stop)
        summary = _tidy(staging)
        target.publish()
    return TrainOutcome("published", final, *summary,
                        seconds=time.monotonic() - started)


def _staging(target: Output, recipe: TrainRecipe, resume: bool) -> None:
    if target.staging.exists():
        if not resume:
            raise OutputError(
                f"{target.staging} holds an interrupted training; add --resume to continue it, "
                "or delete it to start over", path=target.staging)
        logger.info("resuming %s", target.staging)
        return
    raw = json.dumps(recipe.to_json(), indent=2).encode()
    target.create_staging(lambda d: atomic_write_bytes(d / RECIPE_FILE, raw))


def _count(staging: Path, recipe: TrainRecipe, run: dict[str, Any],
           stop: Callable[[], bool], reporter: Reporter | None) -> Manifest:
    """Phase 1: the train split into ``staging/corpus`` by a prepare run of its own."""
    typed = {"source": recipe.source, "tokenizer": "byte", "format": "megatron",
             "text_column": recipe.text_column, "split_column": recipe.split_column,
             "val_fraction": recipe.val_fraction, "seed": recipe.seed,
             "max_documents": recipe.max_documents, "train_tokens": recipe.train_bytes,
             "dataset": CORPUS}
    passed = ("workers", "batch_size", "checkpoint_interval", "log_interval", "quiet",
              "token", "offline")
    options = {k: run[k] for k in passed if run.get(k) is not None}
    try:
        prepare_outcome(staging / CORPUS, typed, {**options, "resume": True}, stop=stop,
                        reporter=reporter)
    except Interrupted as e:  # its hint names prepare; the command to rerun is this one
        raise Interrupted(f"while counting the corpus, {e.reason} Rerun the same command "
                          "with --resume to continue") from None
    manifest = Manifest.load(staging / CORPUS)
    train = manifest.totals["train"]  # never empty: prepare refuses that
    logger.info("corpus: %s train documents, %s bytes of text", f"{train.n_docs:,}",
                f"{train.n_tokens:,}")
    return manifest


def _shards(staging: Path, manifest: Manifest) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ids, document lengths) of every train shard, in order."""
    fmt, directory = MegatronFormat(), staging / CORPUS
    return [(fmt.map_ids(directory, e, manifest), fmt.doc_lengths(directory, e, manifest))
            for e in manifest.files if e.split == "train"]


def corpus_sequence(shards: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The train documents as one uint32 sequence, each followed by ``bpe.SEP``."""
    total = sum(int(ids.size) + int(lengths.size) for ids, lengths in shards)
    if total > bpe.MAX_POSITIONS:
        raise UsageError(f"{total:,} bytes of train text is past what 32-bit positions hold; "
                         "bound it with --train-bytes")
    out = np.empty(total, dtype=np.uint32)
    at = 0
    for ids, lengths in shards:
        size = int(ids.size) + int(lengths.size)
        part = out[at : at + size]
        keep = np.ones(size, dtype=bool)
        keep[np.cumsum(lengths) + np.arange(lengths.size)] = False
        part[keep] = ids
        part[~keep] = bpe.SEP
        at += size
    return out


def _learn(staging: Path, recipe: TrainRecipe, manifest: Manifest, run: dict[str, Any],
           stop: Callable[[], bool]) -> None:
    """Phase 2 and the outputs (``training.json`` last: its presence means "done")."""
    specials = list(recipe.special_tokens)
    if recipe.method == "byte":
        seen = np.zeros(256, dtype=bool)
        for ids, _ in _shards(staging, manifest):
            seen[np.unique(ids)] = True
        values = [int(b) for b in np.flatnonzero(seen)]
        atomic_write_bytes(staging / BYTE_FILE, byte_file(values, specials))
        learned, merges = len(values), []
    else:
        merges = _merge(staging, recipe, manifest, run, stop)
        atomic_write_bytes(staging / TOKENIZER_FILE,
                           tokenizer_json([(a, b) for a, b, _ in merges], specials,
                                          recipe.pre_tokenizer))
        learned = 256 + len(merges)
    if specials:
        atomic_write_bytes(staging / GENERATION_CONFIG, generation_config(learned))
    atomic_write_bytes(staging / TRAINING_FILE,
                       training_json(recipe, manifest, learned, merges, bpe.IMPLEMENTATION))


def _merge(staging: Path, recipe: TrainRecipe, manifest: Manifest, run: dict[str, Any],
           stop: Callable[[], bool]) -> list[bpe.Merge]:
    """Phase 2 (BPE): from the last checkpoint, or from the corpus."""
    interval = float(run.get("checkpoint_interval") or RUN_DEFAULTS.checkpoint_interval)
    saved = MergeCheckpoint.load(staging)
    merges = [] if saved is None else list(saved.merges)
    sequence: bytes | np.ndarray | None = None
    weights = None
    if recipe.pre_tokenizer != NONE:
        batch = int(run.get("batch_size") or RUN_DEFAULTS.batch_size)
        table = counting.count(staging, _shards(staging, manifest), recipe.pre_tokenizer,
                               batch, interval, stop)
        sequence, weights = table.training_input()
        del table
    if saved is not None:
        sequence = saved.sequence
        logger.info("merging: resumed after %s merges", f"{len(merges):,}")
    elif sequence is None:
        sequence = corpus_sequence(_shards(staging, manifest))
    trainer = bpe.make_trainer(sequence, 256 + len(merges), recipe.min_pair_frequency, weights)
    del sequence, saved  # the trainer holds its own copy for the whole merge phase
    logger.info("merging: the %s trainer, up to %s ids", bpe.IMPLEMENTATION,
                f"{recipe.target:,}")
    want = recipe.target - 256
    last = time.monotonic()
    while len(merges) < want:
        asked = min(STEP, want - len(merges))
        got = trainer.step(asked)
        merges.extend(got)
        if len(got) < asked:
            break
        if stop():
            MergeCheckpoint(tuple(merges), trainer.sequence()).save(staging)
            raise Interrupted(f"stopped after {len(merges):,} merges, checkpointed; rerun "
                              "the same command with --resume to continue")
        if time.monotonic() - last >= interval:
            MergeCheckpoint(tuple(merges), trainer.sequence()).save(staging)
            logger.info("merging: %s merges, checkpointed (last count %s)",
                        f"{len(merges):,}", f"{merges[-1][2]:,}")
            last = time.monotonic()
    return merges


def _tidy(staging: Path) -> tuple[int, int, int, int]:
    """Remove what only training needed (corpus, checkpoints, its lock files); the summary
    (ids, merges, documents, text bytes) from ``training.json``."""
    for entry in staging.iterdir():
        if entry.name in (TOKENIZER_FILE, BYTE_FILE, GENERATION_CONFIG, TRAINING_FILE):
            continue
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    fsync_dir(staging)
    done = json.loads((staging / TRAINING_FILE).read_text())
    return (done["vocabulary"]["size"], len(done.get("merges", [])),
            done["source"]["train_documents"], done["source"]["train_bytes"])
