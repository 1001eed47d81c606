"""Hugging Face ``tokenizers`` as an encoder: a ``tokenizer.json`` with
``encode_special_tokens = True`` (docs/format.md, stream step 7: special tokens' strings inside a
document are ordinary text, so the only control ids in a stream are the separators the
writer inserts), and the separator as :mod:`~prep.encoders.separator` finds it beside it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from prep.encoders.flatids import FlatIds
from prep.encoders.memo import TokenizerMemo
from prep.encoders.separator import choose_separator
from prep.encoders.vocab_bytes import BYTE_FILE
from prep.errors import InputError
from prep.state.identity import TokenizerIdentity

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

    # a batch call of a Tokenizer: texts (and keywords) to their encodings
    BatchEncode = Callable[..., list[Encoding]]

# Text per tokenizer call, per thread. An ``Encoding`` costs ~90 bytes per token until it is
# converted, so a whole batch in one call held ~25x its text in memory; calls of about a
# megabyte per thread keep that small and were no slower (benchmarks/, docs/performance.md).
CHUNK_BYTES_PER_THREAD = 1 << 20


class HFEncoder:
    """A Hugging Face ``tokenizers`` tokenizer with ``encode_special_tokens = True``, built
    from the file's bytes ``raw`` on first use: a run whose facts and engine verdict are
    remembered (:mod:`~prep.encoders.memo`) never builds it in the main process.

    A batch is encoded in chunks of about ``chunk_bytes`` of text, each converted to numpy
    at once; the ids do not depend on the chunking."""

    identity: TokenizerIdentity  # set by load_tokenizer_file, from facts the file decides
    sep_exclusive: bool

    def __init__(self, raw: bytes, json_path: Path, memo: TokenizerMemo,
                 threads: int | None = None) -> None:
        self.raw, self.json_path, self.memo = raw, json_path, memo
        self.chunk_bytes = CHUNK_BYTES_PER_THREAD * (threads or os.cpu_count() or 1)
        self._tokenizer: Tokenizer | None = None

    @property
    def tokenizer(self) -> Tokenizer:
        if self._tokenizer is None:
            self._tokenizer = configured(parse_tokenizer(self.json_path, self.raw))
        return self._tokenizer

    def special_ids(self) -> list[int]:
        added = self.tokenizer.get_added_tokens_decoder()
        return sorted(i for i, t in added.items() if t.special)

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        """``encode_batch`` as one flat buffer and offsets."""
        return FlatIds.of(self.encode_batch(texts, utf8))

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        out: list[npt.NDArray[Any]] = []
        start = size = 0
        for i, data in enumerate(utf8):
            size += len(data)
            if size >= self.chunk_bytes or i == len(utf8) - 1:
                encs = batch_encode(self.tokenizer)(texts[start : i + 1],
                                                    add_special_tokens=False)
                out.extend(np.array(e.ids, dtype=np.uint32) for e in encs)
                start, size = i + 1, 0
        return out


def resolve_json(path: str, spec: str) -> Path:
    """The ``tokenizer.json`` at ``path`` (typed as ``spec``), or in that directory (or its
    ``byte_vocabulary.json`` when it has no ``tokenizer.json``)."""
    p = Path(path)
    if p.is_dir():
        if not (p / "tokenizer.json").is_file() and (p / BYTE_FILE).is_file():
            return p / BYTE_FILE  # a trained byte vocabulary (encoders.vocab_bytes)
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
    if not isinstance(data, dict) or "model" in data or path.name == "tokenizer.json":
        return None  # a tokenizer.json that is broken: the parser's own message says how
    what = _COMPANIONS.get(path.name)
    it_is = f"the {what}, not the tokenizer" if what else "JSON, but not a tokenizer.json"
    beside = path.parent / "tokenizer.json"
    where = (
        f"here: --tokenizer {path.parent}/" if beside.is_file()
        else f"{path.parent} has no tokenizer.json"
    )
    return f"{path}: this is {it_is}; --tokenizer wants tokenizer.json or its directory ({where})"


def configured(tok: Tokenizer) -> Tokenizer:
    """``tok`` set up as prep encodes: special-token text is ordinary text, and no saved
    padding or truncation (they would make ids depend on the batch, which pads to its
    longest text, or silently cut documents). Every ``tokenizers`` object prep encodes
    with goes through here, so the main process and the workers encode alike."""
    tok.encode_special_tokens = True
    tok.no_padding()
    tok.no_truncation()
    return tok


def batch_encode(tok: Tokenizer) -> BatchEncode:
    """``tok``'s fastest batch call (``encode_batch_fast`` where the version has it)."""
    return getattr(tok, "encode_batch_fast", tok.encode_batch)


def parse_tokenizer(json_path: Path, raw: bytes) -> Tokenizer:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json's bytes; ``InputError`` if unreadable."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as e:  # tokenizers raises a bare Exception for any parse error
        raise InputError(
            not_a_tokenizer(json_path, raw)
            or f"{json_path}: not a readable Hugging Face tokenizer.json ({e}); give a valid "
            "tokenizer file or `byte`",
            path=json_path,
        ) from e


def load_tokenizer_file(
    json_path: Path,
    *,
    spec: str,
    default_id: str,
    doc_sep_id: int | None,
    no_doc_sep: bool,
    tokenizer_id: str | None,
    threads: int | None = None,
    require_sep: bool = True,
) -> HFEncoder:
    """Load a ``tokenizer.json``; the separator as
    :func:`~prep.encoders.separator.choose_separator` finds it beside the file. Raises
    ``InputError`` for an unreadable file or, when ``require_sep``, for a tokenizer without
    a separator configured or chosen."""
    raw = json_path.read_bytes()
    sha256 = hashlib.sha256(raw).hexdigest()
    memo = TokenizerMemo.recall(sha256)
    enc = HFEncoder(raw, json_path, memo, threads)
    vocab_size: int = memo.fact("vocab_size", lambda: _vocab_size(enc.tokenizer, json_path))
    sep = choose_separator(
        spec,
        typed=doc_sep_id,
        no_sep=no_doc_sep,
        vocab_size=vocab_size,
        directory=json_path.parent,
        token_to_id=lambda text: memo.token_id(text, lambda t: enc.tokenizer.token_to_id(t)),
        required=require_sep,
    )
    enc.identity = TokenizerIdentity(
        spec=spec,
        tokenizer_id=tokenizer_id or default_id,
        sha256=sha256,
        vocab_size=vocab_size,
        doc_sep_id=sep.id,
        doc_sep_from=sep.origin,
    )
    # With encode_special_tokens, a special token's text inside a document encodes as
    # ordinary text, so a special separator id only ever appears as the separator. A
    # --doc-sep-id naming an ordinary (or non-special added) token can occur in text.
    enc.sep_exclusive = sep.id is not None and sep.id in memo.fact("special_ids",
                                                                   enc.special_ids)
    memo.keep()
    return enc


def _vocab_size(tok: Tokenizer, json_path: Path) -> int:
    """One more than the largest id, added tokens included; ``InputError`` when empty."""
    vocab = tok.get_vocab(with_added_tokens=True)
    if not vocab:
        raise InputError(f"{json_path}: the tokenizer has an empty vocabulary", path=json_path)
    return int(max(vocab.values())) + 1
