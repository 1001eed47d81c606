"""How long the nightly ``--refresh`` takes when nothing changed, on a source of many files.

The cron promise (spec: "When the source has not changed it does nothing, quickly") rests on
the up-to-date check: list the source, compare each file's size and fingerprint (inode,
mtime, ctime) with the published version's, hash the tokenizer, compare the recipe; no
Parquet is read. Its cost grows with the number of files, so the source here is ``--files``
small Parquet files (``--rows`` rows each). The benchmark:

1. writes the source and runs one full build: ``python scripts/prepare.py --source SRC
   --tokenizer TOK --out WORKDIR/out`` (a child process);
2. times ``python scripts/prepare.py ... --refresh`` (unchanged) as a child process,
   ``--reps`` times: wall time, what cron sees (interpreter start, imports, the check);
3. times the check alone: ``--reps`` fresh children each run
   ``prep.cli.commands.run_prepare([... "--refresh", "--quiet"])`` and print their own clock around
   the imports (``prep.cli.commands`` and ``prep.run.lifecycle``, which pull in pyarrow, numpy,
   tokenizers) and around the call, separating start-up and import cost from the check;
4. the same in-process timing after every source file's mtime moved (content unchanged):
   each file is then hashed. The published version keeps its recorded fingerprints, so
   this is what every later run pays too, until the next rebuild.

Every refresh must exit 0 and report "up to date"; anything else stops the benchmark (exit 1)
with the command and the tail of its output, and keeps the work directory.

    python benchmarks/refresh.py [--files 1000] [--rows 4] [--reps 5] [--tokenizer PATH]
                                 [--workdir DIR] [--keep]

Progress goes to stderr; stdout gets one JSON line::

    {"bench": "refresh", "files": 1000, "subprocess_s_median", "in_process_s_median",
     "import_s", "interpreter_s", "rehash_in_process_s_median", "reps", "build_s"}

Times are seconds: ``subprocess_s_median`` the median wall time of the whole command,
``in_process_s_median`` the median of the ``run_prepare`` call alone, ``import_s`` the
median import time, ``interpreter_s`` the median wall time of ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PREPARE = REPO / "scripts" / "prepare.py"
DEFAULT_TOKENIZER = REPO / "tests" / "fixtures" / "gpt2" / "tokenizer.json"
TAIL_LINES = 20

IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
import prep.cli.commands, prep.run.lifecycle
t1 = time.perf_counter()
code = prep.cli.commands.run_prepare(sys.argv[1:])
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "code": code}))
"""


class BenchmarkError(RuntimeError):
    """The benchmark cannot go on; the message says what failed and where to look."""


def log(msg: str) -> None:
    print(f"refresh-bench: {msg}", file=sys.stderr, flush=True)


def write_source(root: Path, files: int, rows: int) -> None:
    """``files`` Parquet files of ``rows`` short English-like documents each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "cron",
        "runs",
        "every",
        "night",
    ]
    root.mkdir(parents=True)
    for i in range(files):
        texts = [
            " ".join(words[(i * 7 + r * 3 + k) % len(words)] for k in range(8 + (i + r) % 9))
            + f" ({i}.{r})"
            for r in range(rows)
        ]
        pq.write_table(pa.table({"text": texts}), root / f"part-{i:05d}.parquet")


def run(cmd: list[str], what: str) -> tuple[float, str, str]:
    """Run ``cmd``; returns (wall seconds, stdout, stderr). Non-zero exit: BenchmarkError."""
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-TAIL_LINES:])
        raise BenchmarkError(f"{what} exited {proc.returncode}: {' '.join(cmd)}\n{tail}")
    return seconds, proc.stdout, proc.stderr


def up_to_date(err: str, cmd: list[str]) -> None:
    if "is up to date" not in err:
        raise BenchmarkError(f"expected 'up to date' from {' '.join(cmd)}; got:\n{err}")


def in_process(args: list[str]) -> tuple[float, float]:
    """(import seconds, call seconds) measured inside a fresh child."""
    cmd = [sys.executable, "-c", IN_PROCESS, *args, "--refresh", "--quiet"]
    _, out, err = run(cmd, "in-process refresh")
    up_to_date(err, cmd)
    got = json.loads(out.strip().splitlines()[-1])
    if got["code"] != 0:
        raise BenchmarkError(f"run_prepare returned {got['code']}:\n{err}")
    return got["import_s"], got["call_s"]


def bench(files: int, rows: int, reps: int, tokenizer: Path, workdir: Path) -> dict[str, object]:
    source, out = workdir / "src", workdir / "out"
    for p in (source, out):
        if p.exists():
            raise BenchmarkError(f"{p} already exists; choose an empty --workdir")
    log(f"writing {files:,} Parquet files of {rows} rows in {source}")
    write_source(source, files, rows)
    args = ["--source", str(source), "--tokenizer", str(tokenizer), "--out", str(out)]

    build_s, _, _ = run([sys.executable, str(PREPARE), *args, "--quiet"], "full build")
    log(f"full build: {build_s:.2f} s")

    interpreter = [run([sys.executable, "-c", "pass"], "python")[0] for _ in range(reps)]
    wall = []
    for i in range(reps):
        cmd = [sys.executable, str(PREPARE), *args, "--refresh"]
        seconds, _, err = run(cmd, "refresh")
        up_to_date(err, cmd)
        wall.append(seconds)
        log(f"refresh {i + 1}/{reps}: {seconds:.3f} s (child process, wall)")
    measured = [in_process(args) for _ in range(reps)]
    for imp, call in measured:
        log(f"in-process: import {imp:.3f} s, run_prepare {call:.3f} s")

    for p in source.iterdir():  # content unchanged, mtime moved: every file is hashed
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    rehash = [in_process(args)[1] for _ in range(reps)]
    log(f"after touching every file: run_prepare median {statistics.median(rehash):.3f} s")

    return {
        "bench": "refresh",
        "files": files,
        "subprocess_s_median": round(statistics.median(wall), 4),
        "in_process_s_median": round(statistics.median(c for _, c in measured), 4),
        "import_s": round(statistics.median(i for i, _ in measured), 4),
        "interpreter_s": round(statistics.median(interpreter), 4),
        "rehash_in_process_s_median": round(statistics.median(rehash), 4),
        "reps": reps,
        "build_s": round(build_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Time an unchanged --refresh on many files.")
    p.add_argument("--files", type=int, default=1000, help="Parquet files (1000)")
    p.add_argument("--rows", type=int, default=4, help="rows per file (4)")
    p.add_argument("--reps", type=int, default=5, help="repetitions of each timing (5)")
    p.add_argument(
        "--tokenizer",
        type=Path,
        default=DEFAULT_TOKENIZER,
        help="tokenizer.json (the GPT-2 test fixture)",
    )
    p.add_argument("--workdir", type=Path, help="work directory (default: a temporary one)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    ns = p.parse_args(argv)
    if ns.files < 1 or ns.rows < 1 or ns.reps < 1:
        p.error("--files, --rows and --reps must be >= 1")
    workdir = ns.workdir or Path(tempfile.mkdtemp(prefix="prep-refresh-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        result = bench(ns.files, ns.rows, ns.reps, ns.tokenizer.resolve(), workdir)
    except BenchmarkError as e:
        log(f"error: {e}\n(work directory kept: {workdir})")
        return 1
    if ns.keep or ns.workdir:
        log(f"work directory kept: {workdir}")
    else:
        shutil.rmtree(workdir)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
