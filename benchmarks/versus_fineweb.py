"""prep against llm.c's ``fineweb.py`` recipe, side by side, as whole processes.

On the same Parquet files (``make_corpus.py``, default 40 MB) and the same cores, this
alternates ``scripts/prepare.py --tokenizer GPT-2`` (default options: checkpoints, manifest
and the run-time cross-check on) with ``fineweb_recipe.py`` (tiktoken in a process pool,
shards written), ``--pairs`` times, and reports ``ratio = median(recipe) / median(prep)``:
above 1 prep is faster. Before timing, it checks that both wrote the same documents with
the same ids: the recipe's stream cut at its ``<|endoftext|>`` prefixes must be prep's
train and val documents merged back in order.

    python benchmarks/versus_fineweb.py [--mb 40] [--pairs 5] [--workdir D]
                                        [--prep-args "--workers 2"]

Prints ``{"bench": "versus_fineweb", ...}`` on stdout; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, prepare_command, reusable_corpus, run_measured

RECIPE = Path(__file__).resolve().parent / "fineweb_recipe.py"
EOT = 50256


def log(msg: str) -> None:
    print(f"[versus_fineweb] {msg}", file=sys.stderr, flush=True)


def payload(paths: list[Path]) -> np.ndarray:
    """The ids of llm.c ``.bin`` files, concatenated (header: 256 int32, version 1 = uint16)."""
    parts = []
    for p in paths:
        raw = p.read_bytes()
        header = np.frombuffer(raw[:1024], dtype=np.int32)
        dtype = np.uint16 if header[1] == 1 else np.uint32
        parts.append(np.frombuffer(raw[1024:], dtype=dtype)[: header[2]])
    return np.concatenate(parts).astype(np.int64)


def documents(stream: np.ndarray) -> list[bytes]:
    """Documents of an EOT-prefixed stream, each as its ids' bytes."""
    starts = np.flatnonzero(stream == EOT)
    ends = [*starts[1:], len(stream)]
    return [stream[s:e].tobytes() for s, e in zip(starts, ends, strict=True)]


def same_documents(recipe_out: Path, prep_out: Path) -> str | None:
    """None when the recipe's documents are prep's train and val documents merged in
    stream order; otherwise what differs."""
    # In shard order: the recipe names shard 0 ``val`` and the others ``train``, so the
    # names alone sort shard 1 first as soon as there are two.
    shards = sorted(recipe_out.glob("*.bin"), key=lambda p: int(p.stem.rsplit("_", 1)[1]))
    want = documents(payload(shards))
    queues = {s: documents(payload(sorted(prep_out.glob(f"{s}-*.bin")))) for s in ("train", "val")}
    pos = {"train": 0, "val": 0}
    for i, doc in enumerate(want):
        for split, docs in queues.items():
            if pos[split] < len(docs) and docs[pos[split]] == doc:
                pos[split] += 1
                break
        else:
            return f"document {i:,} of the recipe is not the next train or val document of prep"
    left = {s: len(d) - pos[s] for s, d in queues.items() if len(d) != pos[s]}
    return f"prep has documents the recipe has not: {left}" if left else None


def run(cmd: list[str], log_path: Path) -> float:
    res = run_measured(cmd, log_path)
    if res.exit_code != 0:
        raise SystemExit(f"{cmd[1]} failed ({res.exit_code}); see {log_path}")
    return res.seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=40.0)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--prep-args", default="", help="extra prepare options, one string")
    args = ap.parse_args(argv)
    work, corpus = reusable_corpus(args.workdir, args.mb, "versus-fineweb-")
    extra = shlex.split(args.prep_args)
    prep_out, recipe_out = work / "prep-out", work / "recipe-out"

    def prep() -> float:
        shutil.rmtree(prep_out, ignore_errors=True)
        cmd = prepare_command(corpus, DEFAULT_TOKENIZER, prep_out, "--quiet", *extra)
        return run(cmd, work / "prep.log")

    def recipe() -> float:
        shutil.rmtree(recipe_out, ignore_errors=True)
        cmd = [sys.executable, str(RECIPE), "--source", str(corpus), "--out", str(recipe_out)]
        return run(cmd, work / "recipe.log")

    log("warm-up pair and identity check")
    prep(), recipe()
    differs = same_documents(recipe_out, prep_out)
    if differs:
        raise SystemExit(f"prep and the recipe disagree: {differs}")
    times: dict[str, list[float]] = {"prep": [], "recipe": []}
    for i in range(args.pairs):
        order = (("prep", prep), ("recipe", recipe)) if i % 2 == 0 else (
            ("recipe", recipe), ("prep", prep))
        for name, fn in order:
            times[name].append(fn())
        ratios = [r / p for p, r in zip(times["prep"], times["recipe"], strict=False)]
        log(f"pair {i + 1}: prep {times['prep'][-1]:.2f} s, recipe {times['recipe'][-1]:.2f} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(json.dumps({
        "bench": "versus_fineweb", "mb": args.mb, "prep_args": args.prep_args,
        "prep_median_s": round(med["prep"], 3), "recipe_median_s": round(med["recipe"], 3),
        "ratio": round(med["recipe"] / med["prep"], 3),
        "pair_ratios": [round(r, 3) for r in ratios], "same_documents": True,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
