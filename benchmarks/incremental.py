"""What an incremental ``--refresh`` saves: 11 files published, a 12th appended.

The nightly cron case of issue 15. The benchmark:

1. builds ``--mb`` MB of real text with ``make_corpus.py`` (a child process) and re-splits
   its rows into 12 Parquet files of equal row counts (``part-00000`` .. ``part-00011``);
2. publishes the first 11 with ``python scripts/prepare.py --source SRC --tokenizer TOK
   --out WORKDIR/old`` (a child process; not timed), then adds the 12th file to ``SRC``;
3. ``--pairs`` times, alternating: A, a from-scratch build of the 12 files into a new
   ``--out``; B, a copy of the published 11-file version (copying not timed) refreshed
   with ``--refresh``. Each is the whole command as a child process, timed by its wall
   clock: interpreter start, imports, and all the work;
4. checks that every refresh said "refreshing incrementally" and that its ``.bin`` files and
   ``_MANIFEST.json`` are byte-identical to the from-scratch build's (``--dataset`` is the
   same for both); anything else stops the benchmark (exit 1), keeping the work directory.

    python benchmarks/incremental.py [--mb 48] [--pairs 1] [--tokenizer PATH]
                                     [--workdir DIR] [--keep]

stdout gets one JSON line::

    {"bench": "incremental", "mb", "files": 12, "pairs", "scratch_s_median",
     "refresh_s_median", "ratio", "identical": true}

``ratio`` is median(refresh) / median(from scratch): the share of a full rebuild that the
nightly refresh costs. With 1 file in 12 new, the work alone would give about 1/12; start-up
(interpreter, imports, tokenizer load) and hashing the 11 old source files and old shards
are what keeps it above that.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from refresh import BenchmarkError, run  # one way to run a step and report its failure

REPO = Path(__file__).resolve().parent.parent
PREPARE = REPO / "scripts" / "prepare.py"
MAKE_CORPUS = REPO / "benchmarks" / "make_corpus.py"
DEFAULT_TOKENIZER = REPO / "tests" / "fixtures" / "gpt2" / "tokenizer.json"
N_FILES = 12


def log(msg: str) -> None:
    print(f"incremental-bench: {msg}", file=sys.stderr, flush=True)


def split_corpus(raw: Path, source: Path) -> Path:
    """Re-split every row of ``raw`` into 12 files; returns the 12th (kept aside)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts: list[str] = []
    for p in sorted(raw.glob("*.parquet")):
        texts += pq.read_table(p, columns=["text"]).column("text").to_pylist()
    per = -(-len(texts) // N_FILES)
    source.mkdir(parents=True)
    aside = source.parent / "new"
    aside.mkdir()
    for i in range(N_FILES):
        where = source if i < N_FILES - 1 else aside
        chunk = texts[i * per : (i + 1) * per]
        pq.write_table(pa.table({"text": chunk}), where / f"part-{i:05d}.parquet")
    return aside / f"part-{N_FILES - 1:05d}.parquet"


def dataset_bytes(out: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.suffix == ".bin" or p.name == "_MANIFEST.json"
    }


def bench(mb: int, pairs: int, tokenizer: Path, workdir: Path) -> dict[str, object]:
    raw, source = workdir / "raw", workdir / "src"
    run([sys.executable, str(MAKE_CORPUS), "--out", str(raw), "--mb", str(mb)], "make_corpus")
    twelfth = split_corpus(raw, source)
    recipe = ["--source", str(source), "--tokenizer", str(tokenizer), "--dataset", "bench"]
    old = workdir / "old"
    seconds, _, _ = run([sys.executable, str(PREPARE), *recipe, "--out", str(old)], "old build")
    log(f"published 11 files in {seconds:.1f} s")
    shutil.copy2(twelfth, source / twelfth.name)

    scratch, refresh = [], []
    for i in range(pairs):
        out = workdir / f"scratch-{i}"
        seconds, _, _ = run([sys.executable, str(PREPARE), *recipe, "--out", str(out)], "scratch")
        scratch.append(seconds)
        log(f"pair {i + 1}/{pairs}: from scratch {seconds:.2f} s")
        dest = workdir / f"refresh-{i}"
        shutil.copytree(old, dest)
        cmd = [sys.executable, str(PREPARE), *recipe, "--out", str(dest), "--refresh"]
        seconds, _, err = run(cmd, "refresh")
        if "refreshing incrementally" not in err:
            raise BenchmarkError(f"the refresh was not incremental:\n{err}")
        if dataset_bytes(dest) != dataset_bytes(out):
            raise BenchmarkError(f"{dest} differs from the from-scratch build {out}")
        refresh.append(seconds)
        log(f"pair {i + 1}/{pairs}: incremental refresh {seconds:.2f} s (identical bytes)")
    return {
        "bench": "incremental",
        "mb": mb,
        "files": N_FILES,
        "pairs": pairs,
        "scratch_s_median": round(statistics.median(scratch), 3),
        "refresh_s_median": round(statistics.median(refresh), 3),
        "ratio": round(statistics.median(refresh) / statistics.median(scratch), 3),
        "identical": True,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time an incremental --refresh against a rebuild.")
    p.add_argument("--mb", type=int, default=48, help="MB of text over the 12 files (48)")
    p.add_argument("--pairs", type=int, default=1, help="from-scratch/refresh pairs (1)")
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER, help="tokenizer.json")
    p.add_argument("--workdir", type=Path, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    ns = p.parse_args(argv)
    if ns.mb < 1 or ns.pairs < 1:
        p.error("--mb and --pairs must be >= 1")
    workdir = ns.workdir or Path(tempfile.mkdtemp(prefix="prep-incremental-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = bench(ns.mb, ns.pairs, ns.tokenizer.resolve(), workdir)
    except BenchmarkError as e:
        log(f"error: {e}\n(work directory kept: {workdir})")
        return 1
    if ns.keep or ns.workdir:
        log(f"work directory kept: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
