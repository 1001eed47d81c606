"""Encoders: the byte tokenizer and Hugging Face ``tokenizers``, behind one small interface.

Both follow stream.md step 7: special tokens' strings inside a document are ordinary text,
so the only control ids in a stream are the separators the writer inserts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from prep.errors import InputError, UsageError

BYTE = "byte"


@dataclass(frozen=True)
class TokenizerIdentity:
    """What the manifest and checkpoint record about a tokenizer."""

    spec: str
    tokenizer_id: str
    sha256: str
    vocab_size: int
    doc_sep_id: int | None
    revision: str | None = None  # the Hub commit a hf: tokenizer was read at

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "tokenizer_id": self.tokenizer_id,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "doc_sep_id": self.doc_sep_id,
            "revision": self.revision,
        }


class Encoder(Protocol):
    identity: TokenizerIdentity

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        """Ids of each text, in order; ``utf8`` holds the same texts' UTF-8 bytes."""
        ...


class ByteEncoder:
    """Ids are the UTF-8 bytes; V = 256; no separator unless ``--doc-sep-id`` gives one."""

    def __init__(self, identity: TokenizerIdentity) -> None:
        self.identity = identity

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        return [np.frombuffer(b, dtype=np.uint8) for b in utf8]


# Text per tokenizer call, per thread. An ``Encoding`` costs ~90 bytes per token until it is
# converted, so a whole batch in one call held ~25x its text in memory; calls of about a
# megabyte per thread keep that small and were no slower (benchmarks/, docs/performance.md).
CHUNK_BYTES_PER_THREAD = 1 << 20


