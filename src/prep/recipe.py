"""The recipe: every setting that decides the output, as one frozen dataclass.

Run options that do not change a byte of the output (batch size, threads, checkpoint
interval, logging) live in :class:`RunOptions`. The CLI builds both and passes them down.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from prep.errors import IntegrityError, UsageError
from prep.partition import Part

DEFAULT_MAX_FILE_TOKENS = 100_000_000
DEFAULT_BATCH_SIZE = 1024  # documents: the main process pays per batch (docs/performance.md)
# A worker holding more resident memory than this after a task is replaced (--worker-memory):
# real text keeps a worker well below it; a corpus of ever-new words (hashes, URLs, ids)
# grows the engine's word cache without end until it gets there (docs/performance.md).
DEFAULT_WORKER_MEMORY = 400_000_000
SEP_POSITIONS = ("prepend", "append")
# How a split's ids are cut into files: ``whole`` documents per file, or ``fixed`` files of
# exactly max_file_tokens ids (but a split's last) that documents run across.
PACKS = ("whole", "fixed")


@dataclass(frozen=True)
class Recipe:
    """What to read, how to tokenize it, and how to lay it out.

    ``source`` and ``tokenizer`` have no default: a run names both (``sample``, ``byte``).
    Local paths are in their canonical form (``prep.sources.canonical_source``,
    ``prep.encoders.canonical_tokenizer``), so the recipe does not depend on the directory a
    run was started from or on how a path was spelled; their identities (file hashes,
    tokenizer SHA-256) are recorded separately.
    """

    source: str
    tokenizer: str
    text_column: str = "text"
    split_column: str | None = None
    val_fraction: float = 0.01
    seed: int = 1337
    shuffle_files: bool = False
    shuffle_buffer: int = 0
    max_documents: int | None = None
    train_tokens: int | None = None
    doc_sep_id: int | None = None
    no_doc_sep: bool = False
    sep_position: str = "prepend"
    max_file_tokens: int = DEFAULT_MAX_FILE_TOKENS
    pack: str = "whole"
    format: str = "llmc"
    dtype: str = "auto"
    dataset: str | None = None
    tokenizer_id: str | None = None
    part: str | None = None  # "I/N": this run reads part I of N of the files (partition.py)

    def __post_init__(self) -> None:
        if isinstance(self.val_fraction, int) and not isinstance(self.val_fraction, bool):
            # prepare(val_fraction=0) is the CLI's --val-fraction 0: the manifest writes 0.0
            object.__setattr__(self, "val_fraction", float(self.val_fraction))
        settings = dataclasses.asdict(self)
        check_types(settings)
        validate(settings)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recipe:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise IntegrityError(f"checkpoint recipe has unknown settings {sorted(unknown)}")
        return cls(**data)

    def manifest_recipe(self) -> dict[str, Any]:
        """The manifest's ``recipe`` object, in the order docs/format.md gives."""
        out: dict[str, Any] = {}
        if self.split_column is None:
            out["val_fraction"] = self.val_fraction
        else:
            out["split_column"] = self.split_column
        out["seed"] = self.seed
        out["shuffle_files"] = self.shuffle_files
        out["shuffle_buffer"] = self.shuffle_buffer
        out["max_documents"] = self.max_documents
        out["train_tokens"] = self.train_tokens
        out["sep_position"] = self.sep_position
        out["max_file_tokens"] = self.max_file_tokens
        out["format"] = self.format
        out["dtype"] = self.dtype
        if self.pack != "whole":  # a manifest without it (every earlier one) means whole
            out["pack"] = self.pack
        return out


RECIPE_FIELDS = frozenset(f.name for f in dataclasses.fields(Recipe))
# What each setting holds, by its annotation: an int is never a bool, a float may be an int.
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "str": ((str,), "a string"),
    "str | None": ((str, type(None)), "a string or None"),
    "int": ((int,), "an integer"),
    "int | None": ((int, type(None)), "an integer or None"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "True or False"),
}
_TYPES = {f.name: _KINDS[str(f.type)] for f in dataclasses.fields(Recipe)}
REQUIRED = ("source", "tokenizer")  # no default: a run names both
DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in dataclasses.fields(Recipe) if f.name not in REQUIRED
}


def check_types(settings: Mapping[str, Any]) -> None:
    """Raise ``UsageError`` naming the first setting whose value is of the wrong type (from
    Python code, or a checkpoint's recipe); :func:`validate` then checks the ranges."""
    for name, value in settings.items():
        types, expected = _TYPES[name]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise UsageError(
                f"{name} holds {type(value).__name__} {value!r:.40}, expected {expected}"
            )


