"""JSON Lines read exactly as docs/format.md ("JSON Lines") decides: lines from 1, the last
line without a newline, blank lines, CRLF, a BOM, NUL and escapes; plain files cut into
line-aligned ranges anywhere, compressed files (written by Debian's gzip and zstd) read from
any row; and every bad line refused with its file, line, byte offset and fix."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.errors import InputError
from prep.sources import (
    block_batches,
    iter_batches,
    read_blocks,
    resolve_local,
    unit_batches,
    units_of,
)
from prep.sources import jsonl as jl
from prep.sources import jsonl_blocks as jb
from prep.sources import jsonl_fast as jf
from prep.sources.base import SourceFile, signature_of
from prep.sources.kinds import JSONL

EDGES = ["", " ", "a\nb", "tab\there", "nul\x00in", "😀 emoji", "é", "\r\n", "\u2028",
         "quote \" and \\ back", "\ufeffbom inside", "x" * 5000]
doc = st.one_of(st.sampled_from(EDGES), st.text(max_size=40))


def reference(data: bytes) -> list[str]:
    """The rules, naively: split at \\n (a final newline ends the last line), drop a BOM
    from the first line, a blank line is an empty text, else the object's "text"."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]
    return ["" if not ln.decode().strip(" \t\r") else json.loads(ln)["text"] for ln in lines]


def read(path: Path, columns: tuple[str, str | None] = ("text", None)) -> list[Any]:
    src = resolve_local(str(path))
    return [t for texts, _ in iter_batches(src, src.files[0], *columns) for t in texts]


def planned(path: Path) -> list[str]:
    """The texts as worker tasks read them: unit by unit, each from its own first row."""
    src = resolve_local(str(path))
    f = src.files[0]
    out: list[str] = []
    with open(path, "rb") as fobj:
        f.signature = signature_of(fobj)
        units = units_of(fobj, f)
        first = 0
        for u in units:
            for texts, _ in unit_batches(fobj, f, ("text", None), u, first, first, None):
                out += texts
            first += u.rows
    return out


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc, max_size=30), ascii_=st.booleans(), crlf=st.booleans(),
       final_newline=st.booleans(), blanks=st.lists(st.integers(0, 30), max_size=3),
       bom=st.booleans(), range_bytes=st.integers(1, 200), chunk=st.integers(1, 300))
def test_any_documents_read_back_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[str], ascii_: bool,
        crlf: bool, final_newline: bool, blanks: list[int], bom: bool, range_bytes: int,
        chunk: int) -> None:
    monkeypatch.setattr(jb, "RANGE_BYTES", range_bytes)  # ranges and reads cut anywhere
    monkeypatch.setattr(jb, "CHUNK_BYTES", chunk)
    lines = [json.dumps({"text": d, "n": i}, ensure_ascii=ascii_) for i, d in enumerate(docs)]
    for at in sorted(blanks, reverse=True):
        lines.insert(min(at, len(lines)), " \t" if at % 2 else "")
    end = "\r\n" if crlf else "\n"
    data = end.join(lines) + (end if final_newline and lines else "")
    raw = (b"\xef\xbb\xbf" if bom else b"") + data.encode()
    path = tmp_path / "d.jsonl"
    path.write_bytes(raw)
    expected = reference(raw)
    assert [t for t in expected if t] == [d for d in docs if d]
    assert read(path) == expected
    assert planned(path) == expected


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("z")
    plain = d / "c.jsonl"
    plain.write_text("".join(json.dumps({"text": f"doc {i}", "meta": i if i % 2 else {"a": i}})
                             + "\n" for i in range(10_000)))
    subprocess.run(["gzip", "-k", str(plain)], check=True)
    subprocess.run(["zstd", "-q", str(plain), "-o", str(d / "c.jsonl.zst")], check=True)
    return {"plain": plain, "gzip": d / "c.jsonl.gz", "zstd": d / "c.jsonl.zst"}


def test_a_plain_file_reads_from_any_start_to_any_stop(compressed: dict[str, Path]) -> None:
    path = compressed["plain"]
    src = resolve_local(str(path))
    f = src.files[0]
    with open(path, "rb") as fobj:
        f.signature = signature_of(fobj)
        [whole] = units_of(fobj, f)
        assert whole.rows == 10_000 and whole.end == path.stat().st_size
        got = [t for texts, _ in unit_batches(fobj, f, ("text", None), whole, 0, 4_321, 9_000)
               for t in texts]
    assert got == [f"doc {i}" for i in range(4_321, 9_000)]


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_compressed_file_is_decompressed_into_blocks_of_whole_lines(
        compressed: dict[str, Path], monkeypatch: pytest.MonkeyPatch, codec: str) -> None:
    monkeypatch.setattr(jb, "BLOCK_BYTES", 30_000)
    path = compressed[codec]
    src = resolve_local(str(path))
    f = src.files[0]
    blocks = list(read_blocks(src, f, None))
    assert len(blocks) > 5 and blocks[0][:2] == (0, 0)
    plain = compressed["plain"].read_bytes()
    for first, at, view, rows in blocks:  # offsets in the decompressed text
        data = bytes(view)
        assert plain[at:at + len(data)] == data and plain.count(b"\n", 0, at) == first
        assert rows == data.count(b"\n") + 1
    with open(path, "rb") as fobj:
        f.signature = signature_of(fobj)
        got = [t for b in blocks for texts, _ in block_batches(fobj, f, ("text", None), b,
                                                                4_321, 9_000) for t in texts]
    assert got == [f"doc {i}" for i in range(4_321, 9_000)]


