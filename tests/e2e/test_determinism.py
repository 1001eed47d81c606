"""Guarantee 3: the same inputs and recipe give byte-identical .bin files and
_MANIFEST.json, whatever the output path, batch size, thread count, worker processes,
engine or checkpoint interval."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import (
    bpe_tokenizer,
    dir_bytes,
    make_corpus,
    numbered_docs,
    run_prepare_subprocess,
    split_bins,
    word_level_tokenizer,
    write_parquet,
)

from .helpers import expected_bin, header_ints, manifest


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Three uneven files with empty rows, and a BPE tokenizer trained on them."""
    root = tmp_path_factory.mktemp("determinism")
    docs = numbered_docs(450)
    for i in range(0, 450, 41):
        docs[i] = "  \n" if i % 2 else ""
    files = [docs[:150], docs[150:240], docs[240:]]
    src = make_corpus(root / "src", files)
    tok = bpe_tokenizer(root / "bpe", docs, vocab_size=300)
    return src, tok


def _recipe(src: Path, tok: Path) -> list[object]:
    return ["--source", src, "--tokenizer", tok, "--val-fraction", "0.2", "--seed", "99",
            "--shuffle-files", "--shuffle-buffer", "17", "--max-file-tokens", "700",
            "--dataset", "det"]


def test_two_runs_at_different_paths_are_byte_identical(cli, tmp_path: Path, corpus) -> None:
    src, tok = corpus
    a, b = tmp_path / "one" / "ds", tmp_path / "two" / "elsewhere"

    ra = cli("prepare", "--out", a, *_recipe(src, tok))
    rb = cli("prepare", "--out", b, *_recipe(src, tok))

    assert (ra.code, rb.code) == (0, 0), ra.err + rb.err
    assert len(split_bins(a, "train")) > 2 and manifest(a)["totals"]["val"]["n_docs"] > 0
    assert dir_bytes(a) == dir_bytes(b)
    assert set(dir_bytes(a)) >= {"_MANIFEST.json", "train-00000.bin", "val-00000.bin"}


def test_only_the_dataset_name_differs_with_another_dataset(cli, tmp_path: Path, corpus) -> None:
    src, tok = corpus
    args = _recipe(src, tok)[:-2]

    ra = cli("prepare", "--out", tmp_path / "a", *args, "--dataset", "first")
    rb = cli("prepare", "--out", tmp_path / "b", *args, "--dataset", "second")

    assert (ra.code, rb.code) == (0, 0), ra.err + rb.err
    ma, mb = manifest(tmp_path / "a"), manifest(tmp_path / "b")
    assert (ma.pop("dataset"), mb.pop("dataset")) == ("first", "second")
    assert ma == mb


def test_batch_size_threads_workers_engine_and_checkpoints_do_not_change_bytes(
    cli, tmp_path: Path, corpus
) -> None:
    """Real subprocesses (each sizes its own tokenizer thread pool), run concurrently."""
    src, tok = corpus
    reference = tmp_path / "reference"
    assert cli("prepare", "--out", reference, *_recipe(src, tok)).code == 0
    variants = {
        "b1-t1": ["--batch-size", 1, "--threads", 1],
        "b3-t2-ckpt-every-batch": ["--batch-size", 3, "--threads", 2,
                                   "--checkpoint-interval", "1e-9"],
        "b1000-t1": ["--batch-size", 1000, "--threads", 1],
        "b1000-t2": ["--batch-size", 1000, "--threads", 2],
        "w1": ["--workers", 1],
        "w3-b7": ["--workers", 3, "--batch-size", 7],
        "w2-t2-spawned": ["--workers", 2, "--threads", 2],
        "w2-recycled-every-task": ["--workers", 2, "--recycle-workers", 1],
        "w2-t2-spawned-recycled": ["--workers", 2, "--threads", 2, "--recycle-workers", 1],
        "engine-hf-w2": ["--engine", "hf", "--workers", 2],
    }

    def run(name: str) -> tuple[str, int, str]:
        p = run_prepare_subprocess(["--out", tmp_path / name, *_recipe(src, tok),
                                    *variants[name], "--quiet"])
        return name, p.returncode, p.stderr

    with ThreadPoolExecutor(max_workers=len(variants)) as pool:
        results = list(pool.map(run, variants))

    expected = dir_bytes(reference)
    for name, code, err in results:
        assert code == 0, f"{name}: {err}"
        assert dir_bytes(tmp_path / name) == expected, name
    # Without --workers this small a source is tokenized in the main process (one tokenizer
    # thread), the same bytes as with worker processes.
    workers = {name: json.loads((tmp_path / name / "_PROVENANCE.json").read_text())["workers"]
               for name in variants}
    assert json.loads((reference / "_PROVENANCE.json").read_text())["workers"] == 0
    assert workers["b1-t1"] == workers["b1000-t1"] == 0
    assert workers["w1"] == 1 and workers["w3-b7"] == 3 and workers["b1000-t2"] >= 1