def validate(settings: Mapping[str, Any]) -> None:
    """Raise ``UsageError`` for any out-of-range setting. ``settings`` may lack ``source``
    and ``tokenizer`` (typed options checked before the recipe is complete: a resume takes
    the rest from its checkpoint); the others default as in :class:`Recipe`."""
    r = SimpleNamespace(**{**DEFAULTS, **settings})
    if not 0 <= r.val_fraction < 1:  # 0: no val split (the validation data lives elsewhere)
        raise UsageError(f"--val-fraction {r.val_fraction} must be in [0, 1): 0 <= F < 1")
    if not 0 <= r.seed < 2**32:
        raise UsageError(f"--seed {r.seed} must be in 0..2**32-1")
    if r.shuffle_buffer < 0:
        raise UsageError(f"--shuffle-buffer {r.shuffle_buffer} must be >= 0")
    budgets = (("--max-documents", r.max_documents), ("--train-tokens", r.train_tokens))
    for name, value in budgets:
        if value is not None and value <= 0:
            raise UsageError(f"{name} {value} must be > 0")
    if not 1 <= r.max_file_tokens <= 2**31 - 1:
        raise UsageError(f"--max-file-tokens {r.max_file_tokens} must be in 1..2**31-1")
    if r.pack not in PACKS:
        raise UsageError(f"--pack must be whole or fixed, not {r.pack!r}")
    if r.sep_position not in SEP_POSITIONS:
        raise UsageError(f"--sep-position must be prepend or append, not {r.sep_position!r}")
    if r.doc_sep_id is not None and r.doc_sep_id < 0:
        raise UsageError(f"--doc-sep-id {r.doc_sep_id} must be >= 0")
    if r.doc_sep_id is not None and r.no_doc_sep:
        raise UsageError("--doc-sep-id and --no-doc-sep contradict each other; give one")
    if not r.text_column:
        raise UsageError("--text-column must not be empty")
    if r.split_column is not None and r.split_column in ("", r.text_column):
        raise UsageError(
            f"--split-column {r.split_column!r} must name a column of its own, holding "
            f"'train' or 'val' on each row (not the text column {r.text_column!r}); or "
            "drop --split-column to split by content hash"
        )
    if r.part is not None:
        Part.parse(r.part)
        for name, value in budgets:
            if value is not None:
                raise UsageError(
                    f"{name} is a global budget, which cannot be honoured across independent "
                    f"parts: drop {name} with --part, or run the whole source in one run"
                )


@dataclass(frozen=True)
class RunOptions:
    """How to run: none of these changes a byte of the output."""

    out: Path | str  # a directory, or a bucket URI
    staging: Path | None = None  # a bucket --out's local staging (None: the default place)
    batch_size: int = DEFAULT_BATCH_SIZE
    threads: int | None = None  # tokenizer threads per worker (None: 1)
    workers: int | None = None  # worker processes (None: one per core)
    recycle_workers: int | None = None  # bytes of text after which a worker is replaced
    worker_memory: int = DEFAULT_WORKER_MEMORY  # resident bytes past which it is replaced
    engine: str = "auto"  # how ids are computed, never which (prep.encoders.engine)
    checkpoint_interval: float = 60.0
    resume: bool = False
    refresh: bool = False
    rehash: bool = False  # --refresh: hash every input, trust no fingerprint
    allow_version_change: bool = False
    log_interval: float = 30.0
    quiet: bool = False
    wait_lock: float = 0.0
    token: str | None = None  # Hugging Face token; never written to any file
    offline: bool = False  # the Hub through the local cache only (--offline, HF_HUB_OFFLINE)
    create_repo: bool = False  # a Hub --out: create the repository when it does not exist
    license: str | None = None  # a Hub --out: the dataset card's license
    card_template: Path | None = None  # a Hub --out: sections added to the dataset card
    # the command line, secrets masked (None: the library's); not a setting, so not compared
    argv: tuple[str, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.batch_size <= 0:
            raise UsageError(f"--batch-size {self.batch_size} must be > 0")
        if self.threads is not None and self.threads <= 0:
            raise UsageError(f"--threads {self.threads} must be > 0")
        if self.workers is not None and self.workers <= 0:
            raise UsageError(f"--workers {self.workers} must be > 0")
        if self.recycle_workers is not None and self.recycle_workers <= 0:
            raise UsageError(f"--recycle-workers {self.recycle_workers} must be > 0")
        if self.worker_memory <= 0:
            raise UsageError(f"--worker-memory {self.worker_memory} must be > 0")
        for name, value in (
            ("--checkpoint-interval", self.checkpoint_interval),
            ("--log-interval", self.log_interval),
        ):
            if not value > 0:
                raise UsageError(f"{name} {value} must be > 0")
        if not self.wait_lock >= 0:  # also NaN, which would never time out
            raise UsageError(f"--wait-lock {self.wait_lock} must be >= 0")
