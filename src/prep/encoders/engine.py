"""Engines: how ids are computed, chosen by ``--engine``; never what they are.

The ids are fixed by the tokenizer file; ``hf`` (Hugging Face ``tokenizers``) is the
reference. ``auto`` (the default) takes the fastest engine that reproduces the file
exactly and otherwise falls back to ``hf`` with one log line saying why. The engine is not
part of the recipe, so a run may resume with another one; it is recorded in
``_PROVENANCE.json``.

The main process chooses, once per run, through :class:`EngineChoice` (``choose_engine``,
which runs the fast engine's probes); each worker process builds the chosen engine from an
:class:`EngineSpec` (``build_encoder``). Nothing outside this module asks which engine it
is: an :class:`EngineSpec` says what the run needs to know (``checked``, ``fast``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import numpy as np

from prep.encoders.byte import BYTE, ByteEncoder
from prep.encoders.flatids import FlatIds
from prep.encoders.gigatoken import ENGINE as GIGATOKEN
from prep.encoders.gigatoken import (
    Declined,
    GigatokenEncoder,
    compact_json,
    load_gigatoken,
    plan,
    planned_json,
)
from prep.encoders.gigatoken import Reference as ReferenceFn
from prep.encoders.hf import HFEncoder, batch_encode, configured
from prep.encoders.memo import ACCEPTED, TokenizerMemo
from prep.encoders.merges import ENGINE as MERGES
from prep.encoders.merges import MergesEncoder, load_merges_engine
from prep.encoders.vocab_bytes import ENGINE as VOCAB_BYTES
from prep.encoders.vocab_bytes import VocabBytesEncoder
from prep.errors import UsageError
from prep.state.identity import TokenizerIdentity

if TYPE_CHECKING:
    from prep.encoders import Encoder
    from prep.encoders.hf import BatchEncode

logger = logging.getLogger(__name__)

PLAN = "gigatoken_plan"  # the memo's fact: gigatoken.plan of the file
ENGINE_JSON = "gigatoken.json"  # kept beside the memo: the compact JSON gigatoken builds from

AUTO = "auto"
HF = "hf"
CHOICES = (AUTO, HF, GIGATOKEN, MERGES)
E = TypeVar("E", GigatokenEncoder, MergesEncoder)


class Engine(Protocol):
    """What computes a run's ids, in a worker or in the main process: the ids of a batch's
    texts (``utf8``: the same texts' UTF-8 bytes) as one flat buffer."""

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds: ...


@dataclass(frozen=True)
class EngineSpec:
    """What a worker needs to build the chosen engine (picklable): ``json_path`` is None
    for the byte tokenizer; ``threads`` sizes the tokenizer's own thread pool."""

    engine: str
    identity: TokenizerIdentity
    json_path: str | None
    threads: int | None = None

    @property
    def checked(self) -> bool:
        """Whether the run-time cross-check applies (an engine other than the reference)."""
        return self.engine not in (HF, BYTE, VOCAB_BYTES)

    @property
    def commit_bound(self) -> bool:
        """Whether the committing thread, not the workers, bounds a run of many workers
        (the fast engine, whose figures ``prep.run.work.sizing`` holds)."""
        return self.engine == GIGATOKEN


class Reference:
    """The ``tokenizers`` reference for a tokenizer.json, loaded on first use (a worker on
    the fast path may never need it)."""

    def __init__(self, json_path: str) -> None:
        self._path = json_path
        self._encode: BatchEncode | None = None

    def __call__(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        if self._encode is None:
            from tokenizers import Tokenizer

            self._encode = batch_encode(configured(Tokenizer.from_file(self._path)))
        encs = self._encode(texts, add_special_tokens=False)
        return FlatIds.of([np.array(e.ids, dtype=np.uint32) for e in encs])

    encode_flat = __call__  # the ``hf`` engine itself, in a worker that builds its own


def build_encoder(spec: EngineSpec) -> Engine:
    """The engine ``spec`` names, in this process."""
    if spec.json_path is None:
        return ByteEncoder(spec.identity)
    if spec.engine == VOCAB_BYTES:
        return VocabBytesEncoder(Path(spec.json_path), spec.identity)
    reference = Reference(spec.json_path)
    if spec.engine == HF:
        return reference
    if spec.engine == MERGES:
        return load_merges_engine(Path(spec.json_path).read_bytes(), reference, probe=False)
    return load_gigatoken(Path(spec.json_path).read_bytes(), reference, probe=False,
                          parallel=(spec.threads or 1) > 1)


def reference_of(engine: Engine) -> ReferenceFn:
    """The reference a checked engine (:attr:`EngineSpec.checked`) falls back to and is
    cross-checked against."""
    if not isinstance(engine, (GigatokenEncoder, MergesEncoder)):
        raise TypeError(f"{type(engine).__name__} is not checked against a reference")
    return engine.reference


def documents_by_engine(engine: Engine) -> dict[str, int]:
    """How many documents each engine has encoded in ``engine`` so far (a checked engine
    routes some to its reference), or an empty dict for an engine that routes none."""
    if isinstance(engine, GigatokenEncoder):
        return dict(engine.documents)
    return {}


def check_engine(requested: str) -> None:
    """Raise ``UsageError`` unless ``requested`` names an engine (the library's check of
    what argparse checks on the command line)."""
    if requested not in CHOICES:
        raise UsageError(f"engine {requested!r}: choose one of {', '.join(CHOICES)}")


def _judged(memo: TokenizerMemo, name: str, build: Callable[[str | None], E]) -> E:
    """``build(verdict)`` under the memo's verdict on engine ``name`` for this file, or
    ``Declined``: a remembered refusal is raised again without building; a first judgment
    (acceptance or the reason of a refusal) is remembered."""
    verdict = memo.verdict(name)
    if verdict is not None and verdict != ACCEPTED:
        raise Declined(verdict)
    try:
        engine = build(verdict)
    except Declined as e:
        if verdict is None:  # a first judgment only: a failed rebuild may be passing
            memo.judged(name, str(e))
        memo.keep()
        raise
    if verdict is None:
        memo.judged(name, ACCEPTED)
    memo.keep()  # writes only what this run added
    return engine


def _gigatoken(encoder: HFEncoder, threads: int) -> GigatokenEncoder:
    """gigatoken for ``encoder``'s file, or ``Declined``. The probes (against the reference,
    which they build) run once per file: their verdict is remembered (``encoder.memo``)."""
    memo = encoder.memo

    def build(verdict: str | None) -> GigatokenEncoder:
        try:
            # The plan (a parse of the file) is trusted from the memo only beside an
            # acceptance.
            steps = (memo.facts.get(PLAN) if verdict == ACCEPTED else None) or plan(encoder.raw)
            # Built from the compact JSON kept beside the memo, as probed: made (and probed)
            # by the first run, then trusted by its SHA-256 in the memo beside the
            # acceptance only.
            built, made = memo.kept(ENGINE_JSON,
                                    lambda: compact_json(planned_json(encoder.raw, steps)),
                                    trusted=verdict == ACCEPTED)
            engine = load_gigatoken(encoder.raw, encoder.encode_flat, probe=made,
                                    parallel=threads > 1, known=steps, built=built)
        except Declined:
            memo.drop(ENGINE_JSON)  # nothing to build from; and no acceptance kept to trust it
            raise
        memo.fact(PLAN, lambda: steps)
        return engine

    return _judged(memo, GIGATOKEN, build)


def _merges(encoder: HFEncoder) -> MergesEncoder:
    """prep's own encoder for ``encoder``'s file, or ``Declined``; probed once per file,
    its verdict remembered as the fast engine's is."""
    return _judged(encoder.memo, MERGES, lambda verdict: load_merges_engine(
        encoder.raw, encoder.encode_flat, probe=verdict is None))


def choose_engine(requested: str, encoder: Encoder, threads: int | None
                  ) -> tuple[EngineSpec, Engine]:
    """Resolve ``--engine`` for the main process's loaded ``encoder``: the spec a worker
    builds the engine from, and the engine itself (built here, so forked workers inherit
    it). ``auto`` falls back to ``hf`` with one log line when the fast engine declines;
    ``gigatoken`` named explicitly raises ``UsageError`` with the reason instead."""
    identity: TokenizerIdentity = encoder.identity
    threads = threads or 1  # per worker: the workers are the parallelism
    if isinstance(encoder, ByteEncoder):
        return EngineSpec(BYTE, identity, None, threads), encoder
    if isinstance(encoder, VocabBytesEncoder):
        if requested != AUTO:
            raise UsageError(
                f"--engine {requested} cannot reproduce {identity.spec}: a byte vocabulary "
                "refuses bytes it lacks, which only prep's own encoder does (tokenizers would "
                "drop them); use --engine auto"
            )
        logger.info("engine: %s (%s is a byte vocabulary; only prep's encoder refuses the "
                    "bytes it lacks)", VOCAB_BYTES, identity.spec)
        return EngineSpec(VOCAB_BYTES, identity, str(encoder.path), threads), encoder
    if not isinstance(encoder, HFEncoder):  # load_encoder makes none other
        raise TypeError(f"no engine computes the ids of a {type(encoder).__name__}")
    json_path = str(encoder.json_path)
    hf = EngineSpec(HF, identity, json_path, threads)
    if requested == HF:
        return hf, encoder
    declined = []
    for name, build in ((GIGATOKEN, lambda: _gigatoken(encoder, threads)),
                        (MERGES, lambda: _merges(encoder))):
        if requested not in (AUTO, name):
            continue
        try:
            engine: Engine = build()
        except Declined as e:
            if requested == name:
                raise UsageError(
                    f"--engine {name} cannot reproduce {identity.spec} exactly: {e}; use "
                    "--engine auto (falls back to hf) or --engine hf"
                ) from e
            declined.append(f"{name} cannot reproduce {identity.spec} exactly: {e}")
            continue
        logger.info("engine: %s (reproduces %s exactly; cross-checked against hf)", name,
                    identity.spec)
        return EngineSpec(name, identity, json_path, threads), engine
    logger.info("engine: hf (%s)", "; ".join(declined))
    return hf, encoder


class EngineChoice:
    """A run's one choice of engine (:func:`choose_engine`, ``--engine`` for the run's
    loaded tokenizer), made once: where the run first asks for it (:meth:`result`, a
    resume), or ahead, in a thread of its own (:meth:`start`, a new run as soon as it has
    its tokenizer): building the fast engine (0.1-0.2 s, most of it holding the GIL) then
    overlaps the run's set-up, which mostly waits on the disk, the network or hashing that
    frees the GIL (staging and its first checkpoint, a bucket's first remote checkpoint, a
    refresh's check of the shards it reuses). :meth:`result` gives what ``choose_engine``
    returned, or raises what it raised, where the run needs the engine; nothing else
    changes."""

    def __init__(self, requested: str, encoder: Encoder, threads: int | None) -> None:
        self._args = (requested, encoder, threads)
        self._outcome: tuple[EngineSpec, Engine] | BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> EngineChoice:
        """Make the choice in a thread of its own, from now; returns this choice."""
        self._thread = threading.Thread(target=self._choose, name="prep-engine", daemon=True)
        self._thread.start()
        return self

    def _choose(self) -> None:
        try:
            self._outcome = choose_engine(*self._args)
        except BaseException as e:  # raised in the run's thread, by result()
            self._outcome = e

    def result(self) -> tuple[EngineSpec, Engine]:
        if self._thread is None:  # not started: chosen here, in the run's thread, once
            if self._outcome is None:
                self._outcome = choose_engine(*self._args)
        else:
            self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        assert self._outcome is not None
        return self._outcome

    def join(self) -> None:
        """Wait for a started choice without taking it (a run that fails before it needs
        the engine: the choice's memo is not left half-written when the process exits)."""
        if self._thread is not None:
            self._thread.join()
