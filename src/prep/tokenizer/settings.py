"""``prep train-tokenizer``'s recipe: everything that decides the bytes of ``tokenizer.json``
and ``training.json``, as one frozen dataclass. Its grammar is the command line's
(:mod:`prep.cli.train`).

Run options (``--workers``, ``--batch-size``, ``--checkpoint-interval``, ...) change no
byte of the output and are not part of the recipe.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from prep.errors import IntegrityError, UsageError
from prep.tokenizer.model import (
    DEFAULT_MIN_FREQUENCY,
    DEFAULT_VOCABULARY,
    MAX_VOCABULARY,
    METHODS,
)
from prep.tokenizer.pretokenize import NAMES, NONE

RECIPE_VERSION = 1


@dataclass(frozen=True)
class TrainRecipe:
    """What to read and how to train; ``source`` is in its canonical spelling."""

    source: str
    method: str = "bpe"
    vocab_size: int | None = None  # BPE only, every id (special tokens included); None: 512
    min_pair_frequency: int = DEFAULT_MIN_FREQUENCY
    special_tokens: tuple[str, ...] = ()
    text_column: str = "text"
    split_column: str | None = None
    val_fraction: float = 0.01
    seed: int = 1337
    max_documents: int | None = None
    train_bytes: int | None = None
    pre_tokenizer: str = NONE

    def __post_init__(self) -> None:
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))
        if self.method not in METHODS:
            raise UsageError(f"--method {self.method!r}: choose bpe or byte")
        if self.method == "byte":
            if self.vocab_size is not None:
                raise UsageError(
                    "--vocab-size was given with --method byte, whose vocabulary is the "
                    "corpus's distinct bytes; drop --vocab-size"
                )
            if self.min_pair_frequency != DEFAULT_MIN_FREQUENCY:
                raise UsageError("--min-pair-frequency applies to --method bpe only; drop it")
            if self.pre_tokenizer != NONE:
                raise UsageError("--pre-tokenizer applies to --method bpe only; drop it")
        elif not 256 + len(self.special_tokens) <= self.size <= MAX_VOCABULARY:
            least = 256 + len(self.special_tokens)
            raise UsageError(
                f"--vocab-size {self.size:,} must be in {least:,}..4,294,967,295 (2**32-1): "
                "it counts every id, the 256 bytes, one per merge and one per --special-token "
                f"({len(self.special_tokens)} given)"
            )
        if self.pre_tokenizer not in NAMES:
            raise UsageError(f"--pre-tokenizer {self.pre_tokenizer!r}: choose one of "
                             f"{', '.join(NAMES)}")
        if self.min_pair_frequency < 1:
            raise UsageError(f"--min-pair-frequency {self.min_pair_frequency} must be >= 1")
        if len(set(self.special_tokens)) != len(self.special_tokens) or "" in self.special_tokens:
            raise UsageError("--special-token values must be distinct and not empty")
        if not 0 <= self.val_fraction < 1:
            raise UsageError(f"--val-fraction {self.val_fraction} must be in [0, 1)")
        for name, value in (("--max-documents", self.max_documents),
                            ("--train-bytes", self.train_bytes)):
            if value is not None and value < 1:
                raise UsageError(f"{name} {value} must be >= 1")

    @property
    def size(self) -> int:
        """The most ids the tokenizer may have, special tokens included (BPE)."""
        return DEFAULT_VOCABULARY if self.vocab_size is None else self.vocab_size

    @property
    def target(self) -> int:
        """The most ids BPE may learn (the 256 bytes included, the special tokens not)."""
        return self.size - len(self.special_tokens)

    def to_json(self) -> dict[str, Any]:
        body = {"version": RECIPE_VERSION, **dataclasses.asdict(self),
                "special_tokens": list(self.special_tokens)}
        if self.pre_tokenizer == NONE:  # the recipes of seed 004's rules keep their bytes
            del body["pre_tokenizer"]
        return body

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainRecipe:
        if data.get("version") != RECIPE_VERSION:
            raise IntegrityError(f"training recipe of version {data.get('version')!r}; this "
                                 f"prep reads {RECIPE_VERSION}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def differences(self, given: dict[str, Any]) -> list[str]:
        """The settings in ``given`` that this recipe has otherwise."""
        mine = dataclasses.asdict(self)
        return [f"{k}: {given[k]!r}, not {mine[k]!r}" for k in sorted(given)
                if k in mine and given[k] != mine[k]]


RECIPE_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainRecipe))
