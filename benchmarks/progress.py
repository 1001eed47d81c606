"""What the terminal progress bar (tqdm) costs: whole runs with and without it.

For a corpus built by ``make_corpus.py`` (default 20 MB) and the GPT-2 tokenizer, this runs,
alternating, as real child processes whose stderr is a pseudo-terminal of 80 x 24:

- **bar**: ``python scripts/prepare.py --source C --tokenizer T --out O --batch-size B``
  (a terminal, so the bar is drawn after every batch, at most 10 times a second);
- **quiet**: the same command with ``--quiet`` (no progress at all: the baseline).

A small batch size (default 64) means many reporter calls, the bar's worst case. The
figure of merit is ``ratio = median(quiet) / median(bar)``: 1.0 means the bar costs nothing.

Whole runs on a shared machine are noisy, so it also times the reporter alone, in this
process: ``--calls`` calls of the bar (drawing on a pseudo-terminal of 80 x 24) and of the
``--quiet`` reporter, with snapshots advancing as a run's do. ``bar_us_per_call`` times the
number of batches is what the bar adds to a run.

    python benchmarks/progress.py [--mb 20] [--pairs 3] [--batch-size 64] [--calls 100000]
                                  [--workdir D]

Prints one JSON line on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import struct
import sys
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import (
    DEFAULT_TOKENIZER,
    REPO,
    BenchmarkError,
    manifest_tokens,
    prepare_command,
    reusable_corpus,
)

sys.path.insert(0, str(REPO / "tests"))
from terminal import drain, run_with_pty_stderr

from prep.progress import BarReporter, Reporter, Snapshot, silent


def timed_run(cmd: list[str], out: Path) -> float:
    """Seconds for one run on an 80 x 24 pseudo-terminal; the output is removed after."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    code, text = run_with_pty_stderr(cmd, REPO)
    seconds = time.perf_counter() - start
    if code != 0:
        raise BenchmarkError(f"{' '.join(cmd)} exited {code}:\n{text[-2000:]}")
    manifest_tokens(out)  # the run did publish
    shutil.rmtree(out)
    return seconds


def per_call_seconds(make: str, calls: int) -> float:
    """Seconds per call of the ``bar`` or ``quiet`` reporter over ``calls`` snapshots."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    reader = threading.Thread(target=drain, args=(master, []), daemon=True)
    reader.start()
    with os.fdopen(slave, "w", encoding="utf-8") as tty:
        reporter: Reporter = BarReporter(tty) if make == "bar" else silent
        start = time.perf_counter()
        t0 = time.monotonic()
        for i in range(1, calls + 1):
            snap = Snapshot(rows=i * 64, total_rows=calls * 64, tokens=i * 64 * 400,
                            text_bytes=i * 64 * 1800, seconds=time.monotonic() - t0)
            reporter(snap, final=i == calls)
        seconds = time.perf_counter() - start
    reader.join(10)
    os.close(master)
    return seconds / calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=20.0)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--tokenizer", default=str(DEFAULT_TOKENIZER))
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)

    per_call = {name: per_call_seconds(name, args.calls) for name in ("bar", "quiet")}

    work, corpus = reusable_corpus(args.workdir, args.mb, "prep-progress-")
    out = work / "out"
    base = prepare_command(corpus, args.tokenizer, out, "--batch-size", str(args.batch_size))
    times: dict[str, list[float]] = {"bar": [], "quiet": []}
    for i in range(args.pairs):
        for name, cmd in (("bar", base), ("quiet", [*base, "--quiet"])):
            times[name].append(timed_run(cmd, out))
            print(f"pair {i + 1}/{args.pairs} {name}: {times[name][-1]:.2f} s",
                  file=sys.stderr, flush=True)
    bar, quiet = statistics.median(times["bar"]), statistics.median(times["quiet"])
    print(json.dumps({
        "bench": "progress", "mb": args.mb, "batch_size": args.batch_size,
        "pairs": args.pairs, "bar_s": round(bar, 3), "quiet_s": round(quiet, 3),
        "ratio": round(quiet / bar, 3), "calls": args.calls,
        "bar_us_per_call": round(per_call["bar"] * 1e6, 2),
        "quiet_us_per_call": round(per_call["quiet"] * 1e6, 2),
    }))
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