@pytest.mark.parametrize("final_newline", [True, False])
def test_lines_longer_than_a_block_are_read_on_into_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, final_newline: bool) -> None:
    monkeypatch.setattr(jb, "BLOCK_BYTES", 30_000)
    docs = ["a", "b" * 70_000, "c", "d" * 200_000, "e" * 29_990, "f"]
    plain = tmp_path / "long.jsonl"
    data = "\n".join(json.dumps({"text": d}) for d in docs) + ("\n" if final_newline else "")
    plain.write_text(data)
    subprocess.run(["zstd", "-q", str(plain), "-o", str(tmp_path / "long.jsonl.zst")],
                   check=True)
    src = resolve_local(str(tmp_path / "long.jsonl.zst"))
    blocks = list(read_blocks(src, src.files[0], None))
    text = data.encode()
    for first, at, view, rows in blocks:
        body = bytes(view)
        assert text[at:at + len(body)] == body and text.count(b"\n", 0, at) == first
        assert rows == body.count(b"\n") + 1
    assert sum(rows for *_, rows in blocks) == len(docs)
    assert read(tmp_path / "long.jsonl.zst") == docs


def bad(tmp_path: Path, data: bytes, name: str = "bad.jsonl",
        columns: tuple[str, str | None] = ("text", None)) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read(path, columns)
    return str(info.value)


GOOD = b'{"text": "fine"}\n'


@pytest.mark.parametrize(("line", "message"), [
    (b'{"text": "a"', 'bad.jsonl line 2 (byte 29): not JSON (Expecting \',\' delimiter); each '
     "line must be one JSON object: fix or remove the line"),
    (b'["text"]', "bad.jsonl line 2 (byte 17): a list is not a JSON object; each line must be "
     "one JSON object: fix or remove the line"),
    (b'"text"', "bad.jsonl line 2 (byte 17): a string is not a JSON object;"),
    (b'{"txt": "a", "id": 3}', 'bad.jsonl line 2 (byte 17): no field "text" (it has "txt", '
     '"id"); choose the text field with --text-column'),
    (b'{"text": 3}', 'bad.jsonl line 2 (byte 17): field "text" is a number, expected a string; '
     "fix the line, or choose the text field with --text-column"),
    (b'{"text": null}', 'bad.jsonl line 2 (byte 17): field "text" is null, expected a string'),
    (b'{"text": ["a"]}', 'bad.jsonl line 2 (byte 17): field "text" is a list, expected a string'),
    (b'{"text": "\\ud800 lone"}', 'bad.jsonl line 2 (byte 17): field "text" holds a lone '
     "surrogate escape (\\ud800), which is no character and cannot be UTF-8"),
    (b'{"text": "caf\xe9"}', "bad.jsonl line 2 (byte 30): invalid UTF-8 (invalid continuation "
     "byte); JSON Lines must be UTF-8"),
    (b'\xef\xbb\xbf{"text": "a"}', "bad.jsonl line 2 (byte 17): a UTF-8 byte order mark (EF BB "
     "BF) starts the line; only a file's first line may start with one"),
])
def test_a_bad_line_is_refused_by_line_and_byte(tmp_path: Path, line: bytes, message: str
                                                ) -> None:
    assert bad(tmp_path, GOOD + line + b"\n" + GOOD).startswith(message)


def test_a_dotted_name_reaches_into_objects_and_other_fields_may_change_type(
        tmp_path: Path) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text('{"metadata": {"text": "a"}, "x": 1}\n{"metadata": {"text": "b"}, "x": {}}\n'
                    '{"metadata.text": "c", "metadata": "not an object"}\n')
    assert read(path, ("metadata.text", None)) == ["a", "b", "c"]
    assert bad(tmp_path, b'{"metadata": "s"}\n', columns=("metadata.text", None)).startswith(
        'bad.jsonl line 1 (byte 0): no field "metadata.text" (it has "metadata")')


