"""Background sealing (prep.formats.sealing) seen through a split's writer: records come back in
order with the SHA-256 of each whole file (hashlib over the file's bytes read back), and a
seal that fails raises its own error where the records are read, not later or changed."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from prep.formats import get_format
from prep.stream.writer import SplitWriter


def writer(directory: Path, fmt: str, limit: int = 10) -> SplitWriter:
    w = SplitWriter(directory=directory, fmt=get_format(fmt), split="train", vocab_size=256,
                    sep_id=None, append_sep=False, max_file_tokens=limit)
    w.start()
    return w


def add_docs(w: SplitWriter, n: int, length: int = 4) -> None:
    for k in range(n):
        w.add(np.full(length, k, dtype=np.uint32), length)
        w.flush()


@pytest.mark.parametrize("fmt", ["llmc", "megatron"])
def test_records_in_order_with_the_hash_of_each_whole_file(tmp_path: Path, fmt: str) -> None:
    w = writer(tmp_path, fmt)
    add_docs(w, 25)  # 2 documents of 4 ids per shard of 10: 13 shards
    files = w.finish()
    assert [f.name for f in files] == [f"train-{i:05d}.bin" for i in range(13)]
    assert [f.n_docs for f in files] == [2] * 12 + [1]
    for f in files:
        assert f.sha256 == hashlib.sha256((tmp_path / f.name).read_bytes()).hexdigest()
    if fmt == "megatron":
        for f in files:
            (idx,) = f.companions
            assert idx.sha256 == hashlib.sha256((tmp_path / idx.name).read_bytes()).hexdigest()


def test_a_failed_seal_raises_its_own_error_at_the_next_checkpoint(tmp_path: Path) -> None:
    # A directory where the first shard's index goes: its atomic replace fails for real.
    (tmp_path / "train-00000.idx").mkdir()
    w = writer(tmp_path, "megatron")
    add_docs(w, 3)  # rolls over once: train-00000 seals in the background
    w.sync()
    with pytest.raises(IsADirectoryError) as raised:
        w.state()
    assert raised.value.filename is not None
    assert "train-00000.idx" in str(raised.value.filename) + str(raised.value.filename2)
    w.close()  # the error path: nothing more is raised, the open shard is closed
    assert (tmp_path / "train-00001.bin").stat().st_size == 4 * 2  # the third document, uint16
