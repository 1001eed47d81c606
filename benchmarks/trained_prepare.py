"""``prep prepare`` with tokenizers prep trained, against its baselines, whole processes
alternated.

Usage::

    python benchmarks/trained_prepare.py --corpus DIR [--train-mb 40] [--rounds 3]
        [--workdir DIR]

Trains (once, not timed) on the first ``--train-mb`` MB of ``--corpus`` (``make_corpus.py``
makes one): ``gpt2``, ``--pre-tokenizer gpt2`` with 50,257 ids, and ``none``, no
pre-tokenization with 2,001 ids (the issue's example: a new user's first tokenizer), both
with ``<|endoftext|>``. Then ``--rounds`` times, in alternating order, each run a whole
``python -m prep prepare --source CORPUS --tokenizer T --out ...`` process:

- **gpt2-trained** (``--engine auto``: gigatoken) against **gpt2-own**, GPT-2's own
  ``tokenizer.json`` (``tests/fixtures/gpt2``): the ratio of speeds should be at least 0.8;
- **none-trained** (``--engine auto``: prep's ``bpe`` engine) against **none-hf** (the same
  tokenizer, ``--engine hf``: what ``auto`` fell back to before the ``bpe`` engine): at least 5.

Each run's wall time, peak RSS (``os.wait4``) and tokens (from its manifest); medians and
the ratios on stderr, one JSON line on stdout.
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

HERE = Path(__file__).resolve().parent
GPT2 = HERE.parent / "tests" / "fixtures" / "gpt2"
MiB = 2**20


def run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of the command, which must succeed."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[:6]} failed:\n{err.decode(errors='replace')}")
    return time.monotonic() - start, usage.ru_maxrss * 1024 / MiB


def prep(*args: object) -> list[str]:
    return [sys.executable, "-m", "prep", *map(str, args)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", required=True)
    p.add_argument("--train-mb", type=float, default=40.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workdir")
    args = p.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-trained-"))
    work.mkdir(parents=True, exist_ok=True)
    toks = {"gpt2": ("gpt2", 50_257), "none": ("none", 2_001)}
    for name, (pre, size) in toks.items():
        if not (work / name).is_dir():
            subprocess.run(prep("train-tokenizer", "--source", args.corpus, "--out",
                                work / name, "--pre-tokenizer", pre, "--vocab-size", size,
                                "--special-token", "<|endoftext|>", "--val-fraction", "0",
                                "--train-bytes", int(args.train_mb * 1e6), "--quiet"),
                           check=True)
    cases = {"gpt2-trained": (work / "gpt2", "auto"), "gpt2-own": (GPT2, "auto"),
             "none-trained": (work / "none", "auto"), "none-hf": (work / "none", "hf")}
    pairs = (("gpt2-trained", "gpt2-own"), ("none-trained", "none-hf"))
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    tokens: dict[str, int] = {}
    for r in range(args.rounds):
        for pair in pairs:
            for name in pair if r % 2 == 0 else pair[::-1]:
                tok, engine = cases[name]
                out = work / f"out-{name}"
                shutil.rmtree(out, ignore_errors=True)
                runs[name].append(run(prep("prepare", "--source", args.corpus, "--tokenizer",
                                           tok, "--engine", engine, "--out", out, "--quiet")))
                totals = json.loads((out / "_MANIFEST.json").read_text())["totals"]
                tokens[name] = sum(int(t["n_tokens"]) for t in totals.values())
                wall, rss = runs[name][-1]
                print(f"round {r} {name}: {wall:.1f} s, {rss:,.0f} MiB, "
                      f"{tokens[name] / wall / 1e6:.2f} M tokens/s", file=sys.stderr)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(m for _, m in v))
           for k, v in runs.items()}
    speed = {k: tokens[k] / med[k][0] for k in cases}  # tokens/s of the median run
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    mb = sum(pc.sum(pc.binary_length(pq.read_table(f, columns=["text"])["text"])).as_py()
             for f in sorted(Path(args.corpus).rglob("*.parquet"))) / 1e6
    result = {
        "text_mb": round(mb, 1), "rounds": args.rounds,
        **{f"{k}_s": round(v[0], 2) for k, v in med.items()},
        **{f"{k}_peak_mib": round(v[1]) for k, v in med.items()},
        **{f"{k}_mtok_s": round(v / 1e6, 3) for k, v in speed.items()},
        # bytes of text per second would be the fairer unit across vocabularies; the wall
        # times of the same corpus give it
        "gpt2_trained_vs_own_speed": round(med["gpt2-own"][0] / med["gpt2-trained"][0], 3),
        "none_bpe_vs_hf_speed": round(med["none-hf"][0] / med["none-trained"][0], 3),
        "runs": runs,
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
