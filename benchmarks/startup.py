"""Start-up: a one-document run of prep, and a ``--refresh`` that finds nothing to do,
against a one-document run of llm.c's ``fineweb.py`` recipe, as whole processes.

What a cron job, a script or a test suite pays for each call. On one Parquet file holding
one document of real text, it alternates, ``--rounds`` times and in a rotating order:

- ``recipe``: ``fineweb_recipe.py`` (tiktoken in a process pool, one shard written);
- ``prep``: ``scripts/prepare.py --tokenizer GPT-2`` into a fresh ``--out`` (default
  options: workers, checkpoint, manifest, fsyncs, the cross-check);
- ``refresh``: ``scripts/prepare.py ... --refresh`` of a dataset already published from the
  same file (nothing to do).

A warm-up round runs first and is not counted (it also lets prep remember its tokenizer,
as any second run on a machine would). Prints ``{"bench": "startup", "prep_ratio":
median(prep) / median(recipe), "refresh_ratio": median(refresh) / median(recipe), ...}``
with the medians, each round's ratios and the median CPU (user + system of the whole tree).

    python benchmarks/startup.py [--rounds 15] [--workdir D]
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
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, REPO, prepare_command

RECIPE = Path(__file__).resolve().parent / "fineweb_recipe.py"
DOCUMENT = (REPO / "README.md").read_text(encoding="utf-8")[:2000]  # real prose, ~2 KB


def log(msg: str) -> None:
    print(f"[startup] {msg}", file=sys.stderr, flush=True)


def timed(cmd: list[str], sink: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and the children it reaped); exits on a
    failed command, naming its log."""
    start = time.perf_counter()
    with sink.open("ab") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[1]} exited {proc.returncode}; see {sink}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="startup-"))
    source = work / "one"
    source.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": [DOCUMENT]}), source / "part-00000.parquet")
    published, fresh, recipe_out = work / "published", work / "fresh", work / "recipe"
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    shutil.rmtree(published, ignore_errors=True)
    timed(prepare_command(source, DEFAULT_TOKENIZER, published, "--quiet"), logs / "setup.log")

    def recipe() -> tuple[float, float]:
        shutil.rmtree(recipe_out, ignore_errors=True)
        cmd = [sys.executable, str(RECIPE), "--source", str(source), "--out", str(recipe_out)]
        return timed(cmd, logs / "recipe.log")

    def prep() -> tuple[float, float]:
        shutil.rmtree(fresh, ignore_errors=True)
        return timed(prepare_command(source, DEFAULT_TOKENIZER, fresh, "--quiet"),
                     logs / "prep.log")

    def refresh() -> tuple[float, float]:
        cmd = prepare_command(source, DEFAULT_TOKENIZER, published, "--refresh", "--quiet")
        return timed(cmd, logs / "refresh.log")

    runs: dict[str, Callable[[], tuple[float, float]]] = {
        "recipe": recipe, "prep": prep, "refresh": refresh}
    names = list(runs)
    for name in names:  # warm-up, not counted
        runs[name]()
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for i in range(args.rounds):
        order = names[i % 3:] + names[: i % 3]
        for name in order:
            w, c = runs[name]()
            wall[name].append(w)
            cpu[name].append(c)
        log(f"round {i + 1}: " + ", ".join(f"{n} {wall[n][-1]:.3f} s" for n in names))
    med = {n: statistics.median(v) for n, v in wall.items()}
    print(json.dumps({
        "bench": "startup", "rounds": args.rounds,
        "recipe_median_s": round(med["recipe"], 3), "prep_median_s": round(med["prep"], 3),
        "refresh_median_s": round(med["refresh"], 3),
        "prep_ratio": round(med["prep"] / med["recipe"], 3),
        "refresh_ratio": round(med["refresh"] / med["recipe"], 3),
        "prep_round_ratios": [round(p / r, 2) for p, r in zip(wall["prep"], wall["recipe"],
                                                             strict=True)],
        "refresh_round_ratios": [round(p / r, 2) for p, r in zip(wall["refresh"],
                                                                wall["recipe"], strict=True)],
        "cpu_median_s": {n: round(statistics.median(v), 3) for n, v in cpu.items()},
        "workdir": str(work),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