def test_a_missing_split_field_is_refused(tmp_path: Path) -> None:
    data = b'{"text": "a", "split": "val"}\n{"text": "b"}\n'
    assert bad(tmp_path, data, columns=("text", "split")).startswith(
        'bad.jsonl line 2 (byte 30): no field "split"; give every line its split, or drop '
        "--split-column")


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_truncated_and_corrupt_compressed_files_are_refused(
        tmp_path: Path, compressed: dict[str, Path], codec: str) -> None:
    data = compressed[codec].read_bytes()
    name = f"bad.jsonl.{'gz' if codec == 'gzip' else 'zst'}"
    cut = bad(tmp_path, data[: len(data) // 2], name)
    assert cut.startswith(f"{name}: the {codec} data ends mid-frame after line "), cut
    assert cut.endswith("the file is truncated: download or copy it again")
    damaged = bytearray(data)
    damaged[len(data) // 2: len(data) // 2 + 8] = b"\x00\xff" * 4
    broken = bad(tmp_path, bytes(damaged), name)
    assert broken.startswith(f"{name}: the {codec} data is corrupt after line "), broken
    assert broken.endswith("the file is damaged: download or copy it again")


# Lines on which pyarrow's JSON reader and the rules could part: each must come out of a
# block exactly as the line-by-line parser gives it, or as its refusal.
AWKWARD = [
    b'{"text": "a"}', b'{"text": "\\u00e9\\ud83d\\ude00", "x": [1, {"y": null}]}',
    b'{"text": "\\ud800"}', b'{"text": "a", "x": "\\udc00"}', b'{"text": "a\\u0000"}',
    b'{"text": 5}', b'{"text": null}', b'{"id": 1}', b"[1]", b'"s"', b"", b" \t", b"\r",
    b'{"text": "a"}\r', b'{"text": "a"}{"text": "b"}', b'{"text": "a"}\r{"text": "b"}',
    b'{"text": "a", "text": "b"}', b'{"t\\u0065xt": "e"}', b'{"text": "a", "x": NaN}',
    b'{"text": "a", "x": 1e999}', b'{"text": "a", "x": "\xff"}', b'{"text": "\xed\xa0\x80"}',
    b'\xef\xbb\xbf{"text": "a"}', b'{"text": "a\tb"}', b'{"text": "a"} x', b'{"text": "a",}',
    b"\x00", b'{"text": "a", "split": "val"}', b'{"text": "a", "split": 1}',
    b'{"metadata": {"text": "m"}}', b'{"metadata.text": "d"}', b'  {"text": "w"}  ',
]


def exact(block: bytes, rows: int, columns: tuple[str, str | None], start: int,
          stop: int | None) -> tuple[list[Any], list[Any], str | None]:
    """What the line-by-line parser gives rows ``start``..``stop`` of a block: their texts
    and splits up to its refusal, and the refusal."""
    parser = jl.LineParser(FILE, JSONL, columns)
    texts: list[Any] = []
    splits: list[Any] = []
    pos = 0
    try:
        for row in range(rows):
            nl = block.find(b"\n", pos)
            if row >= start and (stop is None or row < stop):
                text, split = parser.parse(row, pos, block[pos:] if nl < 0 else block[pos:nl])
                texts.append(text)
                splits.append(split)
            pos = nl + 1
    except InputError as e:
        return texts, splits, str(e)
    return texts, splits, None


FILE = SourceFile("f.jsonl", Path("f.jsonl"), 0, kind=JSONL)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.one_of(st.sampled_from(AWKWARD), st.builds(
           lambda d, a: json.dumps({"text": d, "n": 1}, ensure_ascii=a).encode(), doc,
           st.booleans())), min_size=1, max_size=12),
       columns=st.sampled_from([("text", None), ("text", "split"), ("metadata.text", None)]),
       start=st.integers(0, 12), stop=st.one_of(st.none(), st.integers(0, 12)))
def test_a_block_reads_as_its_lines_do_one_by_one(lines: list[bytes],
                                                  columns: tuple[str, str | None], start: int,
                                                  stop: int | None) -> None:
    block = b"\n".join(lines)
    texts, splits, refusal = exact(block, len(lines), columns, start, stop)
    got_texts: list[Any] = []
    got_splits: list[Any] = []
    got_refusal = None
    try:
        for t, s in jl.block_batches(FILE, JSONL, columns, block, 0, len(lines), 0, start,
                                     stop):
            got_texts += t
            got_splits += s if s is not None else [None] * len(t)
    except InputError as e:
        got_refusal = str(e)
    assert (got_texts, got_refusal) == (texts, refusal)
    assert got_splits == (splits if columns[1] else [None] * len(texts))


def test_a_deeply_nested_line_reads_alike_on_both_paths(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Python's json stops at its recursion limit (1,000 levels) where the fast paths have
    none: a line 5,000 levels deep in a field no one reads is a document on both paths, and
    deeper than the exact parser's own bound is read by a fast path alone; one that it
    refuses is refused by name, not with a traceback."""
    deep = b'{"text": "deep", "m": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    block = GOOD + deep
    assert jf.arrow_texts(block, 2, ("text", None)) == (["fine", "deep"], None)
    assert jf.fast_texts(block, 2, ("text", None)) == (["fine", "deep"], None)
    assert exact(block, 2, ("text", None), 0, None) == (["fine", "deep"], [None, None], None)
    monkeypatch.setattr(jl, "_DEEP_LEVELS", 2000)
    assert exact(block, 2, ("text", None), 0, None) == (["fine", "deep"], [None, None], None)
    unclosed = b'{"text": "deep", "m": ' + b"[" * 5000 + b"]" * 4999 + b"}"
    assert exact(GOOD + unclosed, 2, ("text", None), 0, None)[2] == (
        "f.jsonl line 2 (byte 17): nested more than 2,000 levels deep; flatten the line or "
        "remove it")
