"""The piece-counting phase over real shard arrays: documents read back in order (skipping
those a checkpoint holds), a stop checkpoints and raises, and a resume gives the table an
uninterrupted count gives, whatever the batch size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prep.errors import Interrupted
from prep.tokenizer.counting import PIECES_FILE, count, documents, load_pieces
from prep.tokenizer.pretokenize import count_pieces
from prep.tokenizer.snapshot import COUNT_FILE, CountCheckpoint

TEXTS = ["the cat", "sat on the mat", "日本語 the", "aaaa aaaa", "x", "don't 123"]


def shards() -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for part in (TEXTS[:2], TEXTS[2:]):
        data = [t.encode() for t in part]
        ids = np.frombuffer(b"".join(data), dtype=np.uint8).astype(np.uint16)
        out.append((ids, np.array([len(d) for d in data], dtype=np.int64)))
    return out


def test_documents_in_order_after_a_skip() -> None:
    assert list(documents(shards(), 0)) == TEXTS
    assert list(documents(shards(), 3)) == TEXTS[3:]
    assert list(documents(shards(), 6)) == []


def test_a_stop_checkpoints_and_the_resume_gives_the_same_table(tmp_path: Path) -> None:
    want = count(tmp_path, shards(), "gpt2", 4, 3600.0, lambda: False)
    assert dict(zip(want.pieces, want.counts, strict=True)) == {
        k.encode(): v for k, v in count_pieces(TEXTS, "gpt2").items()}
    staging = tmp_path / "s"
    staging.mkdir()
    with pytest.raises(Interrupted, match="after counting the pieces of 2 documents"):
        count(staging, shards(), "gpt2", 2, 3600.0, lambda: True)
    saved = CountCheckpoint.load(staging)
    assert saved is not None and saved.documents == 2
    assert count(staging, shards(), "gpt2", 3, 0.0, lambda: False) == want
    assert load_pieces(staging) == want and (staging / PIECES_FILE).is_file()
    assert not (staging / COUNT_FILE).exists()
    assert not list(staging.glob("pieces-*.bin"))  # the checkpoint's table went with it
