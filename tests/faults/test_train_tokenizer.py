"""``prep train-tokenizer`` as real processes: the merges are the naive reference's on the
train documents only, the bytes are the same whatever ``--workers`` and batch size, after
a SIGKILL in either phase (counting the corpus, merging) and ``--resume``, and after a
SIGTERM (exit 75, resumable).

The source labels each row train or val (``--split-column``), so the oracle knows which
documents may shape the vocabulary: the val rows repeat a string that would otherwise
give merges of their own."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import bpe_reference as ref
import harness as h
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from prep.tokenizer.files import merges_of

WORDS = ["the", "cat", "sat", "on", "mat", "aaaa", "ab", "ba", "über", "\x00", "end"]
MERGES = 200
SLOW = ("--batch-size", "2", "--workers", "1", "--checkpoint-interval", "0.000001")


def _texts(n: int, seed: int) -> list[str]:
    out = []
    for i in range(n):
        k = (i * 7 + seed) % 13
        out.append(" ".join(WORDS[(i * j + k) % len(WORDS)] for j in range(3 + k)))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    """Two Parquet files (row groups of 10 rows, so a slow run checkpoints often); every
    fifth row is val, and one row is whitespace only."""
    root = tmp_path_factory.mktemp("tt") / "src"
    root.mkdir()
    train: list[bytes] = []
    for f in range(2):
        texts = _texts(80, f)
        texts[3] = "   "
        splits = ["val" if i % 5 == 0 else "train" for i in range(len(texts))]
        pairs = list(zip(texts, splits, strict=True))
        texts = [("zqzqzqzqzq " * 5 if s == "val" else t) for t, s in pairs]
        table = pa.table({"text": texts, "split": splits})
        pq.write_table(table, root / f"part-{f}.parquet", row_group_size=10)
        train += [t.encode() for t, s in pairs if s == "train" and t.strip()]
    return root, train


def args(src: Path, out: Path, *extra: object) -> list[str]:
    return ["train-tokenizer", "--source", str(src), "--split-column", "split",
            "--vocab-size", str(256 + MERGES + 1), "--min-pair-frequency", "1",
            "--special-token", "<|end|>", "--out", str(out), *map(str, extra)]


def plain(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prep", *argv], capture_output=True,
                          text=True, timeout=h.TIMEOUT, stdin=subprocess.DEVNULL)


def outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def published(argv: list[str], out: Path) -> dict[str, bytes]:
    """The files a run of ``argv`` that must succeed publishes at ``out``."""
    done = plain(argv)
    assert done.returncode == 0, done.stderr
    return outputs(out)


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ref") / "tok"
    return published(args(corpus[0], out, "--workers", "1"), out)


def test_merges_are_the_references_on_train_documents_only(corpus, reference, tmp_path):
    (tmp_path / "tokenizer.json").write_bytes(reference["tokenizer.json"])
    want = ref.train(corpus[1], 256 + MERGES, 1)
    assert merges_of(tmp_path / "tokenizer.json") == [(a, b) for a, b, _ in want]
    assert b"zqzq" not in b"".join(corpus[1])  # the val text never shaped a merge:
    assert all(b"zq" not in piece for piece in ref_pieces(want))
    assert set(reference) == {"generation_config.json", "tokenizer.json", "training.json"}


def ref_pieces(merges: list[tuple[int, int, int]]) -> list[bytes]:
    pieces = [bytes([b]) for b in range(256)]
    for a, b, _ in merges:
        pieces.append(pieces[a] + pieces[b])
    return pieces


def test_same_bytes_whatever_workers_and_batch_size(corpus, reference, tmp_path):
    out = tmp_path / "tok"
    assert published(args(corpus[0], out, "--workers", "2", "--batch-size", "3"), out) \
        == reference


@pytest.mark.parametrize(
    "target",
    ["prep.run.committed.RunState.checkpoint",  # counting the corpus (the prepare run's commit)
     "prep.tokenizer.snapshot.MergeCheckpoint.save"],  # merging
)
def test_sigkill_in_each_phase_then_resume_gives_the_same_bytes(corpus, reference, tmp_path,
                                                                 target):
    out = tmp_path / "tok"
    fault = {"target": target, "nth": 2, "action": "kill"}
    code, err = h.run(args(corpus[0], out, *SLOW), faults=[fault])
    assert code == -signal.SIGKILL, err
    assert not out.exists() and h.staging_of(out).is_dir()
    done = plain(args(corpus[0], out, *SLOW, "--resume"))
    assert done.returncode == 0, done.stderr
    if "Merge" in target:
        assert "merging: resumed after 128 merges" in done.stderr  # 2 steps of 64 kept
    assert outputs(out) == reference
    assert not h.staging_of(out).exists()


@pytest.mark.parametrize(
    ("target", "said"),
    [("prep.run.committed.RunState.checkpoint", "while counting the corpus, stopped on request; "
      "checkpoint at row "),
     ("prep.tokenizer.snapshot.MergeCheckpoint.save", "stopped after 192 merges, "
      "checkpointed; rerun the same command with --resume")],
)
def test_sigterm_in_each_phase_exits_75_and_resumes(corpus, reference, tmp_path, target, said):
    out, gate = tmp_path / "tok", tmp_path / "gate"
    gate.mkdir()
    proc = h.spawn(args(corpus[0], out, *SLOW), faults=[h.gate(target, gate, nth=2)])
    h.wait_for(lambda: (gate / "reached").exists(), "the second checkpoint", proc)
    proc.send_signal(signal.SIGTERM)
    h.release(gate)
    code, err = proc.finish()
    assert code == 75, err
    assert said in err and "prep prepare" not in err.split("prep: stopped:")[-1]
    h.no_traceback(err)
    done = plain(args(corpus[0], out, *SLOW, "--resume"))
    assert done.returncode == 0, done.stderr
    assert outputs(out) == reference


# With a pre-tokenizer: a phase more (counting pieces), the same guarantees, on words of
# letters enough to need more than one merge checkpoint (pairs never cross a word).
@pytest.fixture(scope="module")
def words(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[bytes]]:
    root = tmp_path_factory.mktemp("words") / "src"
    root.mkdir()
    train: list[bytes] = []
    for f in range(2):
        texts = [" ".join("".join(chr(97 + (i * 7 + j * 3 + k * k + f) % 26)
                                  for k in range(2 + (i + j) % 5)) for j in range(8)) + ", 42!"
                 for i in range(60)]
        splits = ["val" if i % 5 == 0 else "train" for i in range(len(texts))]
        pq.write_table(pa.table({"text": texts, "split": splits}), root / f"part-{f}.parquet",
                       row_group_size=10)
        train += [t.encode() for t, s in zip(texts, splits, strict=True) if s == "train"]
    return root, train


def pre_args(src: Path, out: Path, *extra: object) -> list[str]:
    return args(src, out, "--pre-tokenizer", "gpt2", *extra)


@pytest.fixture(scope="module")
def pre_reference(words, tmp_path_factory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("pre") / "tok"
    return published(pre_args(words[0], out, "--workers", "1"), out)


def test_pre_tokenized_merges_are_the_references_whatever_the_workers(words, pre_reference,
                                                                      tmp_path):
    from prep.tokenizer.pretokenize import PATTERNS

    (tmp_path / "tokenizer.json").write_bytes(pre_reference["tokenizer.json"])
    want = ref.train_split([d.decode() for d in words[1]], PATTERNS["gpt2"], 256 + MERGES, 1)
    assert len(want) == MERGES
    assert merges_of(tmp_path / "tokenizer.json") == [(a, b) for a, b, _ in want]
    two = tmp_path / "two"
    assert published(pre_args(words[0], two, "--workers", "2", "--batch-size", "3"), two) \
        == pre_reference


@pytest.mark.parametrize("target", ["prep.tokenizer.snapshot.CountCheckpoint.save",
                                    "prep.tokenizer.snapshot.MergeCheckpoint.save"])
def test_pre_tokenized_sigkill_in_each_new_phase_then_resume(words, pre_reference, tmp_path,
                                                             target):
    out = tmp_path / "tok"
    code, err = h.run(pre_args(words[0], out, *SLOW),
                      faults=[{"target": target, "nth": 2, "action": "kill"}])
    assert code == -signal.SIGKILL, err
    done = plain(pre_args(words[0], out, *SLOW, "--resume"))
    assert done.returncode == 0, done.stderr
    said = "counting pieces: resumed after" if "Count" in target else "merging: resumed after"
    assert said in done.stderr
    assert outputs(out) == pre_reference
