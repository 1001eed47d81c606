"""prep train-tokenizer against Hugging Face's BpeTrainer, whole processes, alternated.

Usage::

    python benchmarks/train_tokenizer.py [--mb 40] [--vocab-size 50257] [--rounds 3]
        [--pre-tokenizer none|gpt2|gpt4|o200k] [--corpus DIR] [--workdir DIR]

Builds (or takes, ``--corpus``) a corpus of real text with ``make_corpus.py``, then runs, in
alternating order, ``--rounds`` times each:

- **prep**: ``python -m prep train-tokenizer --source CORPUS --vocab-size V --val-fraction 0
  --pre-tokenizer P --out ...``: exact rules; ``none`` (the default) without
  pre-tokenization (each document is one sequence), ``gpt2`` with GPT-2's;
- **hf**: a child Python process that reads the same documents (the non-empty rows, as
  prep does) and trains ``tokenizers``' ``BpeTrainer`` (vocabulary V, minimum frequency 2
  as prep's default, the byte-level alphabet) behind GPT-2's byte-level pre-tokenizer (for
  ``none`` and ``gpt2``), or the same ``Split`` regex as prep's before ``ByteLevel``
  without its regex (``gpt4``, ``o200k``): like for like from ``gpt2`` on.

Each run's wall time, the peak RSS of its process tree (``os.wait4``'s ``ru_maxrss``: the
largest process, in MiB) and its CPU time (user + system, the waited-for children
included) are taken; the medians, the ratio of wall times (prep / hf) and memory per input
byte go to stderr and one JSON line on stdout. hf trains on both cores (Rayon); prep's
merging is one thread, so on a machine shared with other jobs the CPU times tell what each
costs. The corpus is built in its own
process, so its memory is not counted.
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
MiB = 2**20

HF_CHILD = r"""
import sys, glob
import pyarrow.parquet as pq
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
corpus, vocab, out, pattern = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
docs = []
for path in sorted(glob.glob(corpus + "/**/*.parquet", recursive=True)):
    docs += [t for t in pq.read_table(path, columns=["text"]).column("text").to_pylist()
             if t and not t.isspace()]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
if pattern:
    from tokenizers import Regex
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(docs, trainer=trainer, length=len(docs))
tok.save(out)
"""


def split_regex(name: str) -> str:
    """The Split regex hf trains behind, or "" for GPT-2's ByteLevel regex itself."""
    if name in ("none", "gpt2"):
        return ""
    from prep.tokenizer.pretokenize import PATTERNS

    return PATTERNS[name]


def timed(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MiB, CPU seconds) of the command, which must succeed."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv[:4]} failed:\n{err.decode(errors='replace')}")
    return seconds, usage.ru_maxrss * 1024 / MiB, usage.ru_utime + usage.ru_stime


def corpus_of(args: argparse.Namespace, work: Path) -> Path:
    if args.corpus:
        return Path(args.corpus)
    out = work / "corpus"
    subprocess.run(
        [sys.executable, str(HERE / "make_corpus.py"), "--out", str(out), "--mb", str(args.mb)],
        check=True, capture_output=True, text=True,
    )
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mb", type=float, default=40.0)
    p.add_argument("--vocab-size", type=int, default=50_257)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pre-tokenizer", default="none", choices=("none", "gpt2", "gpt4", "o200k"))
    p.add_argument("--corpus", help="an existing corpus directory (default: build one)")
    p.add_argument("--workdir", help="where corpus and outputs go (default: a temp dir)")
    args = p.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-train-tok-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = corpus_of(args, work)
    runs: dict[str, list[tuple[float, float, float]]] = {"prep": [], "hf": []}
    for r in range(args.rounds):
        order = ["prep", "hf"] if r % 2 == 0 else ["hf", "prep"]
        for name in order:
            out = work / f"{name}-{r}"
            shutil.rmtree(out, ignore_errors=True)
            if name == "prep":
                argv = [sys.executable, "-m", "prep", "train-tokenizer", "--source",
                        str(corpus), "--vocab-size", str(args.vocab_size), "--val-fraction",
                        "0", "--pre-tokenizer", args.pre_tokenizer, "--out", str(out),
                        "--quiet"]
            else:
                out.mkdir()
                argv = [sys.executable, "-c", HF_CHILD, str(corpus), str(args.vocab_size),
                        str(out / "tokenizer.json"), split_regex(args.pre_tokenizer)]
            runs[name].append(timed(argv))
            wall, rss, cpu = runs[name][-1]
            print(f"round {r} {name}: {wall:.1f} s, {rss:,.0f} MiB, {cpu:.1f} CPU s",
                  file=sys.stderr)
    med = {k: tuple(statistics.median(run[i] for run in v) for i in range(3))
           for k, v in runs.items()}
    trained = json.loads((work / "prep-0" / "training.json").read_text())["source"]
    text_mb = trained["train_bytes"] / 1e6  # every non-empty row: --val-fraction 0
    result = {
        "text_mb": round(text_mb, 3), "vocab_size": args.vocab_size, "rounds": args.rounds,
        "pre_tokenizer": args.pre_tokenizer,
        "prep_s": round(med["prep"][0], 2), "hf_s": round(med["hf"][0], 2),
        "ratio": round(med["prep"][0] / med["hf"][0], 3),
        "prep_cpu_s": round(med["prep"][2], 2), "hf_cpu_s": round(med["hf"][2], 2),
        "prep_peak_mib": round(med["prep"][1]), "hf_peak_mib": round(med["hf"][1]),
        "prep_bytes_per_input_byte": round(med["prep"][1] * MiB / (text_mb * 1e6), 1),
        "hf_bytes_per_input_byte": round(med["hf"][1] * MiB / (text_mb * 1e6), 1),
        "runs": runs,
    }
    print(json.dumps(result))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
