"""End-to-end throughput of ``scripts/prepare.py`` against the tokenizer-only baseline.

For a corpus of real text built by ``make_corpus.py`` (default 200 MB) and the GPT-2
tokenizer, this runs, alternating, as real child processes with the same batch size and
threads:

- **e2e**: ``python scripts/prepare.py --source C --tokenizer T --out O --quiet``;
- **baseline**: ``python benchmarks/baseline_tokenize.py C T`` (read the texts into
  memory, load the tokenizer, ``encode_batch_fast``, ids to numpy; nothing else).

Both are timed as whole processes (start-up and imports included on both sides). The
figure of merit is ``ratio = median(baseline) / median(e2e)``: 1.0 means prep costs
nothing beyond tokenizing. Alternating pairs in one run cancel most of the machine's drift.

With ``--checkpoint`` it also compares ``--checkpoint-interval 1`` with ``600`` (the
overhead of checkpointing every second), and with ``--resume`` it stops a run with SIGTERM
once ~90 % of the rows are committed, then times the resume's verification and replay
(parsed from its log line) against the time the whole run took. With ``--recycle BYTES``
it compares ``--recycle-workers BYTES`` with the default (workers never replaced), in wall
and in CPU seconds of the whole process tree (``os.wait4``).

    python benchmarks/throughput.py [--mb 200] [--pairs 3] [--batch-size 512]
                                    [--threads N] [--checkpoint] [--resume]
                                    [--recycle BYTES] [--workdir D]

Prints one JSON line per measurement on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import (
    DEFAULT_TOKENIZER,
    PREPARE,
    REPO,
    RunResult,
    manifest_tokens,
    prepare_command,
    reusable_corpus,
    run_measured,
)

BASELINE = Path(__file__).resolve().parent / "baseline_tokenize.py"


def log(msg: str) -> None:
    print(f"[throughput] {msg}", file=sys.stderr, flush=True)


def _env(threads: int | None) -> dict[str, str]:
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    return env


def run_e2e(
    corpus: Path, tok: Path, out: Path, batch: int, extra: list[str], threads: int | None
) -> tuple[float, int, int]:
    """(seconds, peak RSS KiB, tokens) of one prepare run into a fresh ``out``."""
    res = run_e2e_measured(corpus, tok, out, batch, extra, threads)
    return res.seconds, res.peak_rss_kib, manifest_tokens(out)


def run_e2e_measured(
    corpus: Path, tok: Path, out: Path, batch: int, extra: list[str], threads: int | None
) -> RunResult:
    """One prepare run into a fresh ``out``: its wall and CPU seconds and peak memory."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = prepare_command(
        corpus, tok, out, "--quiet", "--batch-size", str(batch), "--dataset", "bench", *extra
    )
    if threads:
        cmd += ["--threads", str(threads)]
    res = run_measured(cmd, out.with_suffix(".log"))
    if res.exit_code != 0:
        raise SystemExit(f"prepare failed ({res.exit_code}); see {out.with_suffix('.log')}")
    return res


def run_baseline(corpus: Path, tok: Path, batch: int, threads: int | None) -> tuple[float, int]:
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(BASELINE), str(corpus), str(tok), "--batch-size", str(batch)],
        capture_output=True,
        text=True,
        check=True,
        env=_env(threads),
        cwd=REPO,
    )
    return time.perf_counter() - t, int(json.loads(proc.stdout)["tokens"])


def throughput(args: argparse.Namespace, corpus: Path, text_bytes: int, work: Path) -> None:
    e2e, base, rss = [], [], []
    tokens = base_tokens = 0
    for i in range(args.pairs):
        s, peak, tokens = run_e2e(
            corpus, args.tokenizer, work / "out", args.batch_size, [], args.threads
        )
        e2e.append(s)
        rss.append(peak)
        b, base_tokens = run_baseline(corpus, args.tokenizer, args.batch_size, args.threads)
        base.append(b)
        log(f"pair {i + 1}: e2e {s:.2f} s, baseline {b:.2f} s, ratio {b / s:.3f}")
    em, bm = statistics.median(e2e), statistics.median(base)
    print(
        json.dumps(
            {
                "bench": "throughput",
                "corpus_mb": round(text_bytes / 1e6, 1),
                "cores": os.cpu_count(),
                "batch_size": args.batch_size,
                "threads": args.threads,
                "e2e_s": [round(x, 3) for x in e2e],
                "baseline_s": [round(x, 3) for x in base],
                "e2e_median_s": round(em, 3),
                "baseline_median_s": round(bm, 3),
                "ratio": round(bm / em, 4),
                "e2e_tokens_per_s": round(tokens / em),
                "e2e_text_mb_per_s": round(text_bytes / 1e6 / em, 2),
                "tokens": tokens,
                "baseline_tokens": base_tokens,
                "peak_rss_mib": round(max(rss) / 1024, 1),
            }
        ),
        flush=True,
    )


