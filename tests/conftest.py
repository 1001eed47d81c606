"""Shared factories: tiny Parquet corpora, tokenizers made on the fly, CLI runners.

Everything here is real: Parquet written with pyarrow, tokenizer.json files written by
``tokenizers``, the CLI run in-process through ``cli.main`` or as a real subprocess.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from filelock import FileLock

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
GPT2_DIR = FIXTURES / "gpt2"
PREPARE = REPO / "scripts" / "prepare.py"

sys.path.insert(0, str(TESTS))  # golden_corpus and friends

# prep keeps what it may lose (tokenizer memos, buckets' copies) under $XDG_CACHE_HOME/prep:
# one directory per test process, so the suite neither reads nor fills the user's ~/.cache.
_CACHE_HOME = tempfile.mkdtemp(prefix="prep-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
atexit.register(shutil.rmtree, _CACHE_HOME, True)


def write_parquet(path: Path, texts: Sequence[Any], row_group_size: int = 50,
                  **columns: Sequence[Any]) -> Path:
    """Write one Parquet file with a ``text`` column (any values, None allowed) and extra
    columns; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"text": list(texts)}
    data.update({k: list(v) for k, v in columns.items()})
    pq.write_table(pa.table(data), path, row_group_size=row_group_size)
    return path


def make_corpus(root: Path, files: Sequence[Sequence[str]], **columns: Sequence[Sequence[Any]]
                ) -> Path:
    """A directory of ``part-NNNNN.parquet`` files, one per list of texts."""
    for i, texts in enumerate(files):
        extra = {k: v[i] for k, v in columns.items()}
        write_parquet(root / f"part-{i:05d}.parquet", texts, **extra)
    return root


def numbered_docs(n: int, start: int = 0) -> list[str]:
    """Self-describing documents: each names its own index, so a lost, duplicated or
    reordered document shows in the output."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [
        f"doc {i:07d} " + " ".join(words[(i * 7 + k) % len(words)] for k in range(i % 13 + 1))
        for i in range(start, start + n)
    ]


def word_level_tokenizer(directory: Path, vocab: dict[str, int], eos: int | None = None) -> Path:
    """A WordLevel ``tokenizer.json`` (whitespace pre-tokenizer) with exactly ``vocab``;
    ``eos`` goes to a generation_config.json beside it. Returns the directory."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    directory.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(directory / "tokenizer.json"))
    if eos is not None:
        (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    return directory


def bpe_tokenizer(directory: Path, texts: Sequence[str], vocab_size: int = 300) -> Path:
    """A byte-level BPE trained on ``texts`` with an ``<|endoftext|>`` special token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    directory.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(str(directory / "tokenizer.json"))
    eos = tok.token_to_id("<|endoftext|>")
    (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    return directory


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], object]) -> Path:
    """A directory that ``build(directory)`` fills once per test run, shared by every xdist
    worker (the pattern pytest-xdist documents: the workers' base temporary directories
    share a parent, and a file lock lets the first worker build while the others wait).
    Built into a temporary sibling and renamed, so a directory that exists is complete.
    Without xdist, it is built under this run's own base directory."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    target = root / f"built-once-{name}"
    with FileLock(str(target) + ".lock"):
        if not target.exists():
            partial = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=root))
            build(partial)
            partial.rename(target)
    return target


@pytest.fixture(scope="session")
def parity_set(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``parity_corpus.parity_tokenizers``: name -> tokenizer.json, the two trained ones
    trained once per test run (the training is most of a parity module's set-up). Shared:
    read them, never change them."""
    from parity_corpus import parity_tokenizers

    return parity_tokenizers(built_once(tmp_path_factory, "parity", parity_tokenizers),
                             train=False)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run ``prep`` in-process: ``cli("prepare", "--out", ...)`` -> CliResult."""
    from prep.cli.commands import main

    def run(*args: object) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return CliResult(code, cap.out, cap.err)

    return run


def run_prepare_subprocess(args: Sequence[object], timeout: float = 300,
                           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python scripts/prepare.py ARGS`` as a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, str(PREPARE), *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=full_env, check=False,
    )


def bin_ids(path: Path) -> list[int]:
    """Ids of a .bin file, read independently of prep (struct + raw bytes)."""
    import struct

    raw = path.read_bytes()
    magic, version, n, _v = struct.unpack("<4i", raw[:16])
    assert magic == 20240520
    fmt = "H" if version == 1 else "I"
    return list(struct.unpack(f"<{n}{fmt}", raw[1024:]))


def split_bins(out: Path, split: str) -> list[Path]:
    return sorted(out.glob(f"{split}-*.bin"))


def dir_bytes(out: Path) -> dict[str, bytes]:
    """Every token file (.bin, and Megatron's .idx) and the manifest of a published
    dataset, by name, and every file in its folders (datatrove's ``train/``, ``val/``) by
    its path from the dataset's root."""
    got = {p.name: p.read_bytes() for p in sorted(out.iterdir())
           if p.suffix in (".bin", ".idx") or p.name == "_MANIFEST.json"}
    for folder in (out / "train", out / "val"):
        if folder.is_dir():
            got.update({f"{folder.name}/{p.name}": p.read_bytes()
                        for p in sorted(folder.iterdir()) if p.is_file()})
    return got


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N`` (``--dist load``), except that the tests in ``tests/s3/``, the ones that use
    the S3 server, run in one process: the suite starts one server instead of one per
    process, and their module-scoped runs are built once. (``--dist loadgroup`` would say
    this with marks, but pytest 9.2's node ids broke it: pytest-xdist issue 1386.)"""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class S3Together(LoadScopeScheduling):  # type: ignore[misc]
        """Every test is a unit of its own, as with ``load``; tests/s3 is one unit."""

        def _split_scope(self, nodeid: str) -> str:
            return S3_TESTS if nodeid.startswith(S3_TESTS) else nodeid

    return S3Together(config, log)


S3_TESTS = "tests/s3/"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One real S3 server (tests/s3server.py) per pytest process, shared by its tests: use a
    prefix of your own in ``s3_bucket``. Put a test that uses it in ``tests/s3/``, so that
    it runs in the one process that starts it (:func:`pytest_xdist_make_scheduler`). A test
    that kills or stops the server starts its own with ``s3server.running_server(tmp_path)``
    instead."""
    from s3server import running_server

    with running_server(tmp_path_factory.mktemp("s3server")) as server:
        yield server


@pytest.fixture(scope="session")
def s3_bucket(s3_server) -> str:  # type: ignore[no-untyped-def]
    """A bucket on ``s3_server`` every test of the process shares (one prefix per test)."""
    return str(s3_server.create_bucket("prep-tests"))
