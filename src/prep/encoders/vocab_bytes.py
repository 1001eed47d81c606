"""A trained byte vocabulary (docs/tokenizer.md, the byte strategy): id ``i`` is the
``i``-th smallest byte of the training corpus, special tokens follow.

Its file is ``byte_vocabulary.json`` (``prep train-tokenizer --method byte`` writes it), not
a ``tokenizer.json``: Hugging Face drops characters it does not know without a word, and a
byte absent from the vocabulary must be refused instead. Only this encoder reads it (engine
``vocab-bytes``); a document holding an absent byte stops the run naming the file, row and
byte (``run.work.tokenize`` adds the file and row).

``{"type": "prep-byte-vocabulary", "version": 1, "bytes": [...], "special_tokens": [...]}``
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.encoders.flatids import FlatIds, Unencodable
from prep.encoders.separator import choose_separator
from prep.errors import InputError
from prep.state.identity import TokenizerIdentity

ENGINE = "vocab-bytes"
BYTE_FILE = "byte_vocabulary.json"
BYTE_TYPE = "prep-byte-vocabulary"
BYTE_VERSION = 1


def byte_file(values: Sequence[int], specials: Sequence[str] = ()) -> bytes:
    """The file's bytes for the ascending distinct byte values and special tokens."""
    body = {"type": BYTE_TYPE, "version": BYTE_VERSION, "bytes": list(values),
            "special_tokens": list(specials)}
    return (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def _bad(path: Path, why: str) -> InputError:
    return InputError(f"{path}: {why}; give a directory prep train-tokenizer wrote", path=path)


def read_byte_file(path: Path) -> tuple[list[int], list[str]]:
    """(bytes, special tokens); ``InputError`` when it is not a file this prep reads."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise _bad(path, f"cannot be read as JSON ({e})") from e
    if not isinstance(data, dict) or data.get("type") != BYTE_TYPE:
        raise _bad(path, f"not a {BYTE_TYPE} file")
    if data.get("version") != BYTE_VERSION:
        raise _bad(path, f"version {data.get('version')!r}; this prep reads {BYTE_VERSION}")
    values, specials = data.get("bytes"), data.get("special_tokens", [])
    if (not isinstance(values, list) or values != sorted(set(values))
            or any(not isinstance(b, int) or not 0 <= b < 256 for b in values)):
        raise _bad(path, '"bytes" must list distinct byte values 0..255, ascending')
    if not isinstance(specials, list) or any(not isinstance(s, str) for s in specials):
        raise _bad(path, '"special_tokens" must list strings')
    return values, specials


class VocabBytesEncoder:
    """Ids through a 256-entry table; an absent byte raises ``Unencodable``, naming it."""

    def __init__(self, path: Path, identity: TokenizerIdentity) -> None:
        values, _ = read_byte_file(path)
        self.path, self.identity = path, identity
        self.table = np.full(256, -1, dtype=np.int64)
        self.table[values] = np.arange(len(values))
        # A special token's text in a document is ordinary bytes: a special separator
        # (an id after the bytes) never occurs inside a document.
        self.sep_exclusive = identity.doc_sep_id is not None and identity.doc_sep_id >= len(
            values)

    def encode_flat(self, texts: list[str], utf8: list[bytes]) -> FlatIds:
        offsets = np.zeros(len(utf8) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in utf8], out=offsets[1:])
        ids = self.table[np.frombuffer(b"".join(utf8), dtype=np.uint8)]
        absent = np.flatnonzero(ids < 0)
        if absent.size:
            at = int(absent[0])
            doc = int(np.searchsorted(offsets, at, side="right")) - 1
            byte = utf8[doc][at - int(offsets[doc])]
            raise Unencodable(
                f"byte 0x{byte:02x} at byte {at - int(offsets[doc]):,} of the document is not "
                f"in the byte vocabulary {self.path} (it never occurred in its training "
                "corpus); train the byte vocabulary on a corpus that holds it (prep "
                "train-tokenizer --method byte), or remove the row"
            )
        return FlatIds(ids.astype(np.uint32), offsets)

    def encode_batch(self, texts: list[str], utf8: list[bytes]) -> list[npt.NDArray[Any]]:
        return self.encode_flat(texts, utf8).split()


def load_vocab_bytes(
    path: Path, *, spec: str, default_id: str, doc_sep_id: int | None, no_doc_sep: bool,
    tokenizer_id: str | None, require_sep: bool = True,
) -> VocabBytesEncoder:
    """The encoder of a ``byte_vocabulary.json``, its separator chosen as for any tokenizer
    (``--doc-sep-id``, else ``generation_config.json`` beside it)."""
    raw = path.read_bytes()
    values, specials = read_byte_file(path)
    size = len(values) + len(specials)
    ids = {text: len(values) + k for k, text in enumerate(specials)}
    sep = choose_separator(spec, typed=doc_sep_id, no_sep=no_doc_sep, vocab_size=size,
                           directory=path.parent, token_to_id=ids.get, required=require_sep)
    identity = TokenizerIdentity(
        spec=spec, tokenizer_id=tokenizer_id or default_id,
        sha256=hashlib.sha256(raw).hexdigest(), vocab_size=size, doc_sep_id=sep.id,
        doc_sep_from=sep.origin,
    )
    return VocabBytesEncoder(path, identity)