class HFEncoder:
    """A Hugging Face ``tokenizers`` tokenizer with ``encode_special_tokens = True``.

    A batch is encoded in chunks of about ``chunk_bytes`` of text, each converted to numpy
    at once; the ids do not depend on the chunking."""

    def __init__(
        self, tokenizer: Any, identity: TokenizerIdentity, threads: int | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.identity = identity
        self.chunk_bytes = CHUNK_BYTES_PER_THREAD * (threads or os.cpu_count() or 1)
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        out: list[npt.NDArray[Any]] = []
        start = size = 0
        for i, data in enumerate(utf8):
            size += len(data)
            if size >= self.chunk_bytes or i == len(utf8) - 1:
                encs = self._encode(texts[start : i + 1], add_special_tokens=False)
                out.extend(np.array(e.ids, dtype=np.uint32) for e in encs)
                start, size = i + 1, 0
        return out


def set_threads(threads: int | None) -> None:
    """Pin the tokenizer's thread pool size; must run before the first tokenizer call.

    ``tokenizers`` sizes its Rayon pool from ``RAYON_NUM_THREADS`` once per process."""
    if threads is not None:
        os.environ["RAYON_NUM_THREADS"] = str(threads)


def _resolve_json(spec: str) -> Path:
    p = Path(spec)
    if p.is_dir():
        p = p / "tokenizer.json"
        if not p.is_file():
            raise InputError(
                f"--tokenizer {spec}: the directory holds no tokenizer.json; give the path "
                "of a Hugging Face tokenizer.json or `byte`",
                path=spec,
            )
    elif not p.is_file():
        raise InputError(
            f"--tokenizer {spec}: no such file or directory; give a tokenizer.json, a "
            "directory holding one, hf:OWNER/NAME, or `byte`",
            path=spec,
        )
    return p


def eos_from_generation_config(directory: Path) -> int | None:
    """``eos_token_id`` of ``generation_config.json`` in ``directory`` (a list: its first
    entry), or None when there is no such file or key."""
    cfg = directory / "generation_config.json"
    if not cfg.is_file():
        return None
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(
            f"{cfg}: unreadable generation_config.json ({e}); fix it or give --doc-sep-id",
            path=cfg,
        ) from e
    eos = data.get("eos_token_id") if isinstance(data, dict) else None
    if isinstance(eos, list):
        eos = eos[0] if eos else None
    if eos is not None and (not isinstance(eos, int) or isinstance(eos, bool)):
        raise InputError(
            f"{cfg}: eos_token_id {eos!r} is not an integer; fix it or give --doc-sep-id",
            path=cfg,
        )
    return eos


def _choose_sep(
    spec: str, typed: int | None, no_sep: bool, from_config: int | None, vocab_size: int
) -> int | None:
    sep = None if no_sep else (typed if typed is not None else from_config)
    if sep is not None and not 0 <= sep < vocab_size:
        if typed is not None and not no_sep:
            raise UsageError(
                f"--doc-sep-id {sep:,} is outside the vocabulary of {spec} (size "
                f"{vocab_size:,}); choose an id below {vocab_size:,} or pass --no-doc-sep"
            )
        raise InputError(
            f"generation_config.json beside {spec}: eos_token_id {sep:,} is outside the "
            f"vocabulary (size {vocab_size:,}); give --doc-sep-id or --no-doc-sep"
        )
    return sep


# Files that sit beside tokenizer.json in a model directory and are often given instead.
_COMPANIONS = {
    "tokenizer_config.json": "tokenizer configuration",
    "special_tokens_map.json": "special tokens map",
    "generation_config.json": "generation configuration",
    "config.json": "model configuration",
}


def not_a_tokenizer(path: Path, raw: bytes) -> str | None:
    """The message for a valid JSON file that is not a ``tokenizer.json`` (no ``model``),
    naming what it is when it is a known companion file; None for anything else."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or "model" in data:
        return None
    what = _COMPANIONS.get(path.name)
    it_is = f"the {what}, not the tokenizer" if what else "JSON, but not a tokenizer.json"
    beside = path.parent / "tokenizer.json"
    where = (
        f"here: --tokenizer {path.parent}/" if beside.is_file()
        else f"{path.parent} has no tokenizer.json"
    )
    return f"{path}: this is {it_is}; --tokenizer wants tokenizer.json or its directory ({where})"


def load_tokenizer_file(
    json_path: Path,
    *,
    spec: str,
    default_id: str,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    threads: int | None = None,
) -> HFEncoder:
    """Load a ``tokenizer.json``; the separator comes from ``doc_sep_id``, else the
    ``generation_config.json`` beside it. Raises ``InputError`` for an unreadable file."""
    from tokenizers import Tokenizer

    raw = json_path.read_bytes()
    try:
        tok = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as e:  # tokenizers raises a bare Exception for any parse error
        raise InputError(
            not_a_tokenizer(json_path, raw)
            or f"{json_path}: not a readable Hugging Face tokenizer.json ({e}); give a valid "
            "tokenizer file or `byte`",
            path=json_path,
        ) from e
    tok.encode_special_tokens = True
    # A saved padding or truncation setting would make ids depend on the batch (pads to the
    # longest text of a call) or silently cut documents: neither is ever wanted here.
    tok.no_padding()
    tok.no_truncation()
    vocab = tok.get_vocab(with_added_tokens=True)
    if not vocab:
        raise InputError(f"{json_path}: the tokenizer has an empty vocabulary", path=json_path)
    vocab_size = max(vocab.values()) + 1
    sep = _choose_sep(
        spec, doc_sep_id, no_doc_sep, eos_from_generation_config(json_path.parent), vocab_size
    )
    identity = TokenizerIdentity(
        spec=spec,
        tokenizer_id=tokenizer_id or default_id,
        sha256=hashlib.sha256(raw).hexdigest(),
        vocab_size=vocab_size,
        doc_sep_id=sep,
    )
    return HFEncoder(tok, identity, threads)


def _locate(spec: str, token: str | None, revision: str | None) -> tuple[Path, str, str | None]:
    """(tokenizer.json path, default tokenizer id, Hub commit or None) for a non-byte spec."""
    if spec.startswith("hf:"):
        from prep.hub import download_tokenizer

        json_path, repo_id, commit = download_tokenizer(spec, token=token, revision=revision)
        return json_path, repo_id, commit
    json_path = _resolve_json(spec)
    return json_path, json_path.resolve().parent.name, None


def tokenizer_fingerprint(
    spec: str,
    *,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    token: str | None = None,
) -> dict[str, Any]:
    """``tokenizer_id``, ``sha256`` and the configured ``doc_sep_id`` without building the
    tokenizer (cheap: hashes the file, reads generation_config.json). For ``--refresh``."""
    if spec == BYTE:
        sep = None if no_doc_sep else doc_sep_id
        return {
            "tokenizer_id": tokenizer_id or "bytes",
            "sha256": hashlib.sha256(b"").hexdigest(),
            "doc_sep_id": sep,
        }
    json_path, default_id, _ = _locate(spec, token, None)
    if no_doc_sep:
        sep = None
    else:
        sep = doc_sep_id if doc_sep_id is not None else eos_from_generation_config(json_path.parent)
    return {
        "tokenizer_id": tokenizer_id or default_id,
        "sha256": hashlib.sha256(json_path.read_bytes()).hexdigest(),
        "doc_sep_id": sep,
    }


def load_encoder(
    spec: str,
    *,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    token: str | None = None,
    revision: str | None = None,
    threads: int | None = None,
) -> Encoder:
    """The encoder for ``--tokenizer``: ``byte``, a path, or ``hf:OWNER/NAME[@REV]``.

    For a Hub tokenizer, ``revision`` pins the commit (a resume passes the recorded one)
    and ``token`` authenticates."""
    if spec == BYTE:
        sep = _choose_sep(spec, doc_sep_id, no_doc_sep, None, 256)
        return ByteEncoder(
            TokenizerIdentity(
                spec=spec,
                tokenizer_id=tokenizer_id or "bytes",
                sha256=hashlib.sha256(b"").hexdigest(),
                vocab_size=256,
                doc_sep_id=sep,
            )
        )
    json_path, default_id, commit = _locate(spec, token, revision)
    enc = load_tokenizer_file(
        json_path,
        spec=spec,
        default_id=default_id,
        doc_sep_id=doc_sep_id,
        no_doc_sep=no_doc_sep,
        tokenizer_id=tokenizer_id,
        threads=threads,
    )
    if commit is not None:
        enc.identity = dataclasses.replace(enc.identity, revision=commit)
    return enc
