"""Independent oracles for the e2e tests, written from the spec, not from prep's code.

Everything here re-derives what docs/format.md pins (the llm.c header, the prefix digest, the
content-hash split, canonical JSON) with the standard library, so a test compares prep's
output against a second implementation instead of against prep itself.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from conftest import bin_ids, split_bins
from spec_model import spec_is_val, spec_prefix_digest

MAGIC = 20240520
HEADER_BYTES = 1024
SPLITS = ("train", "val")


def header_ints(path: Path) -> tuple[int, ...]:
    """The 256 little-endian int32 of a .bin header."""
    return struct.unpack("<256i", path.read_bytes()[:HEADER_BYTES])


def expected_bin(ids: Sequence[int], vocab_size: int) -> bytes:
    """The exact bytes docs/format.md prescribes for ``ids`` (version from V)."""
    version = 1 if vocab_size <= 65536 else 2
    head = struct.pack("<256i", MAGIC, version, len(ids), vocab_size, *([0] * 252))
    return head + struct.pack(f"<{len(ids)}{'H' if version == 1 else 'I'}", *ids)


def split_ids(out: Path, split: str) -> list[int]:
    """The concatenation of a split's files, in file order."""
    ids: list[int] = []
    for path in split_bins(out, split):
        ids += bin_ids(path)
    return ids


def file_lengths(out: Path, split: str) -> list[int]:
    return [len(bin_ids(p)) for p in split_bins(out, split)]


prefix_sha256 = spec_prefix_digest


is_val = spec_is_val


def is_empty(text: str) -> bool:
    return text.strip() == ""


def canonical(obj: Any) -> bytes:
    """docs/format.md's canonical JSON."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "_MANIFEST.json").read_bytes())


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and mtime: to prove nothing was touched."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def with_seps(docs: Iterable[Sequence[int]], sep: int | None, position: str = "prepend"
              ) -> list[int]:
    """A split's expected stream: each document's ids with its separator."""
    out: list[int] = []
    for ids in docs:
        if sep is None:
            out += ids
        elif position == "prepend":
            out += [sep, *ids]
        else:
            out += [*ids, sep]
    return out


def rollover(doc_lengths: Iterable[int], max_file_tokens: int) -> list[int]:
    """docs/format.md's rule: the token count of each file, given each document's length
    (separator included). A file is closed before a document that would push it past the
    limit, unless it is empty."""
    files = [0]
    for n in doc_lengths:
        if files[-1] > 0 and files[-1] + n > max_file_tokens:
            files.append(0)
        files[-1] += n
    return files


def leftovers(parent: Path, name: str) -> list[str]:
    """What a run left beside ``parent/name`` besides the lock: staging, temp dirs."""
    return sorted(
        p.name
        for p in parent.iterdir()
        if p.name.startswith((name, "." + name)) and p.name not in (f"{name}.lock",)
    )
