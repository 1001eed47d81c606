"""Megatron-LM's own reader on the ``.idx`` prep builds.

megatron-core needs torch, which is not in the test extra (a plain ``pip install torch``
pulls a multi-gigabyte CUDA build into CI), so this runs where megatron-core is installed
(``pip install torch==2.13.0 megatron-core`` with a CPU torch) and is skipped otherwise; the
independent reader in ``tests/format_readers.py`` covers the layout everywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prep.formats import mmidx

indexed_dataset = pytest.importorskip("megatron.core.datasets.indexed_dataset")


@pytest.mark.parametrize(("dtype", "top"), [("uint16", 65535), ("int32", 128255)])
def test_indexed_dataset_reads_the_pair(tmp_path: Path, dtype: str, top: int) -> None:
    docs = [[50256, 15496, 995], [top], [], [1, 2, 3, 4, 5, 6, 7]]
    prefix = tmp_path / "train-00000"
    ids = np.array([i for d in docs for i in d], dtype=np.dtype(dtype).newbyteorder("<"))
    prefix.with_suffix(".bin").write_bytes(ids.tobytes())
    prefix.with_suffix(".idx").write_bytes(mmidx.pack([len(d) for d in docs], dtype))
    ds = indexed_dataset.IndexedDataset(str(prefix))
    assert len(ds) == len(docs)
    assert [ds[i].tolist() for i in range(len(docs))] == docs
    assert ds.document_indices.tolist() == list(range(len(docs) + 1))
    assert ds.index.dtype == np.dtype(dtype).type


@pytest.mark.parametrize("dtype", ["auto", "int32"])
def test_indexed_dataset_reads_prepared_output(tmp_path: Path, dtype: str) -> None:
    from conftest import GPT2_DIR, make_corpus, numbered_docs
    from format_readers import read_megatron_docs, split_files

    from prep.cli.commands import main

    src = make_corpus(tmp_path / "src", [numbered_docs(60)])
    out = tmp_path / "out"
    assert main(["prepare", "--out", str(out), "--source", str(src), "--tokenizer",
                 str(GPT2_DIR), "--format", "megatron", "--dtype", dtype, "--val-fraction",
                 "0.3", "--max-file-tokens", "300", "--quiet"]) == 0
    pairs = split_files(out, "train") + split_files(out, "val")
    assert len(pairs) >= 3
    for path in pairs:
        prefix = path.with_suffix("")
        ds = indexed_dataset.IndexedDataset(str(prefix))
        docs = read_megatron_docs(prefix)
        assert len(ds) == len(docs) > 0
        assert [ds[i].tolist() for i in range(len(ds))] == docs
