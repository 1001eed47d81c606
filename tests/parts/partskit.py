"""A corpus of files of different sizes, and runners for its parts, the merge and the single
run they must agree with."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from conftest import FIXTURES, numbered_docs, write_parquet

# Documents per file: uneven, so the size-balanced ranges are not equal counts.
FILE_DOCS = (40, 5, 25, 60, 10, 30, 18)
RECIPE = ("--val-fraction", "0.2", "--max-file-tokens", "2500", "--dataset", "ds",
          "--doc-sep-id", "0")
GPT2 = FIXTURES / "gpt2" / "tokenizer.json"


def uneven_corpus(root: Path) -> Path:
    start = 0
    for i, n in enumerate(FILE_DOCS):
        write_parquet(root / f"f{i}.parquet", numbered_docs(n, start))
        start += n
    return root


def part_args(corpus: Path, out: Path, part: str, extra: Sequence[str] = ()) -> list[str]:
    """``prepare`` of one part; the byte tokenizer unless ``extra`` names another."""
    tok = [] if "--tokenizer" in extra else ["--tokenizer", "byte"]
    return ["prepare", "--source", str(corpus), "--out", str(out), *RECIPE, *tok,
            "--part", part, *extra]


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` every 20 ms until true; fail naming ``what`` after ``timeout`` s."""
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


def merged_by_hand(cli, corpus: Path, out: Path, count: int,  # type: ignore[no-untyped-def]
                   extra: Sequence[str] = ()) -> dict[str, bytes]:
    """Run every part in this process, merge them, and return the dataset's files' bytes."""
    for i in range(count):
        r = cli(*part_args(corpus, out, f"{i}/{count}", extra))
        assert r.code == 0, r.err
    r = cli("merge", out)
    assert r.code == 0, r.err
    return files_of(out)


def files_of(out: Path) -> dict[str, bytes]:
    """A dataset's files but its provenance, by their paths from its root (datatrove's
    ``train/train-00000.ds``)."""
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != "_PROVENANCE.json"}


def big_corpus(root: Path, files: int = 3, docs: int = 1500) -> Path:
    """Enough GPT-2 work per part that a part is still running when a test kills it."""
    for i in range(files):
        write_parquet(root / f"f{i}.parquet", numbered_docs(docs, i * docs))
    return root
