"""What an incremental ``--refresh`` saves: 11 files published, a 12th appended.

The nightly cron case of issue 15, and issue 22's bound: a refresh that adds 1 file to 11
unchanged ones takes at most 1/4 of a full build. The benchmark:

1. builds ``--mb`` MB of real text with ``make_corpus.py`` (a child process) and re-splits
   its rows into 12 Parquet files of equal row counts (``part-00000`` .. ``part-00011``);
2. publishes the first 11 with ``python scripts/prepare.py --source SRC --tokenizer TOK
   --out WORKDIR/old`` (a child process; not timed), then adds the 12th file to ``SRC``;
3. ``--pairs`` times, in an order that rotates each round: A, a from-scratch build of the
   12 files into a new ``--out``; B, a copy of the published 11-file version (copying not
   timed) refreshed with ``--refresh``, which trusts the 11 unchanged files by their
   fingerprints and reads only the 12th; C, the same with ``--refresh --rehash``, which
   reads and hashes the 11 again first (what every refresh did before manifest v5). Each is
   the whole command as a child process, timed by its wall clock: interpreter start,
   imports, and all the work;
4. checks that every refresh said "refreshing incrementally" and that its ``.bin`` files and
   ``_MANIFEST.json`` are byte-identical to the from-scratch build's (``--dataset`` is the
   same for all; the source files are the same files in place, so their recorded
   fingerprints agree too); anything else stops the benchmark (exit 1), keeping the work
   directory.

    python benchmarks/incremental.py [--mb 48] [--pairs 1] [--max-file-tokens N]
                                     [--tokenizer PATH] [--workdir DIR] [--keep]

stdout gets one JSON line::

    {"bench": "incremental", "mb", "files": 12, "pairs", "max_file_tokens", "shards",
     "scratch_s_median", "refresh_s_median", "rehash_s_median", "ratio", "rehash_ratio",
     "scratch_cpu_s_median", "refresh_cpu_s_median", "rehash_cpu_s_median", "cpu_ratio",
     "bound": 0.25, "within_bound", "identical": true}

``ratio`` is median(refresh) / median(from scratch): the share of a full rebuild that the
nightly refresh costs; ``rehash_ratio`` the same for ``--rehash``; ``cpu_ratio`` the same
for the CPU of each whole process tree (less sensitive to other load than the wall time);
``shards`` counts the published version's ``.bin`` files (``--max-file-tokens`` sets it).
The package is byte-compiled first, as ``pip install`` leaves it. With 1 file in 12 new,
the work alone would give about 1/12; start-up (interpreter, imports, tokenizer load) and
checking the reused shards against the manifest (they are hashed) keep ``ratio`` above
that, and hashing the 11 old source files too keeps ``rehash_ratio`` above ``ratio``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import byte_compile  # as pip install does: no child compiles prep at start
from refresh import BenchmarkError, run  # one way to run a step and report its failure

REPO = Path(__file__).resolve().parent.parent
PREPARE = REPO / "scripts" / "prepare.py"
MAKE_CORPUS = REPO / "benchmarks" / "make_corpus.py"
DEFAULT_TOKENIZER = REPO / "tests" / "fixtures" / "gpt2" / "tokenizer.json"
N_FILES = 12
BOUND = 0.25  # issue 22: the refresh takes at most 1/4 of a full build


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


def timed(cmd: list[str], what: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the whole process tree, stderr) of ``cmd``: the CPU
    is what the machine's other load does not inflate much, the wall what cron waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds, _, err = run(cmd, what)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, err


def bench(
    mb: int, pairs: int, tokenizer: Path, workdir: Path, shard_tokens: int | None
) -> dict[str, object]:
    byte_compile(PREPARE)
    raw, source = workdir / "raw", workdir / "src"
    run([sys.executable, str(MAKE_CORPUS), "--out", str(raw), "--mb", str(mb)], "make_corpus")
    twelfth = split_corpus(raw, source)
    recipe = ["--source", str(source), "--tokenizer", str(tokenizer), "--dataset", "bench"]
    if shard_tokens is not None:
        recipe += ["--max-file-tokens", str(shard_tokens)]
    old = workdir / "old"
    seconds, _, _ = run([sys.executable, str(PREPARE), *recipe, "--out", str(old)], "old build")
    log(f"published 11 files in {seconds:.1f} s")
    shutil.copy2(twelfth, source / twelfth.name)

    arms = {
        "scratch": [],
        "refresh": ["--refresh"],
        "rehash": ["--refresh", "--rehash"],
    }
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    cpus: dict[str, list[float]] = {arm: [] for arm in arms}
    for i in range(pairs):
        order = list(arms)[i % 3 :] + list(arms)[: i % 3]
        scratch_out = workdir / f"scratch-{i}"
        outs = {"scratch": scratch_out}
        for arm in order:
            out = outs.setdefault(arm, workdir / f"{arm}-{i}")
            if arm != "scratch":
                shutil.copytree(old, out)
            cmd = [sys.executable, str(PREPARE), *recipe, "--out", str(out), *arms[arm]]
            seconds, cpu, err = timed(cmd, arm)
            if arm != "scratch" and "refreshing incrementally" not in err:
                raise BenchmarkError(f"the {arm} run was not incremental:\n{err}")
            times[arm].append(seconds)
            cpus[arm].append(cpu)
            log(f"round {i + 1}/{pairs}: {arm} {seconds:.2f} s ({cpu:.2f} CPU s)")
        for arm in ("refresh", "rehash"):
            if dataset_bytes(outs[arm]) != dataset_bytes(scratch_out):
                raise BenchmarkError(f"{outs[arm]} differs from the from-scratch build")
        log(f"round {i + 1}/{pairs}: identical bytes")
        for out in outs.values():  # with the refreshes' DIR.previous and lock files
            for p in workdir.glob(f"{out.name}*"):
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    median = {arm: statistics.median(t) for arm, t in times.items()}
    cpu_median = {arm: statistics.median(t) for arm, t in cpus.items()}
    ratio = median["refresh"] / median["scratch"]
    return {
        "bench": "incremental",
        "mb": mb,
        "files": N_FILES,
        "pairs": pairs,
        "max_file_tokens": shard_tokens,
        "shards": len([p for p in old.iterdir() if p.suffix == ".bin"]),
        "scratch_s_median": round(median["scratch"], 3),
        "refresh_s_median": round(median["refresh"], 3),
        "rehash_s_median": round(median["rehash"], 3),
        "ratio": round(ratio, 3),
        "rehash_ratio": round(median["rehash"] / median["scratch"], 3),
        "scratch_cpu_s_median": round(cpu_median["scratch"], 3),
        "refresh_cpu_s_median": round(cpu_median["refresh"], 3),
        "rehash_cpu_s_median": round(cpu_median["rehash"], 3),
        "cpu_ratio": round(cpu_median["refresh"] / cpu_median["scratch"], 3),
        "bound": BOUND,
        "within_bound": ratio <= BOUND,
        "identical": True,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time an incremental --refresh against a rebuild.")
    p.add_argument("--mb", type=int, default=48, help="MB of text over the 12 files (48)")
    p.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="rounds of from-scratch, refresh and refresh --rehash (1)",
    )
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER, help="tokenizer.json")
    p.add_argument(
        "--max-file-tokens",
        type=int,
        help="passed to every run (default: prep's): the shard size, so that a small corpus "
        "can have the many sealed shards and one open one of a large dataset",
    )
    p.add_argument("--workdir", type=Path, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    ns = p.parse_args(argv)
    if ns.mb < 1 or ns.pairs < 1:
        p.error("--mb and --pairs must be >= 1")
    workdir = ns.workdir or Path(tempfile.mkdtemp(prefix="prep-incremental-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = bench(ns.mb, ns.pairs, ns.tokenizer.resolve(), workdir, ns.max_file_tokens)
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
