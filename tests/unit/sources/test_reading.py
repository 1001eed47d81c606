"""One reader per kind behind one map: the same documents read back alike from every kind,
and the main process's plan of a file remembered for the signature it was made at."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from prep.sources import identify, iter_batches, resolve_local

TEXTS = ["a", "", "b c", "😀", "x" * 3000]


def test_every_kind_reads_back_the_same_documents(tmp_path: Path) -> None:
    pq.write_table(pa.table({"text": TEXTS}), tmp_path / "a.parquet", row_group_size=2)
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    subprocess.run(["gzip", "-k", str(tmp_path / "b.jsonl")], check=True)
    subprocess.run(["zstd", "-q", str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "c.jsonl.zst")],
                   check=True)
    with pa.ipc.new_stream(tmp_path / "d.arrow", pa.schema([("text", pa.string())])) as w:
        w.write_table(pa.table({"text": TEXTS}))
    src = resolve_local(str(tmp_path))
    assert [f.path for f in src.files] == ["a.parquet", "b.jsonl", "b.jsonl.gz", "c.jsonl.zst",
                                           "d.arrow"]
    for f in src.files:
        got = [t for texts, _ in iter_batches(src, f, "text", None) for t in texts]
        assert got == TEXTS, f.path
        assert f.kind.row_word == ("line" if "jsonl" in f.path else "row")


def test_a_plan_is_remembered_for_its_signature_only(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"text": "a"}\n{"text": "b"}\n')
    src = resolve_local(str(path))
    f = src.files[0]
    sig, units = identify(src, f)
    assert units is not None and [u.rows for u in units] == [2]
    assert f.units == (sig, tuple(units))
    with open(path, "a") as out:  # appended to: a new signature, planned again
        out.write('{"text": "c"}')
    f.size = os.stat(path).st_size
    sig2, units2 = identify(src, f)
    assert sig2 != sig and units2 is not None and [u.rows for u in units2] == [3]
