"""Scaling with worker processes, and the main process's serial share.

On one corpus (``make_corpus.py``, default 200 MB) and the GPT-2 tokenizer, this alternates
whole ``scripts/prepare.py`` runs with ``--workers A --threads 1`` and ``--workers B
--threads 1`` (default 1 and 2), ``--pairs`` times, checks that every ``.bin`` file and the
manifest are byte-identical between the two, and reports ``ratio = median(A) / median(B)``
(above 1: B is faster). From each run's ``_PROVENANCE.json`` it also reports the main
process's own CPU seconds per GB of text: the serial work (committing, hashing the prefix,
writing) that bounds how many cores prep can keep busy, with the projection
``cores_busy = worker CPU per GB / main CPU per GB``, and the committing thread's own share
of it (``commit_thread_cpu_s_per_gb``), and each thread of the main process in the B runs,
by name (``threads_cpu_s_per_gb``, medians, from ``main_threads_cpu_seconds``), and the
copier processes that write the shards' ids beside it (``copiers_cpu_s_per_gb``, in all).

It also adds up the CPU each whole run used (user + system, every process of its tree) and
gives a bound that needs no model of prep, only that the ``cores`` cores this process may
run on give at most ``cores`` CPU seconds per second:

- ``saturation_bound = median wall(A) / (median CPU(B) / cores)``: the best ratio the B runs
  could show with the CPU they used, every core busy from start to end (each B run's wall
  is at least its CPU / cores, so the medians' is too).

Two figures that are estimates, not bounds, go with it:

- ``free_main_bound``: the same with the main process's CPU while committing
  (``main_cpu_seconds``) taken out of CPU(B): what a committing loop that cost nothing
  would allow. Start-up, sealing and publishing stay in.
- ``worker_cpu_ratio``: CPU minus that committing CPU, B over A (medians). Start-up is in
  both; above 1, the B run needs more CPU for the same work (two workers share caches and
  memory bandwidth, and each warms its own tokenizer cache).

After each pair it runs ``ceiling.py``'s measurement in the same order: the corpus read and
tokenized by gigatoken alone in A and then B forked processes, without prep. Its ratio
(``ceiling_ratio``) is what this machine gives B processes of that work over A, and
``share_of_ceiling`` is prep's ratio over it (``--no-ceiling`` skips those runs).

    python benchmarks/workers.py [--mb 200] [--pairs 3] [--a 1] [--b 2] [--workdir D]
        [--no-ceiling]

Prints ``{"bench": "workers", ...}`` on stdout; progress on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import measure as measure_ceiling
from ceiling import pair_parser
from memory import DEFAULT_TOKENIZER, prepare_command, reusable_corpus, run_measured


def log(msg: str) -> None:
    print(f"[workers] {msg}", file=sys.stderr, flush=True)


def outputs(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())
            if p.suffix == ".bin" or p.name == "_MANIFEST.json"}


def cpu_bounds(wall_a: float, tree_cpu: dict[int, list[float]],
               main_cpu: dict[int, list[float]], text_gb: float, a: int, b: int
               ) -> dict[str, float]:
    """The CPU each configuration used (medians) and the ratios it allows: see the module
    docstring. ``main_cpu`` is per GB, as reported."""
    cpu = {n: statistics.median(v) for n, v in tree_cpu.items()}
    main = {n: statistics.median(v) * text_gb for n, v in main_cpu.items()}
    cores = len(os.sched_getaffinity(0))  # the main process's threads may use any of them
    return {
        "cores": cores, "a_cpu_s": round(cpu[a], 2), "b_cpu_s": round(cpu[b], 2),
        "saturation_bound": round(wall_a / (cpu[b] / cores), 3),
        "free_main_bound": round(wall_a / ((cpu[b] - main[b]) / cores), 3),
        "worker_cpu_ratio": round((cpu[b] - main[b]) / (cpu[a] - main[a]), 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = pair_parser(__doc__, "workers")
    ap.add_argument("--no-ceiling", action="store_true",
                    help="skip the tokenizing-alone runs of benchmarks/ceiling.py")
    args = ap.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "workers-")
    times: dict[int, list[float]] = {args.a: [], args.b: []}
    ceiling: dict[int, list[float]] = {args.a: [], args.b: []}
    main_cpu: dict[int, list[float]] = {args.a: [], args.b: []}
    commit_cpu: dict[int, list[float]] = {args.a: [], args.b: []}
    tree_cpu: dict[int, list[float]] = {args.a: [], args.b: []}
    threads_cpu: list[dict[str, float]] = []  # per B run: each main-process thread, s per GB
    copiers_cpu: list[float] = []  # per B run: the copier processes' CPU, s per GB
    text_gb = 0.0
    first: dict[str, bytes] | None = None
    for i in range(args.pairs):
        order = (args.a, args.b) if i % 2 == 0 else (args.b, args.a)
        for n in order:
            out = work / f"out-w{n}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = prepare_command(corpus, DEFAULT_TOKENIZER, out, "--quiet", "--dataset",
                                  "bench", "--workers", str(n), "--threads", "1")
            res = run_measured(cmd, work / f"w{n}.log")
            if res.exit_code != 0:
                raise SystemExit(f"prepare --workers {n} failed; see {work / f'w{n}.log'}")
            prov = json.loads((out / "_PROVENANCE.json").read_text(encoding="utf-8"))
            text_gb = prov["text_bytes"] / 1e9
            times[n].append(res.seconds)
            main_cpu[n].append(prov["main_cpu_seconds"] / text_gb)
            commit_cpu[n].append(prov["commit_thread_cpu_seconds"] / text_gb)
            if n == args.b:
                threads_cpu.append({name: v / text_gb for name, v in
                                    prov["main_threads_cpu_seconds"].items()})
                if prov.get("copiers"):
                    copiers_cpu.append(prov["copiers"]["cpu_seconds"] / text_gb)
            tree_cpu[n].append(res.cpu_seconds)
            got = outputs(out)
            if first is None:
                first = got
            elif got != first:
                raise SystemExit(f"--workers {n} wrote different bytes than the first run")
            log(f"pair {i + 1}: --workers {n}: {res.seconds:.2f} s, CPU {res.cpu_seconds:.2f} s, "
                f"main CPU {main_cpu[n][-1]:.2f} s/GB, committing thread "
                f"{commit_cpu[n][-1]:.2f} s/GB")
        for n in () if args.no_ceiling else order:  # the same pair's machine, without prep
            ceiling[n].append(measure_ceiling(work, corpus, DEFAULT_TOKENIZER, n))
            log(f"pair {i + 1}: tokenizing alone in {n} processes: {ceiling[n][-1]:.2f} s")
    med = {n: statistics.median(v) for n, v in times.items()}
    serial = statistics.median(main_cpu[args.b])
    ratio = med[args.a] / med[args.b]
    limit = None
    if not args.no_ceiling:
        limit = statistics.median(ceiling[args.a]) / statistics.median(ceiling[args.b])
    print(json.dumps({
        **cpu_bounds(med[args.a], tree_cpu, main_cpu, text_gb, args.a, args.b),
        "bench": "workers", "mb": args.mb, "a": args.a, "b": args.b,
        "a_median_s": round(med[args.a], 3), "b_median_s": round(med[args.b], 3),
        "ratio": round(ratio, 3), "identical": True,
        "pair_ratios": [round(x / y, 3) for x, y in zip(times[args.a], times[args.b],
                                                        strict=True)],
        "ceiling_ratio": None if limit is None else round(limit, 3),
        "share_of_ceiling": None if limit is None else round(ratio / limit, 3),
        "main_cpu_s_per_gb": round(serial, 3),
        "commit_thread_cpu_s_per_gb": round(statistics.median(commit_cpu[args.b]), 3),
        "threads_cpu_s_per_gb": {name: round(statistics.median(r.get(name, 0.0)
                                                               for r in threads_cpu), 3)
                                 for name in sorted({k for r in threads_cpu for k in r})},
        "copiers_cpu_s_per_gb": round(statistics.median(copiers_cpu), 3) if copiers_cpu else None,
        "gb_per_s_b": round(text_gb / med[args.b], 4),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
