"""Deriving a guard (:mod:`prep.encoders.guard`): the code points on which the fast engine
and ``tokenizers`` give different ids, found by trying every one.

For each code point ``c`` from U+0080 to U+10FFFF (surrogates cannot be in a ``str`` of
UTF-8 text) one document joins :data:`CONTEXTS` with ``c`` in place: a contraction after
it, digits and spaces around it, whitespace runs, punctuation, line ends; both engines
encode it (in batches, ``tokenizers`` on its thread pool), and ``c`` is guarded when the
ids differ. What differs is the engines' character classes, so the set depends on the
split pattern; the vocabulary only decides whether a different split shows in the ids,
which is why the contexts put ``c`` next to what byte-level vocabularies merge (``'d``,
`` 1``, spaces). Run through ``scripts/derive_guard.py``; a CI test re-derives a sample
range and compares it with the shipped set (tests/unit/encoders/test_guard_derive.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from prep.encoders.engine import Reference
from prep.encoders.gigatoken import ENGINE, GigatokenEncoder, _backend, plan, planned_json
from prep.encoders.guard import FORMAT, format_ranges, parse_ranges, pattern_key
from prep.fsio import atomic_write_bytes
from prep.state.versions import installed_version

CONTEXTS = (
    "a{c}'d x",
    " {c}{c} 1{c}2",
    "{c}  \t{c}",
    "{c}'s {c}'LL x{c}'ve",
    "x{c}y {c}1 1{c} 12{c}345",
    "!{c}! ({c}) {c}. ,{c}",
    "{c}\r\n{c}\n\n {c}",
    " {c} ",
)
FIRST, LAST = 0x80, 0x10FFFF
BATCH = 1 << 15


def code_points(first: int, last: int) -> Iterator[int]:
    """``first`` to ``last`` inclusive, without the surrogates."""
    return (c for c in range(first, last + 1) if not 0xD800 <= c <= 0xDFFF)


def document(c: int) -> str:
    """The one document that tries ``c`` in every context."""
    ch = chr(c)
    return "\n".join(ctx.replace("{c}", ch) for ctx in CONTEXTS)


def fast_engine(json_path: Path) -> tuple[GigatokenEncoder, str | None]:
    """gigatoken for the file, unguarded (what is being measured), and its split pattern."""
    raw = json_path.read_bytes()
    steps = plan(raw)
    reference = Reference(str(json_path))
    return GigatokenEncoder(_backend(planned_json(raw, steps)), (), reference), steps["pattern"]


def differing(engine: GigatokenEncoder, first: int, last: int, batch: int = BATCH
              ) -> list[int]:
    """The code points in ``first..last`` whose :func:`document` gets different ids from
    the fast engine and from its reference."""
    out: list[int] = []
    cps = list(code_points(first, last))
    for i in range(0, len(cps), batch):
        chunk = cps[i : i + batch]
        texts = [document(c) for c in chunk]
        utf8 = [t.encode("utf-8") for t in texts]
        got, want = engine.encode_fast(utf8), engine.reference(texts, utf8)
        for c, a, b in zip(chunk, got.split(), want.split(), strict=True):
            if not np.array_equal(a, b):
                out.append(c)
    return out


def restricted(ranges: Sequence[str], first: int, last: int) -> list[int]:
    """The code points of shipped ``ranges`` within ``first..last``."""
    return [c for lo, hi in parse_ranges(ranges)
            for c in range(max(lo, first), min(hi, last) + 1)]


def with_pattern(json_path: Path, pattern: str, into: Path) -> Path:
    """A copy of ``json_path`` (its first pre-tokenizer a Split) at ``into`` whose split
    regex is ``pattern``: a pattern whose own vocabulary is not at hand (o200k's) is tried
    with another byte-level vocabulary."""
    config = json.loads(json_path.read_text(encoding="utf-8"))
    config["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": pattern}
    into.write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return into


def entry(json_path: Path, name: str, first: int = FIRST, last: int = LAST,
          pattern: str | None = None) -> dict[str, Any]:
    """The shipped entry for ``json_path``'s split pattern, or for ``pattern`` put in
    its place (see ``guards/*.json``)."""
    source = f"{json_path.name} sha256 {hashlib.sha256(json_path.read_bytes()).hexdigest()}"
    if pattern is not None:
        source += " with its split pattern replaced"
        with tempfile.TemporaryDirectory() as tmp:
            return entry(with_pattern(json_path, pattern, Path(tmp) / "tokenizer.json"), name,
                         first, last) | {"derived_with": source}
    engine, split = fast_engine(json_path)
    if split is None:
        raise SystemExit(f"{json_path}: its Split pattern is a plain string, not a regex")
    found = differing(engine, first, last)
    return {
        "name": name,
        "pattern": split,
        "derived_with": source,
        "tokenizers": installed_version("tokenizers"),
        "contexts": list(CONTEXTS),
        "searched": f"{first:04X}-{last:04X}",
        "code_points": len(found),
        "ranges": format_ranges(found),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="derive_guard.py",
        description="Derive the fast engine's guard set for a tokenizer.json's split pattern "
                    "and write it into the shipped file (or compare with it: --check).")
    p.add_argument("tokenizer", type=Path, nargs="+", help="tokenizer.json files")
    p.add_argument("--name", action="append", default=[], help="a name per file (gpt2...)")
    p.add_argument("--first", type=lambda s: int(s, 16), default=FIRST, help="hex, U+0080")
    p.add_argument("--last", type=lambda s: int(s, 16), default=LAST, help="hex, U+10FFFF")
    p.add_argument("--pattern", help="try this split regex in the file's place")
    p.add_argument("--out", type=Path, help="the guards JSON to update (default: shipped)")
    p.add_argument("--check", action="store_true",
                   help="compare with the shipped set within --first..--last; exit 1 on drift")
    args = p.parse_args(argv)
    version = installed_version(ENGINE)
    out = args.out or Path(__file__).with_name("guards") / f"{ENGINE}-{version}.json"
    data: dict[str, Any] = (json.loads(out.read_text(encoding="utf-8")) if out.exists()
            else {"format": FORMAT, "engine": ENGINE, "version": version, "patterns": {}})
    drift = 0
    for k, path in enumerate(args.tokenizer):
        t = time.monotonic()
        name = args.name[k] if k < len(args.name) else path.parent.name
        new = entry(path, name, args.first, args.last, args.pattern)
        key = pattern_key(new["pattern"])
        print(f"{name}: {new['code_points']:,} code points differ in {new['searched']} "
              f"({time.monotonic() - t:.0f} s), sha256 {key[:12]}")
        if args.check:
            old = data["patterns"].get(key)
            shipped = [] if old is None else restricted(old["ranges"], args.first, args.last)
            found = restricted(new["ranges"], args.first, args.last)
            if shipped != found:
                drift += 1
                print(f"{name}: DRIFT: shipped {format_ranges(shipped)}, now {new['ranges']}")
        else:
            data["patterns"][key] = new
    if not args.check:
        atomic_write_bytes(out, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode())
        print(f"wrote {out}")
    return 1 if drift else 0