@pytest.mark.parametrize(("trigger", "workers"), [
    (("--recycle-workers", 40), 2), (("--worker-memory", 1), 1), (("--worker-memory", 1), 3)],
    ids=["text-read", "resident-memory-1-worker", "resident-memory-3-workers"])
def test_recycled_workers_write_the_same_bytes(cli, tmp_path: Path, corpus, trigger, workers,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Row-group tasks (no shuffle buffer): a worker retires after each task (50 rows, over
    40 bytes of text; or holding more than 1 byte: the default path, ``--worker-memory``,
    triggered at every task), so fresh ones take over all along the run, with any number
    of workers, and the bytes are those of a run with two workers that kept theirs."""
    src, tok = corpus
    recipe = ["--source", src, "--tokenizer", tok, "--val-fraction", "0.2", "--dataset", "r",
              "--batch-size", 16]
    assert cli("prepare", "--out", tmp_path / "kept", *recipe, "--workers", 2).code == 0
    workers_log = logging.getLogger("prep.procs.pool")  # "prep" does not propagate in a run
    workers_log.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="prep.procs.pool"):
            r = cli("prepare", "--out", tmp_path / "recycled", *recipe, *trigger,
                    "--workers", workers)
    finally:
        workers_log.removeHandler(caplog.handler)
    assert r.code == 0, r.err
    retired = [m for m in caplog.messages if " retired (pid " in m]
    groups = sum(pq.ParquetFile(f).num_row_groups for f in sorted(src.glob("*.parquet")))
    assert len(retired) == groups == 10  # one task per row group, each retiring its worker
    assert dir_bytes(tmp_path / "recycled") == dir_bytes(tmp_path / "kept")


def test_max_id_65536_writes_version_2_uint32(cli, tmp_path: Path) -> None:
    tok = word_level_tokenizer(tmp_path / "wide",
                               {"[UNK]": 0, "<eos>": 1, "a": 2, "big": 65536}, eos=1)
    src = write_parquet(tmp_path / "src" / "p.parquet", ["a big a", "big"],
                        split=["train", "val"])
    out = tmp_path / "wide-out"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", tok)

    assert r.code == 0, r.err
    train = out / "train-00000.bin"
    assert train.stat().st_size == 1024 + 4 * 4
    assert header_ints(train)[:4] == (20240520, 2, 4, 65537)
    assert train.read_bytes() == expected_bin([1, 2, 65536, 2], 65537)
    assert (out / "val-00000.bin").read_bytes()[1024:] == (1).to_bytes(4, "little") + (
        65536).to_bytes(4, "little")
    m = manifest(out)
    assert (m["vocab_size"], m["bin_version"]) == (65537, 2)
    assert cli("verify", out).code == 0


def test_max_id_65535_is_still_version_1(cli, tmp_path: Path) -> None:
    tok = word_level_tokenizer(tmp_path / "edge",
                               {"[UNK]": 0, "<eos>": 1, "a": 2, "top": 65535}, eos=1)
    src = write_parquet(tmp_path / "src" / "p.parquet", ["top a"], split=["train"])
    out = tmp_path / "edge-out"

    r = cli("prepare", "--out", out, "--source", src, "--split-column", "split",
            "--tokenizer", tok)

    assert r.code == 0, r.err
    train = out / "train-00000.bin"
    assert header_ints(train)[:4] == (20240520, 1, 3, 65536)
    assert train.read_bytes()[1024:] == bytes([1, 0, 0xFF, 0xFF, 2, 0])
    m = json.loads((out / "_MANIFEST.json").read_text())
    assert (m["vocab_size"], m["bin_version"]) == (65536, 1)
    assert cli("verify", out).code == 0
