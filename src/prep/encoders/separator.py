"""Where the document separator comes from: an explicit choice, or the tokenizer's own files.

In order: ``--no-doc-sep`` (none), ``--doc-sep-id N``, ``eos_token_id`` of the
``generation_config.json`` beside ``tokenizer.json`` (a list: its first entry), ``eos_token``
of the ``tokenizer_config.json`` beside it (a string or an added-token object, mapped to its
id by the tokenizer). A real tokenizer with none of these is refused: documents glued
together without a separator are almost never intended, so that takes ``--no-doc-sep``. The
byte tokenizer has no files; it has no separator unless ``--doc-sep-id`` gives one.

The choice records its origin (the flag or the file), so a resume that finds a different
separator can name the file that changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prep.errors import InputError

GENERATION_CONFIG = "generation_config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TYPED = "--doc-sep-id"
NONE_TYPED = "--no-doc-sep"

TokenToId = Callable[[str], int | None]


@dataclass(frozen=True)
class Separator:
    """The separator id (None: no separator) and where it came from: ``--doc-sep-id``,
    ``--no-doc-sep``, a config file's path, or None (the byte tokenizer's default)."""

    id: int | None
    origin: str | None


def _read_config(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(
            f"{path}: unreadable {path.name} ({e}); fix it, or give --doc-sep-id N or --no-doc-sep",
            path=path,
        ) from e
    return data if isinstance(data, dict) else {}


def eos_from_generation_config(directory: Path) -> int | None:
    """``eos_token_id`` of ``generation_config.json`` in ``directory`` (a list: its first
    entry), or None when there is no such file or key."""
    cfg = directory / GENERATION_CONFIG
    data = _read_config(cfg)
    eos = data.get("eos_token_id") if data else None
    if isinstance(eos, list):
        eos = eos[0] if eos else None
    if eos is not None and (not isinstance(eos, int) or isinstance(eos, bool)):
        raise InputError(
            f"{cfg}: eos_token_id {eos!r} is not an integer; fix it or give --doc-sep-id",
            path=cfg,
        )
    return eos


def eos_from_tokenizer_config(directory: Path, token_to_id: TokenToId) -> int | None:
    """The id of ``eos_token`` in ``tokenizer_config.json`` in ``directory``, or None when
    there is no such file or key. Raises ``InputError`` for a token the vocabulary lacks."""
    cfg = directory / TOKENIZER_CONFIG
    data = _read_config(cfg)
    eos = data.get("eos_token") if data else None
    if isinstance(eos, dict):  # an added-token object: {"content": "</s>", ...}
        eos = eos.get("content")
    if eos is None:
        return None
    token_id = token_to_id(eos) if isinstance(eos, str) else None
    if token_id is None:
        raise InputError(
            f"{cfg}: eos_token {eos!r} is not a token of the tokenizer beside it; fix it, or "
            "give --doc-sep-id N or --no-doc-sep",
            path=cfg,
        )
    return token_id


def choose_separator(
    spec: str,
    *,
    typed: int | None,
    no_sep: bool,
    vocab_size: int | None,
    directory: Path | None = None,
    token_to_id: TokenToId | None = None,
    required: bool = True,
) -> Separator:
    """The separator for the tokenizer ``spec`` whose files are in ``directory`` (None: the
    byte tokenizer). ``vocab_size`` None skips the range checks (a cheap fingerprint).

    Raises ``InputError`` (exit 1: seeing it needs the tokenizer opened) for a typed or a
    configured id outside the vocabulary, or, when ``required``, for a real tokenizer with no
    separator configured. A resume passes ``required=False`` so that a vanished config file
    is reported as a changed separator, naming the file."""
    if no_sep:
        return Separator(None, NONE_TYPED)
    if typed is not None:
        if vocab_size is not None and not 0 <= typed < vocab_size:
            raise InputError(
                f"--doc-sep-id {typed:,} is outside the vocabulary of {spec} (size "
                f"{vocab_size:,}); choose an id below {vocab_size:,} or pass --no-doc-sep"
            )
        return Separator(typed, TYPED)
    if directory is None or token_to_id is None:  # the byte tokenizer: no files
        return Separator(None, None)
    found = _configured(directory, token_to_id)
    if found.id is None and required:
        raise InputError(
            f"--tokenizer {spec}: no document separator is configured (no eos_token_id in "
            f"{directory / GENERATION_CONFIG}, no eos_token in {directory / TOKENIZER_CONFIG}); "
            "documents would be concatenated with nothing between them. Pass --doc-sep-id N "
            "(the tokenizer's end-of-text id) or --no-doc-sep to mean exactly that",
            path=spec,
        )
    if found.id is not None and vocab_size is not None and not 0 <= found.id < vocab_size:
        raise InputError(
            f"{found.origin}: the end-of-text id {found.id:,} is outside the vocabulary of "
            f"{spec} (size {vocab_size:,}); fix it, or give --doc-sep-id or --no-doc-sep",
            path=found.origin,
        )
    return found


def _configured(directory: Path, token_to_id: TokenToId) -> Separator:
    eos = eos_from_generation_config(directory)
    if eos is not None:
        return Separator(eos, str(directory / GENERATION_CONFIG))
    eos = eos_from_tokenizer_config(directory, token_to_id)
    if eos is not None:
        return Separator(eos, str(directory / TOKENIZER_CONFIG))
    return Separator(None, None)
