"""A naive BPE trainer and encoder written straight from the spec's rules (the independent
oracle of tests/unit/test_bpe*.py): recount every pair of every document for every merge."""

from __future__ import annotations

import itertools


def count_pairs(docs: list[list[int]]) -> dict[tuple[int, int], int]:
    """Every adjacent position of every sequence; pairs never span two documents."""
    counts: dict[tuple[int, int], int] = {}
    for seq in docs:
        for pair in itertools.pairwise(seq):
            counts[pair] = counts.get(pair, 0) + 1
    return counts


def replace(seq: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """Occurrences of ``pair`` replaced left to right without overlap."""
    out: list[int] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def train(
    documents: list[bytes], vocabulary_size: int = 512, minimum_pair_frequency: int = 2
) -> list[tuple[int, int, int]]:
    """The merges as (left, right, count), in training order."""
    docs = [list(d) for d in documents]
    merges: list[tuple[int, int, int]] = []
    while 256 + len(merges) < vocabulary_size:
        counts = count_pairs(docs)
        eligible = [(c, p) for p, c in counts.items() if c >= minimum_pair_frequency]
        if not eligible:
            break
        best = max(c for c, _ in eligible)
        pair = min(p for c, p in eligible if c == best)  # ties: the smaller (left, right)
        new = 256 + len(merges)
        merges.append((pair[0], pair[1], best))
        docs = [replace(seq, pair, new) for seq in docs]
    return merges


def encode(data: bytes, merges: list[tuple[int, int]]) -> list[int]:
    """Bytes, then every merge in training order, each left to right without overlap."""
    seq = list(data)
    for k, pair in enumerate(merges):
        seq = replace(seq, pair, 256 + k)
    return seq


def split(text: str, pattern: str) -> list[str]:
    """The pieces Hugging Face ``tokenizers``' ``Split`` pre-tokenizer (isolating each match
    of ``pattern``) makes of ``text``: the reference of what a pre-tokenizer does."""
    from tokenizers import Regex, pre_tokenizers

    return [piece for piece, _ in
            pre_tokenizers.Split(Regex(pattern), "isolated").pre_tokenize_str(text)]


def train_split(
    texts: list[str], pattern: str, vocabulary_size: int = 512, minimum_pair_frequency: int = 2
) -> list[tuple[int, int, int]]:
    """The rules with pre-tokenization: every piece of every text is its own sequence
    (pairs are counted inside pieces only, once per occurrence)."""
    pieces = [p.encode("utf-8") for t in texts for p in split(t, pattern)]
    return train(pieces, vocabulary_size, minimum_pair_frequency)


def encode_split(text: str, pattern: str, merges: list[tuple[int, int]]) -> list[int]:
    """Each piece encoded by :func:`encode`, in order."""
    return [i for p in split(text, pattern) for i in encode(p.encode("utf-8"), merges)]
