"""Encoders: text to token ids, behind one small protocol.

An :class:`Encoder` has an ``identity`` (what the manifest and checkpoint record),
``encode_batch(texts, utf8) -> list of numpy id arrays`` and the hot path's
``encode_flat(texts, utf8) -> FlatIds`` (:class:`FlatEncoder`, what every engine a worker
runs has): ids leave an encoder as numpy buffers, never Python lists, so a batch can cross
a process boundary cheaply. One module per kind of tokenizer and per engine
(:mod:`~prep.encoders.byte`, :mod:`~prep.encoders.vocab_bytes`, :mod:`~prep.encoders.hf`,
:mod:`~prep.encoders.gigatoken`).
Two choices are made here and nowhere else: :func:`load_encoder` picks the encoder for
``--tokenizer`` (the byte tokenizer, a trained byte vocabulary, a ``tokenizer.json``), and
:mod:`~prep.encoders.engine` picks the engine that computes its ids for ``--engine``, once
per run (``EngineChoice``), which each worker then builds (``build_encoder``). A new kind
of tokenizer is a module here and a branch in :func:`load_encoder`; a new engine, a module
here and a branch in ``engine.choose_engine`` and ``engine.build_encoder``; nothing outside
this package changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy.typing as npt

from prep.encoders.byte import BYTE, EMPTY_SHA256, ByteEncoder
from prep.encoders.flatids import FlatIds
from prep.encoders.hf import HFEncoder, load_tokenizer_file, parse_tokenizer, resolve_json
from prep.encoders.memo import TokenizerMemo
from prep.encoders.separator import choose_separator
from prep.encoders.vocab_bytes import BYTE_FILE, load_vocab_bytes
from prep.errors import InputError
from prep.fsio import canonical_path
from prep.state.identity import TokenizerFingerprint, TokenizerIdentity

__all__ = [
    "BYTE",
    "ByteEncoder",
    "CheckedEngine",
    "Encode",
    "Encoder",
    "FlatEncoder",
    "HFEncoder",
    "canonical_tokenizer",
    "load_encoder",
    "set_threads",
    "tokenizer_fingerprint",
]


Encode = Callable[[list[str], list[bytes]], FlatIds]  # texts and their UTF-8 -> their ids


class FlatEncoder(Protocol):
    """What tokenizes a batch on the hot path: every engine a worker runs (an
    :class:`Encoder`, or what :func:`prep.encoders.engine.build_encoder` builds)."""

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        """The texts' ids as one flat buffer and offsets; ``utf8`` holds the same texts'
        UTF-8 bytes. Raises ``Unencodable`` for a document it refuses (any other exception:
        the tokenizer could not encode)."""
        ...


@runtime_checkable
class CheckedEngine(FlatEncoder, Protocol):
    """An engine other than the reference: the run-time cross-check re-encodes a sample of
    its documents with ``reference`` (the ``hf`` engine's ``encode_flat``)."""

    @property
    def reference(self) -> Encode: ...


class Encoder(FlatEncoder, Protocol):
    identity: TokenizerIdentity
    # True when the separator id can never occur inside a document's ids, so the number of
    # separators in a shard is its number of documents (resume checks counts with it).
    sep_exclusive: bool

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        """Ids of each text, in order; ``utf8`` holds the same texts' UTF-8 bytes."""
        ...


def set_threads(threads: int | None) -> None:
    """Pin the tokenizer's thread pool size; must run before the first tokenizer call.

    ``tokenizers`` sizes its Rayon pool from ``RAYON_NUM_THREADS`` once per process."""
    if threads is not None:
        os.environ["RAYON_NUM_THREADS"] = str(threads)


def canonical_tokenizer(spec: str, base: Path | None = None) -> str:
    """``--tokenizer`` as one spelling per tokenizer: ``byte`` and ``hf:`` unchanged; a local
    ``tokenizer.json`` or the directory holding it as the canonical path of the file (see
    :func:`prep.fsio.canonical_path`). A relative path is taken from ``base`` (default: the
    current directory), once. Raises ``InputError`` when there is no such tokenizer.json."""
    if spec == BYTE or spec.startswith("hf:"):
        return spec
    here = base if base is not None else Path.cwd()
    path = here / spec
    if not path.exists():
        raise InputError(
            f"--tokenizer {spec}: no such file or directory (looked for {os.path.abspath(path)}"
            f" from {here}); give a tokenizer.json, a directory holding one, hf:OWNER/NAME, "
            "or `byte`",
            path=spec,
        )
    return canonical_path(str(resolve_json(str(path), spec)))


def _locate(
    spec: str, token: str | None, revision: str | None, offline: bool
) -> tuple[Path, str, str | None]:
    """(tokenizer.json path, default tokenizer id, Hub commit or None) for a non-byte spec.

    A Hub tokenizer comes from the local cache when ``offline``, or when ``revision`` pins
    a commit (a resume) whose files are all cached; else from the Hub."""
    if spec.startswith("hf:"):
        from prep.hub.calls import HubOptions
        from prep.hub.files import download_tokenizer
        from prep.hub.offline import cached_tokenizer

        if offline or revision is not None:
            opts = HubOptions(offline=True)
            try:
                return cached_tokenizer(spec, revision=revision, options=opts, strict=not offline)
            except InputError:
                if offline:
                    raise
        json_path, repo_id, commit = download_tokenizer(spec, token=token, revision=revision)
        return json_path, repo_id, commit
    json_path = resolve_json(spec, spec)
    return json_path, json_path.absolute().parent.name, None


def tokenizer_fingerprint(
    spec: str,
    *,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    token: str | None = None,
    offline: bool = False,
) -> TokenizerFingerprint:
    """``tokenizer_id``, ``sha256`` and the configured ``doc_sep_id`` without building the
    tokenizer unless its ``tokenizer_config.json`` names the separator by its text (cheap:
    hashes the file, reads the config files). For ``--refresh``; raises as
    :func:`load_encoder` would."""
    if spec == BYTE:
        sep = choose_separator(spec, typed=doc_sep_id, no_sep=no_doc_sep, vocab_size=256)
        return TokenizerFingerprint(tokenizer_id or "bytes", EMPTY_SHA256, sep.id)
    json_path, default_id, _ = _locate(spec, token, None, offline)
    raw = json_path.read_bytes()
    sha256 = hashlib.sha256(raw).hexdigest()
    memo = TokenizerMemo.recall(sha256)

    def token_to_id(text: str) -> int | None:  # only for an eos_token given as text
        return memo.token_id(text, lambda t: parse_tokenizer(json_path, raw).token_to_id(t))

    sep = choose_separator(
        spec,
        typed=doc_sep_id,
        no_sep=no_doc_sep,
        vocab_size=None,  # the build checks the range; this stays cheap
        directory=json_path.parent,
        token_to_id=token_to_id,
    )
    memo.keep()
    return TokenizerFingerprint(tokenizer_id or default_id, sha256, sep.id)


def load_encoder(
    spec: str,
    *,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    token: str | None = None,
    revision: str | None = None,
    threads: int | None = None,
    offline: bool = False,
    require_sep: bool = True,
) -> Encoder:
    """The encoder for ``--tokenizer``: ``byte``, a path (a ``tokenizer.json``, or a trained
    ``byte_vocabulary.json``), or ``hf:OWNER/NAME[@REV]``.

    For a Hub tokenizer, ``revision`` pins the commit (a resume passes the recorded one),
    ``token`` authenticates and ``offline`` reads the local cache only. ``require_sep``:
    see :func:`~prep.encoders.hf.load_tokenizer_file`."""
    if spec == BYTE:
        sep = choose_separator(spec, typed=doc_sep_id, no_sep=no_doc_sep, vocab_size=256)
        identity = TokenizerIdentity(
            spec, tokenizer_id or "bytes", EMPTY_SHA256, 256, sep.id, doc_sep_from=sep.origin
        )
        return ByteEncoder(identity)
    json_path, default_id, commit = _locate(spec, token, revision, offline)
    if json_path.name == BYTE_FILE:
        return load_vocab_bytes(json_path, spec=spec, default_id=default_id,
                                doc_sep_id=doc_sep_id, no_doc_sep=no_doc_sep,
                                tokenizer_id=tokenizer_id, require_sep=require_sep)
    enc = load_tokenizer_file(
        json_path,
        spec=spec,
        default_id=default_id,
        doc_sep_id=doc_sep_id,
        no_doc_sep=no_doc_sep,
        tokenizer_id=tokenizer_id,
        threads=threads,
        require_sep=require_sep,
    )
    if commit is not None:
        enc.identity = dataclasses.replace(enc.identity, revision=commit)
    return enc
