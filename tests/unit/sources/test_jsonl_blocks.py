"""JSON Lines bytes cut into whole lines, checked against a naive cut of the same bytes:
newlines counted, a plain file's ranges end at line ends, and a compressed file (written by
Debian's zstd) decompresses into blocks that are its lines, in order, with their offsets and
first line numbers, whatever the block size."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.sources import jsonl_blocks as jb
from prep.sources.base import SourceFile, signature_of
from prep.sources.kinds import kind_of


@given(data=st.binary(max_size=300), start=st.integers(0, 300), end=st.integers(0, 300))
def test_newlines_are_counted_as_bytes_count_does(data: bytes, start: int, end: int) -> None:
    start, end = min(start, len(data)), min(end, len(data))
    end = max(start, end)
    assert jb.newlines(data, start, end) == data.count(b"\n", start, end)
    assert jb.newlines(memoryview(data), start, end) == data.count(b"\n", start, end)


def cut(path: Path, constant: str, size: int, read: Callable[..., Any]) -> Any:
    """``read(fobj, f, kind)`` of the file at ``path`` with ``jb.<constant>`` set to
    ``size``."""
    old = getattr(jb, constant)
    setattr(jb, constant, size)
    f = SourceFile(path.name, path, path.stat().st_size)
    try:
        with open(path, "rb") as fobj:
            f.signature = signature_of(fobj)
            return read(fobj, f, kind_of(f.path, fobj))
    finally:
        setattr(jb, constant, old)


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("b")
    plain = d / "t.jsonl"
    plain.write_text("".join(json.dumps({"text": "x" * (i * 37 % 900)}) + "\n"
                             for i in range(3000)))
    subprocess.run(["zstd", "-q", str(plain), "-o", str(d / "t.jsonl.zst")], check=True)
    return plain, d / "t.jsonl.zst"


@settings(max_examples=8, deadline=None)
@given(size=st.integers(500, 60_000))
def test_ranges_end_at_line_ends(text: tuple[Path, Path], size: int) -> None:
    plain = text[0]
    data = plain.read_bytes()
    units = cut(plain, "RANGE_BYTES", size,
                lambda fobj, f, kind: jb.count_lines(fobj, f, kind, f.size))
    assert units[0].at == 0 and units[-1].end == len(data)
    for u, v in itertools.pairwise(units):
        assert u.end == v.at and data[u.end - 1:u.end] == b"\n"
    assert [u.rows for u in units] == [data.count(b"\n", u.at, u.end) for u in units]


@settings(max_examples=8, deadline=None)
@given(size=st.integers(500, 60_000))
def test_blocks_are_the_lines_in_order(text: tuple[Path, Path], size: int) -> None:
    plain, packed = text
    data = plain.read_bytes()
    got = cut(packed, "BLOCK_BYTES", size, lambda *a: list(jb.blocks(*a)))
    assert b"\n".join(bytes(body) for _, _, body, _ in got) + b"\n" == data
    for first, at, body, rows in got:
        assert data[at:at + len(body)] == bytes(body)
        assert first == data.count(b"\n", 0, at) and rows == bytes(body).count(b"\n") + 1
