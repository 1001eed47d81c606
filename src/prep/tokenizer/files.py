"""The files of a trained tokenizer, as bytes (deterministic: the same tokenizer gives the
same bytes), and reading them back.

- BPE: ``tokenizer.json`` in Hugging Face's format, with the recipe docs/tokenizer.md
  checks: a ``BPE`` model whose ``vocab`` keys are each piece's bytes through GPT-2's
  byte-to-unicode table, mapped to the rules' ids (``0..255`` are the raw byte values, not
  GPT-2's order); ``merges`` as ``"left right"`` strings in training order (tokenizers 0.15
  rejects the list form); no unknown token, no byte fallback, merges not ignored; a
  ``ByteLevel`` pre-tokenizer without prefix space or regex (a document is one word), or,
  trained with a pre-tokenizer, the ``Split`` of its regex (isolating each match) before
  that ``ByteLevel``; a ``ByteLevel`` decoder; no normalizer.
- byte: ``byte_vocabulary.json``, prep's own (:mod:`prep.encoders.vocab_bytes`, which
  ``prepare`` reads it with), because Hugging Face drops characters it does not know.
- ``generation_config.json`` when special tokens are given: the first is the separator.

Special tokens take the ids after the learned vocabulary, in the order given.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prep.encoders.merges import byte_to_unicode, merge_table
from prep.encoders.vocab_bytes import BYTE_FILE, read_byte_file
from prep.errors import InputError
from prep.tokenizer.pretokenize import NONE, name_of, split_json

TOKENIZER_FILE = "tokenizer.json"
GENERATION_CONFIG = "generation_config.json"


def _dumps(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def pieces_of(merges: Sequence[tuple[int, int]]) -> list[bytes]:
    """Every id's bytes: the 256 bytes, then each merge's two pieces concatenated."""
    pieces = [bytes([b]) for b in range(256)]
    for a, b in merges:
        pieces.append(pieces[a] + pieces[b])
    return pieces


def _added(specials: Sequence[str], first_id: int) -> list[dict[str, Any]]:
    return [
        {"id": first_id + k, "content": text, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for k, text in enumerate(specials)
    ]


def tokenizer_json(merges: Sequence[tuple[int, int]], specials: Sequence[str] = (),
                   pre_tokenizer: str = NONE) -> bytes:
    """``tokenizer.json`` for the merge table (module docstring). Raises ``ValueError`` when
    two ids share one piece, which a ``vocab`` keyed by pieces cannot express."""
    table = byte_to_unicode()
    names = ["".join(table[b] for b in piece) for piece in pieces_of(merges)]
    vocab = {name: i for i, name in enumerate(names)}
    if len(vocab) != len(names):
        dup = next(n for i, n in enumerate(names) if vocab[n] != i)
        raise ValueError(f"two ids share the piece {dup!r}; tokenizer.json cannot express it")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    split = split_json(pre_tokenizer)
    pre = byte_level if split is None else {"type": "Sequence",
                                            "pretokenizers": [split, byte_level]}
    config = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added(specials, len(names)),
        "normalizer": None,
        "pre_tokenizer": pre,
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
            "byte_fallback": False, "ignore_merges": False, "vocab": vocab,
            "merges": [f"{names[a]} {names[b]}" for a, b in merges],
        },
    }
    return _dumps(config)


def generation_config(separator_id: int) -> bytes:
    """``generation_config.json`` naming the separator (prepare reads ``eos_token_id``)."""
    return _dumps({"eos_token_id": separator_id})


def _bad(path: Path, why: str) -> InputError:
    return InputError(f"{path}: {why}; give a directory prep train-tokenizer wrote", path=path)


def _config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        config["model"]["vocab"], config["model"]["merges"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise _bad(path, f"not a tokenizer.json with a BPE model ({e!r})") from e
    return config  # type: ignore[no-any-return]


def pre_tokenizer_of(path: Path, config: dict[str, Any] | None = None) -> str:
    """The pre-tokenizer a ``tokenizer.json`` written by :func:`tokenizer_json` names."""
    pre = (config if config is not None else _config(path)).get("pre_tokenizer") or {}
    parts = (pre.get("pretokenizers") or []) if pre.get("type") == "Sequence" else []
    pattern = ((parts[0].get("pattern") or {}).get("Regex") if parts else None)
    if pre.get("type") == "Sequence" and not isinstance(pattern, str):
        raise _bad(path, "its pre-tokenizer is not a Split regex before ByteLevel")
    name = name_of(pattern)
    if name is None:
        raise _bad(path, f"its split regex {str(pattern)[:40]!r}... is none of prep's "
                   "pre-tokenizers")
    return name


def merges_of(path: Path, config: dict[str, Any] | None = None) -> list[tuple[int, int]]:
    """The merge table of a ``tokenizer.json`` written by :func:`tokenizer_json` (ids
    checked against the rules: merge ``k`` makes id ``256 + k``); ``config``: the file
    already parsed."""
    model = (config if config is not None else _config(path))["model"]
    try:
        return merge_table(model["vocab"], model["merges"])
    except ValueError as e:
        raise _bad(path, str(e)) from None


def state_extras(pre_tokenizer: str, specials: Sequence[str]) -> dict[str, Any]:
    """A :meth:`prep.Tokenizer.state`'s optional members: the pre-tokenizer unless ``none``,
    the special tokens when any."""
    out: dict[str, Any] = {} if pre_tokenizer == NONE else {"pre_tokenizer": pre_tokenizer}
    return out | ({"special_tokens": list(specials)} if specials else {})


def load_state(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The :meth:`prep.Tokenizer.state` of a trained directory (its learned vocabulary;
    special tokens are not part of it)."""
    root = Path(directory)
    if (root / BYTE_FILE).is_file():
        values, specials = read_byte_file(root / BYTE_FILE)
        return {"version": 1, "method": "byte", "bytes": values, **state_extras(NONE, specials)}
    if (root / TOKENIZER_FILE).is_file():
        path = root / TOKENIZER_FILE
        config = _config(path)
        specials = [str(t["content"]) for t in config.get("added_tokens") or []
                    if t.get("special")]
        return {"version": 1, "method": "bpe",
                "merges": [list(m) for m in merges_of(path, config)],
                **state_extras(pre_tokenizer_of(path, config), specials)}
    raise InputError(
        f"{root}: holds neither {TOKENIZER_FILE} nor {BYTE_FILE}; give the --out directory "
        "of prep train-tokenizer",
        path=root,
    )
