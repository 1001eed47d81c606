"""What a file is, told by its content (docs/format.md, "Source files"): every magic the
standard tools write, a name that claims a kind, and a name and content that disagree."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.errors import InputError
from prep.globs import listed
from prep.sources.kinds import ARROW, JSONL, JSONL_GZ, JSONL_ZST, PARQUET, kind_of


def _arrow(stream: bool) -> bytes:
    buf = io.BytesIO()
    table = pa.table({"text": ["a"]})
    with (pa.ipc.new_stream if stream else pa.ipc.new_file)(buf, table.schema) as w:
        w.write_table(table)
    return buf.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("kinds")
    (d / "a.jsonl").write_text('{"text": "x"}\n')
    pq.write_table(pa.table({"text": ["x"]}), d / "a.parquet")
    (d / "a.arrow").write_bytes(_arrow(stream=False))
    (d / "s.arrow").write_bytes(_arrow(stream=True))
    subprocess.run(["gzip", "-k", str(d / "a.jsonl")], check=True)
    subprocess.run(["zstd", "-q", str(d / "a.jsonl"), "-o", str(d / "a.jsonl.zst")], check=True)
    return {p.name: p for p in d.iterdir()}


def kind(path: Path, name: str | None = None) -> object:
    with open(path, "rb") as fobj:
        found = kind_of(name or path.name, fobj)
        assert fobj.tell() == 0  # read again from the start
        return found


@pytest.mark.parametrize(("name", "expected"), [
    ("a.jsonl", JSONL), ("a.parquet", PARQUET), ("a.arrow", ARROW), ("s.arrow", ARROW),
    ("a.jsonl.gz", JSONL_GZ), ("a.jsonl.zst", JSONL_ZST),
])
def test_each_kind_is_told_by_its_content(files: dict[str, Path], name: str,
                                          expected: object) -> None:
    assert kind(files[name]) == expected
    assert kind(files[name], "data") == expected  # a name that claims nothing


def test_a_bom_and_blank_lines_before_the_first_object_are_json_lines(tmp_path: Path) -> None:
    p = tmp_path / "x"
    p.write_bytes(b'\xef\xbb\xbf\n  \r\n{"text": "a"}\n')
    assert kind(p) == JSONL


@pytest.mark.parametrize(("name", "as_name", "says", "is_"), [
    ("a.jsonl.gz", "a.jsonl.zst", "zstd-compressed JSON Lines", "gzip-compressed JSON Lines"),
    ("a.parquet", "a.jsonl", "JSON Lines", "Parquet"),
    ("a.jsonl", "a.parquet", "Parquet", "JSON Lines"),
    ("a.jsonl.zst", "a.arrow", "Arrow IPC", "zstd-compressed JSON Lines"),
    ("a.jsonl", "a.json.gz", "gzip-compressed JSON Lines", "JSON Lines"),
])
def test_a_name_and_a_content_that_disagree_are_refused_naming_both(
        files: dict[str, Path], name: str, as_name: str, says: str, is_: str) -> None:
    with pytest.raises(InputError) as info:
        kind(files[name], as_name)
    assert str(info.value).startswith(
        f"{as_name}: its name says {says} but its content is {is_} (it starts with bytes ")
    assert "rename the file to match what it holds, or replace it" in str(info.value)


def test_content_of_no_kind_under_a_name_of_none_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "notes.txt"
    p.write_text("hello\n")
    with pytest.raises(InputError, match=r"^notes.txt: not a file prep reads \(it starts with "
                       r"bytes 68 65 6c 6c 6f 0a\); give Parquet"):
        kind(p)


def test_an_empty_file_is_what_its_name_says(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_bytes(b"")
    assert kind(p) == JSONL


def test_a_listing_takes_data_names_and_leaves_plain_json_out() -> None:
    taken = ["a.parquet", "b.arrow", "c.jsonl", "d.jsonl.gz", "e.json.gz", "f.jsonl.zst",
             "g.jsonl.zstd", "H.JSONL.ZST", "i.ndjson"]
    left = ["dataset_info.json", "state.json", "README.md", "x.gz", ".gitattributes"]
    assert [n for n in taken + left if listed(n)] == taken
