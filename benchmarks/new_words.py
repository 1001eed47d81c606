"""Build a benchmark corpus whose words never stop being new, as Parquet files, offline.

Usage::

    python benchmarks/new_words.py --out /tmp/words --mb 200 [--seed 0]

Real text repeats its words: after a few hundred MB a tokenizer has seen most of them, and
a cache of the words seen (gigatoken keeps every distinct short pretoken) stops growing.
Logs, code, crawled URLs and hashes do not. This corpus is the worst case of that kind:
about half of its words are new, drawn at random, so a cache keyed by word grows with every
MB read, without end.

Documents (sizes log-uniform between 200 B and 40 KB, as ``make_corpus.py``) are lines of
words, each word one of:

- a common English word (a fixed list of 74: the part that repeats);
- an identifier: 5 to 12 random lowercase letters, as one word or camelCase (one pretoken
  of at most 15 bytes for GPT-2's split rule, the size gigatoken caches);
- a URL: ``https://`` + a random host + a path of two random words + ``?id=`` + a number;
- a hex string of 8 to 40 digits (a hash, cut by GPT-2's rule into short runs of letters and
  digits that do repeat);
- a number of 4 to 9 digits.

The layout is ``make_corpus.py``'s (``part-NNNNN.parquet``, one ``text`` column, zstd,
row groups of 1,000 rows, a new file after ~64 MB). Deterministic: the same seed and
pyarrow version give byte-identical files. Prints ``{"out", "files", "docs", "text_mb"}``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from make_corpus import DEFAULT_MB, DOC_TARGET_RANGE, CorpusStats, run_cli, write_documents

COMMON = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but",
    "have", "an", "they", "you", "were", "her", "she", "there", "been", "one", "all", "we",
    "their", "has", "would", "when", "if", "so", "no", "will", "more", "can", "about",
    "them", "other", "into", "some", "could", "time", "these", "two", "may", "then", "do",
    "first", "any", "my", "now", "such", "like", "our", "over", "man", "me", "even", "most",
    "made", "after", "also",
)
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# What each word is: common, identifier, URL, hex string, number (probabilities).
KINDS = (0.5, 0.3, 0.06, 0.07, 0.07)
WORDS_PER_LINE = 12


def strings(rng: np.random.Generator, alphabet: np.ndarray, low: int, high: int, n: int
            ) -> list[str]:
    """``n`` random strings of ``low`` to ``high`` characters of ``alphabet``, drawn in bulk
    (one numpy call per document, not per character)."""
    if n == 0:
        return []
    lengths = rng.integers(low, high + 1, n)
    text = alphabet[rng.integers(0, len(alphabet), int(lengths.sum()))].tobytes().decode()
    ends = np.cumsum(lengths).tolist()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def document(rng: np.random.Generator, n: int) -> str:
    """One document of ``n`` words (see the module docstring)."""
    kinds = rng.choice(len(KINDS), size=n, p=KINDS)
    count = np.bincount(kinds, minlength=len(KINDS)).tolist()
    common = [COMMON[i] for i in rng.integers(0, len(COMMON), count[0]).tolist()]
    heads = strings(rng, LETTERS, 3, 6, count[1])
    tails = strings(rng, LETTERS, 3, 6, count[1])
    camel = (rng.random(count[1]) < 0.5).tolist()
    idents = [a + (b.capitalize() if c else b) for a, b, c in zip(heads, tails, camel,
                                                                   strict=True)]
    parts = strings(rng, LETTERS, 5, 10, 3 * count[2])
    ids = rng.integers(10**5, 10**9, count[2]).tolist()
    urls = [f"https://{parts[3 * i]}.example.org/{parts[3 * i + 1]}/{parts[3 * i + 2]}"
            f"?id={ids[i]}" for i in range(count[2])]
    hexes = strings(rng, HEX, 8, 40, count[3])
    numbers = [str(v) for v in rng.integers(1000, 10**9, count[4]).tolist()]
    pools = [iter(common), iter(idents), iter(urls), iter(hexes), iter(numbers)]
    words = [next(pools[k]) for k in kinds.tolist()]
    lines = [" ".join(words[i : i + WORDS_PER_LINE]) for i in range(0, n, WORDS_PER_LINE)]
    return "\n".join(lines)


def documents(seed: int) -> Iterator[str]:
    """An endless, deterministic stream of documents (see the module docstring)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 23])))
    low, high = math.log(DOC_TARGET_RANGE[0]), math.log(DOC_TARGET_RANGE[1])
    while True:
        target = math.exp(rng.uniform(low, high))
        yield document(rng, max(8, int(target / 8)))  # ~8 bytes per word with its space


def build_corpus(out: Path, mb: float = DEFAULT_MB, seed: int = 0) -> CorpusStats:
    """Write ``mb`` MB of new-word documents under ``out``; raises as
    ``make_corpus.build_corpus`` does."""
    return write_documents(out, mb, documents(seed))


def main(argv: list[str] | None = None) -> int:
    """CLI: build the corpus, print the JSON summary line; exit 1 on a refused ``--out``."""
    return run_cli("new_words", __doc__ or "", build_corpus, argv)


if __name__ == "__main__":
    sys.exit(main())
