"""``--format npy`` end to end, read the way seed 003's trainer reads its shards: every
``<split>_NNNNN.npy`` through ``np.load`` (and memory-mapped), concatenated in name order,
windows of ``T + 1`` ids at stride ``T`` (input the first ``T``, target the last ``T``).
That reader, written here from the seed's description, sees the same windows as
``TokenStream``; ``prep verify`` and ``prep inspect`` understand the files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import GPT2_DIR, make_corpus, numbered_docs

from prep import TokenStream

SEP = 50256


class SeedShards:
    """Seed 003's ``ShardedTokenDataset`` as its description says: the split's ``.npy``
    shards, ``np.load``-ed in order and read as one stream; item ``i`` is the window
    ``stream[i*T : i*T + T + 1]`` split into (x, y)."""

    def __init__(self, directory: Path, split: str, seq_len: int) -> None:
        paths = sorted(directory.glob(f"{split}_*.npy"))
        self.shards = [np.load(p, mmap_mode="r") for p in paths]
        self.stream = np.concatenate([s.astype(np.int64) for s in self.shards])
        self.seq_len = seq_len

    def __len__(self) -> int:
        return (self.stream.size - 1) // self.seq_len

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        w = self.stream[i * self.seq_len : i * self.seq_len + self.seq_len + 1]
        return w[:-1], w[1:]


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp("npy")
    src = make_corpus(root / "src", [numbered_docs(90)])
    out = root / "out"
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--val-fraction", "0.2", "--max-file-tokens", "300",
                 "--format", "npy", "--quiet"]) == 0
    return out


def test_files_are_seed_003s_names_and_np_load_reads_each(out: Path) -> None:
    m = json.loads((out / "_MANIFEST.json").read_bytes())
    names = [e["name"] for e in m["files"]]
    assert [n for n in names if n.startswith("train")][:2] == ["train_00000.npy",
                                                               "train_00001.npy"]
    assert "val_00000.npy" in names
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("_")) == sorted(names)
    for e in m["files"]:
        ids = np.load(out / e["name"])
        assert ids.ndim == 1 and ids.dtype == np.dtype("<u2")
        assert ids.size == e["n_tokens"] and np.count_nonzero(ids == SEP) == e["n_docs"]


@pytest.mark.parametrize("split", ["train", "val"])
def test_seed_reader_gets_tokenstreams_windows(out: Path, split: str) -> None:
    seed = SeedShards(out, split, seq_len=29)
    ts = TokenStream(out, split, seq_len=29)
    assert len(ts) == len(seed) > 3
    for i in range(len(ts)):
        x, y = ts[i]
        sx, sy = seed[i]
        assert x.tolist() == sx.tolist() and y.tolist() == sy.tolist()


def test_verify_and_inspect_understand_npy(out: Path, cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("verify", out)
    assert r.code == 0 and r.out.strip().endswith(": OK"), r.out
    r = cli("inspect", out / "train_00000.npy")
    assert r.code == 0, r.err
    assert "train_00000.npy: npy uint16 ids, n = " in r.out and "version 1" in r.out
    shard = out / "val_00000.npy"
    raw = bytearray(shard.read_bytes())
    raw[70] = ord("9")  # the shape's digits: now the header's n disagrees with the size
    shard.write_bytes(bytes(raw))
    r = cli("verify", out)
    assert r.code == 1 and "FAIL val_00000.npy" in r.out, r.out
