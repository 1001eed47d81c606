"""What the guard costs: the same ``prepare`` with it and without it.

Two measurements on a real-text corpus (``benchmarks/make_corpus.py``):

- **scan**: the guard's test per document, on the corpus's documents in memory: the
  shipped way (``str.isascii()``, ``bytes.translate`` deleting all but the lead bytes of
  guarded code points, then numpy decoding the documents left at those bytes) against a
  ``re`` character class over the code points and a ``frozenset`` of them with
  ``isdisjoint``;
  seconds per GB of text, and how many documents are routed.
- **prepare**: whole ``python scripts/prepare.py`` processes (GPT-2, default engine),
  alternated ``--pairs`` times between this checkout and ``--base``, a checkout of the
  commit before the guard (``git worktree add ../prep-before COMMIT``), each with its
  own ``PYTHONPATH``; ``ratio = median(guard) / median(base)``.

    python benchmarks/guard.py --corpus CORPUS_DIR [--base ../prep-before] [--pairs 3]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src")]
from prep.encoders.guard import BYTE_LEVEL_PATTERN, Guard, guard_for  # noqa: E402
from prep.state.versions import installed_version  # noqa: E402

GPT2 = REPO / "tests" / "fixtures" / "gpt2" / "tokenizer.json"


def scan(corpus: Path) -> dict[str, object]:
    texts = [t for f in sorted(corpus.glob("*.parquet"))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    utf8 = [t.encode("utf-8") for t in texts]
    size = sum(map(len, utf8))
    guard = guard_for("gigatoken", installed_version("gigatoken") or "", BYTE_LEVEL_PATTERN)
    assert isinstance(guard, Guard)
    points = frozenset(c for lo, hi in guard.ranges for c in range(lo, hi + 1))
    chars = frozenset(chr(c) for c in points)
    cp_search = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}"
                                         for lo, hi in guard.ranges) + "]").search
    ways = {
        "shipped_isascii_translate_numpy": lambda: guard.hits(texts, utf8),
        "isascii_then_codepoint_re": lambda: [i for i, t in enumerate(texts)
                                              if not t.isascii() and cp_search(t)],
        "isascii_then_frozenset": lambda: [i for i, t in enumerate(texts)
                                           if not t.isascii() and not chars.isdisjoint(t)],
    }
    out: dict[str, object] = {"docs": len(texts), "text_mb": round(size / 1e6, 1),
                              "non_ascii_docs": sum(not t.isascii() for t in texts)}
    for name, way in ways.items():
        times = []
        for _ in range(5):
            t = time.perf_counter()
            hits = way()
            times.append(time.perf_counter() - t)
        out[name] = {"s_per_gb": round(statistics.median(times) / size * 1e9, 3),
                     "routed": len(hits)}
    # The worst case for the prefilter: every document also holds an emoji (a lead byte
    # 0xF0, as the astral guarded ranges have), so each goes through the regex.
    emoji = [t + " \U0001F44D" for t in texts]
    emoji8 = [t.encode("utf-8") for t in emoji]
    t = time.perf_counter()
    guard.hits(emoji, emoji8)
    out["every_doc_with_an_emoji_s_per_gb"] = round((time.perf_counter() - t) / size * 1e9, 3)
    return out


def prepare(checkout: Path, corpus: Path, out: Path) -> float:
    """One whole run's wall seconds. Each checkout has its own tokenizer memo (a memo
    written by the other would be a stranger, found again at every run)."""
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(checkout / "src"),
           "XDG_CACHE_HOME": str(out.parent / f"cache-{out.name}")}
    t = time.perf_counter()
    subprocess.run([sys.executable, str(checkout / "scripts" / "prepare.py"), "--source",
                    str(corpus), "--tokenizer", str(GPT2), "--out", str(out), "--quiet"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--base", type=Path, help="a checkout of the code before the guard")
    p.add_argument("--pairs", type=int, default=3)
    args = p.parse_args(argv)
    result: dict[str, object] = {"scan": scan(args.corpus)}
    if args.base is not None:
        times: dict[str, list[float]] = {"guard": [], "base": []}
        with tempfile.TemporaryDirectory() as tmp:
            for name, checkout in (("guard", REPO), ("base", args.base)):  # warm each memo
                prepare(checkout, args.corpus, Path(tmp) / name)
            for k in range(args.pairs):
                order = ("guard", "base") if k % 2 == 0 else ("base", "guard")
                for name in order:
                    checkout = REPO if name == "guard" else args.base
                    times[name].append(prepare(checkout, args.corpus, Path(tmp) / name))
                    print(f"[guard] pair {k + 1} {name}: {times[name][-1]:.2f} s",
                          file=sys.stderr, flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        result["prepare"] = {"guard_median_s": round(med["guard"], 3),
                             "base_median_s": round(med["base"], 3),
                             "ratio": round(med["guard"] / med["base"], 4), "runs": times}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