def checkpoint_overhead(args: argparse.Namespace, corpus: Path, work: Path) -> None:
    every, rare = [], []
    for i in range(args.pairs):
        a, _, _ = run_e2e(
            corpus,
            args.tokenizer,
            work / "out",
            args.batch_size,
            ["--checkpoint-interval", "1"],
            args.threads,
        )
        b, _, _ = run_e2e(
            corpus,
            args.tokenizer,
            work / "out",
            args.batch_size,
            ["--checkpoint-interval", "600"],
            args.threads,
        )
        every.append(a)
        rare.append(b)
        log(f"pair {i + 1}: interval 1 s {a:.2f} s, 600 s {b:.2f} s")
    a, b = statistics.median(every), statistics.median(rare)
    print(
        json.dumps(
            {
                "bench": "checkpoint",
                "interval_1_s": round(a, 3),
                "interval_600_s": round(b, 3),
                "overhead": round(a / b - 1, 4),
            }
        ),
        flush=True,
    )


def recycle_cost(args: argparse.Namespace, corpus: Path, work: Path) -> None:
    """``--recycle-workers BYTES`` against the default (never), alternating: the cost of
    replacing workers, in wall and in CPU seconds (the whole tree's), medians."""
    runs: dict[str, list[RunResult]] = {"on": [], "off": []}
    for i in range(args.pairs):
        for key, extra in (("on", ["--recycle-workers", args.recycle]), ("off", [])):
            runs[key].append(run_e2e_measured(corpus, args.tokenizer, work / "out",
                                              args.batch_size, extra, args.threads))
        on, off = runs["on"][-1], runs["off"][-1]
        log(f"pair {i + 1}: recycled {on.seconds:.2f} s ({on.cpu_seconds:.2f} CPU s), "
            f"default {off.seconds:.2f} s ({off.cpu_seconds:.2f} CPU s)")
    med = {f"{k}_{m}": statistics.median(getattr(r, m) for r in v)
           for k, v in runs.items() for m in ("seconds", "cpu_seconds")}
    print(
        json.dumps(
            {
                "bench": "recycle",
                "recycle_workers": args.recycle,
                **{k: round(v, 3) for k, v in med.items()},
                "wall_ratio": round(med["on_seconds"] / med["off_seconds"], 4),
                "cpu_ratio": round(med["on_cpu_seconds"] / med["off_cpu_seconds"], 4),
            }
        ),
        flush=True,
    )


_RESUMED = re.compile(r"verified and replayed in ([0-9.]+) s")


def resume_cost(args: argparse.Namespace, corpus: Path, work: Path) -> None:
    out = work / "resume"
    full_s, _, _ = run_e2e(corpus, args.tokenizer, out, args.batch_size, [], args.threads)
    total_rows = json.loads((out / "_MANIFEST.json").read_text())["source"]["rows_visited"]
    shutil.rmtree(out)
    staging = out.with_name(out.name + ".incomplete")
    cmd = prepare_command(
        corpus,
        args.tokenizer,
        out,
        "--quiet",
        "--batch-size",
        str(args.batch_size),
        "--checkpoint-interval",
        "0.5",
        "--dataset",
        "bench",
    )
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(args.threads)
    )
    rows = 0
    while proc.poll() is None:
        try:
            rows = json.loads((staging / "checkpoint.json").read_text())["progress"]["rows_visited"]
        except (OSError, ValueError, KeyError):
            rows = 0
        if rows >= 0.9 * total_rows:
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.05)
    code = proc.wait()
    if code != 75:
        raise SystemExit(f"could not stop the run at 90% (exit {code}); try a larger --mb")
    cp = json.loads((staging / "checkpoint.json").read_text())["progress"]["rows_visited"]
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, str(PREPARE), "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
        env=_env(args.threads),
    )
    wall = time.perf_counter() - t
    m = _RESUMED.search(res.stderr)
    if res.returncode != 0 or not m:
        raise SystemExit(f"resume failed ({res.returncode}): {res.stderr[-2000:]}")
    verify_replay = float(m.group(1))
    print(
        json.dumps(
            {
                "bench": "resume",
                "run_s": round(full_s, 3),
                "resumed_at_rows": cp,
                "total_rows": total_rows,
                "verify_replay_s": round(verify_replay, 3),
                "ratio": round(verify_replay / full_s, 4),
                "resume_process_s": round(wall, 3),
            }
        ),
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="prep throughput against the tokenizer baseline")
    p.add_argument("--mb", type=float, default=200.0)
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    p.add_argument("--checkpoint", action="store_true", help="also measure checkpoint overhead")
    p.add_argument("--resume", action="store_true", help="also measure resume cost at ~90%%")
    p.add_argument("--recycle", metavar="BYTES", default=None,
                   help="also measure the cost of --recycle-workers BYTES")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--workdir", type=Path, default=None, help="kept; the corpus is reused")
    args = p.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "prep-throughput-")
    text_bytes = int(args.mb * 1e6)
    if not args.skip_throughput:
        throughput(args, corpus, text_bytes, work)
    if args.checkpoint:
        checkpoint_overhead(args, corpus, work)
    if args.resume:
        resume_cost(args, corpus, work)
    if args.recycle:
        recycle_cost(args, corpus, work)
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
