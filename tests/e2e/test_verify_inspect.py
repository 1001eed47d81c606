"""``prep verify`` (exit 0 on a fresh dataset, exit 1 with a line naming the damaged file)
and ``prep inspect`` on a .bin file, a dataset and a staging directory."""

from __future__ import annotations

import json
import re
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    FIXTURES,
    GPT2_DIR,
    PREPARE,
    bin_ids,
    dir_bytes,
    make_corpus,
    numbered_docs,
    split_bins,
    write_parquet,
)
from golden_corpus import tiktoken_gpt2

from .helpers import snapshot

SEP = 0


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A published byte-level dataset with several files in each split."""
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp("verify")
    src = make_corpus(root / "src", [numbered_docs(70), numbered_docs(50, start=70)])
    out = root / "ds"
    code = main(["prepare", "--tokenizer", "byte",
                 "--out", str(out), "--source", str(src), "--val-fraction", "0.3",
                 "--doc-sep-id", str(SEP), "--max-file-tokens", "1500", "--quiet"])
    assert code == 0
    assert len(split_bins(out, "train")) >= 3 and len(split_bins(out, "val")) >= 2
    return out


@pytest.fixture
def copy(dataset: Path, tmp_path: Path) -> Path:
    target = tmp_path / "ds"
    shutil.copytree(dataset, target)
    return target


def _edit_manifest(ds: Path, change: Any) -> None:
    path = ds / "_MANIFEST.json"
    m = json.loads(path.read_bytes())
    change(m)
    path.write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _flip_id_byte(ds: Path) -> None:
    p = ds / "train-00001.bin"
    data = bytearray(p.read_bytes())
    data[1024 + 2 * 7] ^= 0x01  # low byte: the id stays inside the vocabulary
    p.write_bytes(bytes(data))


def _id_outside_vocab(ds: Path) -> None:
    p = ds / "train-00001.bin"
    data = bytearray(p.read_bytes())
    data[1024 + 2 * 7 + 1] = 0x01  # high byte: id >= 256
    p.write_bytes(bytes(data))


def _truncate(ds: Path) -> None:
    p = ds / "train-00001.bin"
    p.write_bytes(p.read_bytes()[:-2])


def _header_n(ds: Path) -> None:
    p = ds / "train-00001.bin"
    data = bytearray(p.read_bytes())
    n = struct.unpack_from("<i", data, 8)[0]
    struct.pack_into("<i", data, 8, n - 1)
    p.write_bytes(bytes(data[:-2]))  # a consistent, shorter file: only the manifest knows


def _file_n_tokens(ds: Path) -> None:
    def change(m: dict[str, Any]) -> None:
        entry = next(f for f in m["files"] if f["name"] == "train-00001.bin")
        entry["n_tokens"] += 1
    _edit_manifest(ds, change)


def _total_tokens(ds: Path) -> None:
    _edit_manifest(ds, lambda m: m["totals"]["train"].update(
        n_tokens=m["totals"]["train"]["n_tokens"] + 3))


def _total_docs(ds: Path) -> None:
    _edit_manifest(ds, lambda m: m["totals"]["val"].update(
        n_docs=m["totals"]["val"]["n_docs"] - 1))


def _extra_bin(ds: Path) -> None:
    shutil.copy(ds / "train-00000.bin", ds / "train-00099.bin")


DAMAGE = {  # what is done -> the file or split a FAIL line must name, and what it must say
    "flipped-id-byte": (_flip_id_byte, "train-00001.bin", "SHA-256"),
    "id-outside-vocab": (_id_outside_vocab, "train-00001.bin", "outside the vocabulary"),
    "truncated": (_truncate, "train-00001.bin", "truncated"),
    "deleted": (lambda ds: (ds / "train-00001.bin").unlink(), "train-00001.bin", "missing"),
    "header-n-and-size": (_header_n, "train-00001.bin", "n_tokens"),
    "manifest-file-n-tokens": (_file_n_tokens, "train-00001.bin", "n_tokens"),
    "manifest-total-tokens": (_total_tokens, "train:", "totals"),
    "manifest-total-docs": (_total_docs, "val:", "totals"),
    "extra-unlisted-bin": (_extra_bin, "train-00099.bin", "not listed"),
    "manifest-deleted": (lambda ds: (ds / "_MANIFEST.json").unlink(), "_MANIFEST.json",
                         "missing"),
}


def test_verify_passes_on_a_fresh_dataset(cli, copy: Path) -> None:
    before = snapshot(copy)

    r = cli("verify", copy)

    assert r.code == 0, r.out + r.err
    assert r.out.strip().splitlines()[-1] == f"{copy}: OK"
    assert "FAIL" not in r.out
    assert snapshot(copy) == before  # verify only reads


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_verify_catches_damage(cli, copy: Path, damage: str) -> None:
    act, name, says = DAMAGE[damage]
    act(copy)
    before = snapshot(copy)

    r = cli("verify", copy)

    assert r.code == 1, r.out + r.err
    fails = [line for line in r.out.splitlines() if line.startswith("FAIL")]
    assert any(name in line and says in line for line in fails), r.out
    assert re.search(rf"{re.escape(str(copy))}: {len(fails)} problem\(s\)", r.out), r.out
    assert "OK" not in r.out
    assert snapshot(copy) == before


def test_verify_a_missing_directory(cli, tmp_path: Path) -> None:
    r = cli("verify", tmp_path / "nothing-here")

    assert r.code == 1
    assert str(tmp_path / "nothing-here") in r.err and "not a directory" in r.err


# -- inspect -----------------------------------------------------------------------------------

def test_inspect_a_bin_file(cli, dataset: Path) -> None:
    path = dataset / "train-00001.bin"
    ids = bin_ids(path)

    r = cli("inspect", path, "--first", 5, "--tokenizer", "byte")

    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == (f"train-00001.bin: llmc uint16 ids, n = {len(ids):,}, version 1, "
                        f"vocab_size = 256, {path.stat().st_size:,} bytes")
    assert lines[1] == f"first 5 ids: {ids[:5]}"
    assert lines[2] == f"decoded: {bytes(ids[:5]).decode()!r}"
    assert ids[0] == SEP


def test_inspect_decodes_gpt2_ids(cli, tmp_path: Path) -> None:
    src = write_parquet(tmp_path / "src" / "p.parquet", ["Hello world", "Hi"],
                        split=["train", "train"])
    out = tmp_path / "g"
    assert cli("prepare", "--out", out, "--source", src, "--split-column", "split",
               "--tokenizer", GPT2_DIR).code == 0
    enc = tiktoken_gpt2(FIXTURES)
    ids = bin_ids(out / "train-00000.bin")

    r = cli("inspect", out / "train-00000.bin", "--tokenizer", GPT2_DIR)

    assert r.code == 0, r.err
    assert "vocab_size = 50,257" in r.out
    assert f"first 5 ids: {ids}" in r.out
    assert f"decoded: {enc.decode(ids)!r}" in r.out
    assert enc.decode(ids) == "<|endoftext|>Hello world<|endoftext|>Hi"


@pytest.mark.parametrize("target", ["dir", "manifest"])
def test_inspect_a_dataset_shows_totals(cli, dataset: Path, target: str) -> None:
    path = dataset if target == "dir" else dataset / "_MANIFEST.json"

    r = cli("inspect", path)

    assert r.code == 0, r.err
    for split in ("train", "val"):
        files = split_bins(dataset, split)
        ids = [i for p in files for i in bin_ids(p)]
        docs = ids.count(SEP)  # the text holds no NUL byte: every 0 is a separator
        line = f"{split}: {len(ids):,} tokens, {docs:,} docs, {len(files)} files"
        assert line in r.out.splitlines(), r.out
    assert "120 rows visited" in r.out
    assert "2 files" in r.out


def test_inspect_something_else_is_an_error(cli, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")

    r = cli("inspect", tmp_path / "notes.txt")

    assert r.code == 1
    assert "notes.txt" in r.err and "not a .bin file" in r.err


def test_sigterm_leaves_a_staging_dir_that_inspect_describes_and_resume_finishes(
    cli, tmp_path: Path
) -> None:
    texts = numbered_docs(3000)  # far more rows than the run gets through before SIGTERM
    src = write_parquet(tmp_path / "src" / "p.parquet", texts, split=["train"] * len(texts))
    out = tmp_path / "run" / "ds"
    args = ["--source", src, "--split-column", "split"]
    proc = subprocess.Popen(
        [sys.executable, str(PREPARE), "--tokenizer", "byte", "--out", str(out), *map(str, args),
         "--batch-size", "1", "--checkpoint-interval", "1e-9"],  # checkpoint (fsync) per row
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # the staging directory exists once "started" is logged
        seen.append(line)
        if "started" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=120)[1]
    err = "".join(seen) + rest

    assert proc.returncode == 75, err
    assert "--resume" in err
    staging = tmp_path / "run" / "ds.incomplete"
    assert staging.is_dir() and not out.exists()

    r = cli("inspect", staging)

    assert r.code == 0, r.err
    assert "in progress" in r.out
    rows = int(re.search(r"rows visited ([\d,]+)", r.out).group(1).replace(",", ""))
    assert 0 < rows < len(texts)
    tokens = sum(len(t.encode()) for t in texts[:rows])
    assert f"train: {tokens:,} tokens, {rows:,} docs, 1 files" in r.out, r.out
    committed = (staging / "train-00000.bin").read_bytes()[1024:]
    assert committed == b"".join(bytes([b, 0]) for t in texts[:rows] for b in t.encode())

    resumed = cli("prepare", "--out", out, "--resume")
    clean = tmp_path / "clean" / "ds"
    uninterrupted = cli("prepare", "--tokenizer", "byte", "--out", clean, *args)

    assert (resumed.code, uninterrupted.code) == (0, 0), resumed.err + uninterrupted.err
    assert dir_bytes(out) == dir_bytes(clean)
    assert not staging.exists()
