"""``prep.Tokenizer``: the byte and BPE strategies of docs/tokenizer.md, trained on a corpus
in memory, encoding and decoding, and their exact state.

``Tokenizer(corpus, method="bpe", vocabulary_size=512, minimum_pair_frequency=2,
pre_tokenizer="none", special_tokens=())`` trains on ``corpus`` (one document: a ``str`` or
``bytes``; or an iterable of documents). The rules: ids ``0..255`` are the bytes; each
document is its own sequence, or with a ``pre_tokenizer`` (``gpt2``, ``gpt4``, ``o200k``:
:mod:`prep.tokenizer.pretokenize`) each piece the pattern splits it into; every adjacent
position counts (``b"aaa"`` holds ``(97, 97)`` twice); the most frequent pair whose count
reaches ``minimum_pair_frequency`` becomes id ``256 + k``, ties to the smaller ``(left,
right)``; occurrences are replaced left to right without overlap; training stops at
``vocabulary_size`` ids (special tokens included: they take the ids after the learned
ones) or when no pair reaches the threshold. The byte strategy's vocabulary is the corpus's
distinct bytes, ascending.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, TypeGuard

from prep.encoders.merges import apply_merges
from prep.tokenizer.bpe import flat_sequence, make_trainer
from prep.tokenizer.files import load_state, state_extras
from prep.tokenizer.pieces import PieceTable
from prep.tokenizer.pretokenize import NONE, Splitter, check_name, count_pieces

METHODS = ("bpe", "byte")
MAX_VOCABULARY = 2**32 - 1
DEFAULT_VOCABULARY = 512
DEFAULT_MIN_FREQUENCY = 2
STATE_VERSION = 1
_UNSET: Any = object()  # Any: a sentinel standing in for an int default not given


def check_options(method: object, vocabulary_size: object, minimum_pair_frequency: object,
                  pre_tokenizer: object = NONE, specials: int = 0) -> None:
    """Raise ``ValueError`` saying what was given and what is allowed. ``_UNSET`` stands
    for an option not given (the byte strategy refuses a vocabulary size given at all)."""
    if method not in METHODS:
        raise ValueError(f"method {method!r}: choose 'bpe' or 'byte'")
    check_name(pre_tokenizer)
    if method == "byte" and pre_tokenizer != NONE:
        raise ValueError(f"pre_tokenizer={pre_tokenizer!r} was given with method='byte', "
                         "which has no merges; leave it out")
    if method == "byte":
        if vocabulary_size is not _UNSET:
            raise ValueError(
                f"vocabulary_size={vocabulary_size!r} was given with method='byte': the "
                "byte strategy's vocabulary is the corpus's distinct bytes; leave it out"
            )
        if minimum_pair_frequency not in (_UNSET, DEFAULT_MIN_FREQUENCY):
            raise ValueError(
                f"minimum_pair_frequency={minimum_pair_frequency!r} was given with "
                f"method='byte', which has no pairs; leave it out (or give "
                f"{DEFAULT_MIN_FREQUENCY})"
            )
        return
    size = DEFAULT_VOCABULARY if vocabulary_size is _UNSET else vocabulary_size
    if not _is_int(size) or not 256 + specials <= size <= MAX_VOCABULARY:
        raise ValueError(
            f"vocabulary_size={size!r}: an integer with {256 + specials} <= vocabulary_size "
            f"<= 2**32-1 (every id: the 256 bytes, the merges and the {specials} special "
            "tokens)"
        )
    freq = DEFAULT_MIN_FREQUENCY if minimum_pair_frequency is _UNSET else minimum_pair_frequency
    if not _is_int(freq) or freq < 1:
        raise ValueError(f"minimum_pair_frequency={freq!r}: an integer >= 1")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _documents(corpus: object) -> list[bytes]:
    if isinstance(corpus, str):
        return [corpus.encode("utf-8")]
    if isinstance(corpus, (bytes, bytearray, memoryview)):
        return [bytes(corpus)]
    if isinstance(corpus, Iterable):
        docs = []
        for doc in corpus:
            if isinstance(doc, str):
                docs.append(doc.encode("utf-8"))
            elif isinstance(doc, (bytes, bytearray, memoryview)):
                docs.append(bytes(doc))
            else:
                raise ValueError(f"a document is {type(doc).__name__}: give str or bytes")
        return docs
    raise ValueError(
        f"corpus is {type(corpus).__name__}: give a str, bytes, or an iterable of them"
    )


def _utf8(doc: bytes) -> str:
    try:
        return doc.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"a document is not UTF-8 ({e}); a pre-tokenizer splits text") from None


def train_merges(
    documents: Iterable[bytes], vocabulary_size: int, minimum_pair_frequency: int,
    pre_tokenizer: str = NONE,
) -> list[tuple[int, int, int]]:
    """The merges ``(left, right, count)`` the rules give, in training order, up to
    ``vocabulary_size`` learned ids."""
    if pre_tokenizer == NONE:
        trainer = make_trainer(flat_sequence(documents), 256, minimum_pair_frequency)
    else:
        table = PieceTable.of(count_pieces((_utf8(d) for d in documents), pre_tokenizer))
        seq, weights = table.training_input()
        trainer = make_trainer(seq, 256, minimum_pair_frequency, weights)
    merges: list[tuple[int, int, int]] = []
    while 256 + len(merges) < vocabulary_size:
        got = trainer.step(min(4096, vocabulary_size - 256 - len(merges)))
        if not got:
            break
        merges.extend(got)
    return merges


class Tokenizer:
    """A trained byte or BPE tokenizer; see the module docstring for the rules."""

    def __init__(
        self,
        corpus: object,
        method: str = "bpe",
        vocabulary_size: int = _UNSET,
        minimum_pair_frequency: int = _UNSET,
        pre_tokenizer: str = NONE,
        special_tokens: Sequence[str] = (),
    ) -> None:
        specials = _specials(special_tokens)
        check_options(method, vocabulary_size, minimum_pair_frequency, pre_tokenizer,
                      len(specials))
        docs = _documents(corpus)
        self._set_extras(pre_tokenizer, specials)
        if method == "byte":
            self._set_bytes(sorted({b for d in docs for b in d}))
            return
        size = DEFAULT_VOCABULARY if vocabulary_size is _UNSET else vocabulary_size
        freq = DEFAULT_MIN_FREQUENCY if minimum_pair_frequency is _UNSET else (
            minimum_pair_frequency
        )
        merges = train_merges(docs, size - len(specials), freq, pre_tokenizer)
        self._set_merges([(a, b) for a, b, _ in merges])

    def _set_extras(self, pre_tokenizer: str, specials: Sequence[str]) -> None:
        self.pre_tokenizer = check_name(pre_tokenizer)
        self.special_tokens: tuple[str, ...] = tuple(specials)
        self._splitter = None if pre_tokenizer == NONE else Splitter(pre_tokenizer)

    def _set_bytes(self, values: Sequence[int]) -> None:
        self.method = "byte"
        self.merges: tuple[tuple[int, int], ...] = ()
        self.vocabulary: tuple[bytes, ...] = tuple(bytes([b]) for b in values)
        self._byte_id = {b: i for i, b in enumerate(values)}

    def _set_merges(self, merges: Sequence[tuple[int, int]]) -> None:
        self.method = "bpe"
        pieces = [bytes([b]) for b in range(256)]
        for k, (a, b) in enumerate(merges):
            if not (0 <= a < 256 + k and 0 <= b < 256 + k):
                raise ValueError(f"merge {k} ({a}, {b}) names an id not defined before it")
            pieces.append(pieces[a] + pieces[b])
        self.merges = tuple((int(a), int(b)) for a, b in merges)
        self.vocabulary = tuple(pieces)
        self._rank = {pair: k for k, pair in enumerate(self.merges)}

    @property
    def vocab_size(self) -> int:
        """Every id: the learned vocabulary's, then the special tokens'."""
        return len(self.vocabulary) + len(self.special_tokens)

    def __enter__(self) -> Tokenizer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def __repr__(self) -> str:
        pre = "" if self.pre_tokenizer == NONE else f", pre_tokenizer={self.pre_tokenizer!r}"
        return f"Tokenizer(method={self.method!r}, vocab_size={self.vocab_size}{pre})"

    def encode(self, text: str) -> list[int]:
        """``text``'s ids (its strict UTF-8 bytes encoded)."""
        return self.encode_bytes(text.encode("utf-8"))

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; raises ``UnicodeDecodeError`` when they are not UTF-8."""
        return self.decode_bytes(ids).decode("utf-8")

    def encode_bytes(self, data: bytes) -> list[int]:
        """Any bytes' ids. The byte strategy raises ``ValueError`` for a byte absent from
        its training corpus, naming the byte and its position; nothing is dropped."""
        if self.method == "byte":
            try:
                return [self._byte_id[b] for b in data]
            except KeyError:
                at = next(i for i, b in enumerate(data) if b not in self._byte_id)
                raise ValueError(
                    f"byte 0x{data[at]:02x} at position {at} is not in this byte vocabulary "
                    "(it never occurred in the training corpus)"
                ) from None
        if self._splitter is None:
            return apply_merges(list(data), self.merges, self._rank)
        out: list[int] = []
        for piece in self._splitter.split([_utf8(data)])[0]:
            out.extend(apply_merges(list(piece.encode("utf-8")), self.merges, self._rank))
        return out

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """The pieces of ``ids`` concatenated (a special token's: its text); ``ValueError``
        for an id out of range."""
        vocab = self.vocabulary + tuple(t.encode("utf-8") for t in self.special_tokens)
        out = []
        for i in ids:
            try:
                k = operator.index(i)
            except TypeError:
                k = -1
            if not 0 <= k < len(vocab):
                raise ValueError(f"id {i!r}: ids are integers in 0..{len(vocab) - 1}")
            out.append(vocab[k])
        return b"".join(out)

    def state(self) -> dict[str, Any]:
        """The exact byte vocabulary or merge table, the pre-tokenizer and the special
        tokens, when any (JSON-ready)."""
        extras = state_extras(self.pre_tokenizer, self.special_tokens)
        if self.method == "byte":
            return {"version": STATE_VERSION, "method": "byte",
                    "bytes": [v[0] for v in self.vocabulary], **extras}
        return {"version": STATE_VERSION, "method": "bpe",
                "merges": [list(m) for m in self.merges], **extras}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Tokenizer:
        """The tokenizer :meth:`state` described, with the same ids; ``ValueError`` for a
        state of another version, method, or shape."""
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise ValueError(f"tokenizer state of version {state.get('version')!r}: "
                             f"this prep reads version {STATE_VERSION}")
        self = cls.__new__(cls)
        try:
            self._set_extras(state.get("pre_tokenizer", NONE),
                             _specials(state.get("special_tokens", ())))
            if state["method"] == "byte":
                values = [int(b) for b in state["bytes"]]
                if values != sorted(set(values)) or any(not 0 <= b < 256 for b in values):
                    raise ValueError("bytes must be distinct values 0..255, ascending")
                self._set_bytes(values)
            elif state["method"] == "bpe":
                self._set_merges([(int(a), int(b)) for a, b in state["merges"]])
            else:
                raise ValueError(f"method {state['method']!r}: 'bpe' or 'byte'")
        except (KeyError, TypeError) as e:
            raise ValueError(f"tokenizer state is malformed ({e!r})") from None
        return self

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Tokenizer:
        """The tokenizer ``prep train-tokenizer`` wrote to ``directory``."""
        return cls.from_state(load_state(directory))


def _specials(tokens: object) -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Iterable):
        raise ValueError(f"special_tokens={tokens!r}: a sequence of distinct, non-empty str")
    out = list(tokens)
    if any(not isinstance(t, str) or not t for t in out) or len(set(out)) != len(out):
        raise ValueError(f"special_tokens={tokens!r}: a sequence of distinct, non-empty str")
    return out
