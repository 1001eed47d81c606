"""The document separator: typed (``--doc-sep-id``), none (``--no-doc-sep``), or the
``eos_token_id`` of the ``generation_config.json`` beside a tokenizer; checked against the
vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

from prep.errors import InputError, UsageError


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


def choose_sep(
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
