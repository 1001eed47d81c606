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
