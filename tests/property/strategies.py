"""Hypothesis strategies and a small spec model shared by the property tests.

The model is written from docs/format.md alone (numpy's generator as
the spec names it, hashlib, plain lists); it never calls prep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from spec_model import spec_is_val, spec_prefix_digest, spec_shuffle

# Texts that str.strip() empties, including Unicode whitespace.
WHITESPACE = ["", " ", "\t\n", "\r\n  ", "\u3000", "\u00a0", " \u2028 ", "\x1c"]

# File names whose string order differs from natural or per-directory order.
FILE_NAMES = ["a/b.parquet", "a.parquet", "a/10.parquet", "a/9.parquet"]


def doc_texts() -> st.SearchStrategy[str]:
    """Any text: arbitrary Unicode (non-ASCII, control characters, NUL), whitespace-only, or
    short texts over a small alphabet (so duplicates and near-duplicates occur)."""
    return st.one_of(
        st.text(max_size=24),
        st.sampled_from(WHITESPACE),
        st.text(alphabet="ab é日\n", min_size=1, max_size=6),
    )


def corpora(max_files: int = 3, max_rows: int = 8) -> st.SearchStrategy[list[list[str]]]:
    """A list of files, each a list of texts (a file may be empty)."""
    return st.lists(
        st.lists(doc_texts(), max_size=max_rows), min_size=1, max_size=max_files
    )


# -- the spec model ---------------------------------------------------------------------------


@dataclass
class SplitModel:
    docs: list[tuple[int, list[int]]] = field(default_factory=list)  # (row key, ids with sep)
    files: list[list[int]] = field(default_factory=list)
    file_docs: list[list[int]] = field(default_factory=list)  # row keys per file
    text_bytes: int = 0


@dataclass
class Model:
    rows_visited: int
    empty: int
    prefix_sha256: str
    splits: dict[str, SplitModel]


def spec_model(
    corpus: list[list[str]],
    *,
    sep: int | None,
    append: bool,
    limit: int,
    seed: int = 1337,
    fraction: float = 0.3,
    shuffle_files: bool = False,
    shuffle_buffer: int = 0,
) -> Model:
    """What the spec says the byte tokenizer produces for ``corpus`` written as files named
    ``FILE_NAMES[i]``. A row's key is its position in the corpus flattened in list order."""
    names = FILE_NAMES[: len(corpus)]
    keys: list[list[int]] = []
    k = 0
    for texts in corpus:
        keys.append(list(range(k, k + len(texts))))
        k += len(texts)
    order = sorted(range(len(corpus)), key=lambda i: names[i])
    if shuffle_files:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 0])))
        order = [order[int(i)] for i in rng.permutation(len(order))]
    rows = [(corpus[f][r], keys[f][r]) for f in order for r in range(len(corpus[f]))]
    rows = spec_shuffle(rows, shuffle_buffer, seed)

    empty = 0
    splits = {"train": SplitModel(), "val": SplitModel()}
    for text, key in rows:
        data = text.encode("utf-8")
        if text.strip() == "":
            empty += 1
            continue
        ids = list(data)
        if sep is not None:
            ids = [*ids, sep] if append else [sep, *ids]
        split = splits["val" if spec_is_val(text, seed, fraction) else "train"]
        split.docs.append((key, ids))
        split.text_bytes += len(data)

    for s in splits.values():
        cur: list[int] = []
        cur_docs: list[int] = []
        for key, ids in s.docs:
            if cur and len(cur) + len(ids) > limit:
                s.files.append(cur)
                s.file_docs.append(cur_docs)
                cur, cur_docs = [], []
            cur = cur + ids
            cur_docs.append(key)
        s.files.append(cur)  # the last (possibly the only, possibly empty) file
        s.file_docs.append(cur_docs)
    return Model(len(rows), empty, spec_prefix_digest(t for t, _ in rows), splits)
