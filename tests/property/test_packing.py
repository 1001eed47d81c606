"""``--pack fixed`` for any document lengths, against a naive reference packer written here
from docs/format.md's rule: the split's stream (each document's ids after its separator)
cut every ``--max-file-tokens`` ids; a document starts in the file that holds its first id
(its separator); an indexed file lists the pieces it holds, the end of a document begun
before first. The real writer (Megatron's layout: its ``.idx`` read by the independent
reader of ``tests/format_readers.py``) is fed the documents in random batches, with a
commit and a restore (a resume's) at a random batch; lengths include documents longer
than a file, ones exactly filling one, and no documents at all (an empty split)."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from format_readers import read_megatron_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.formats import get_format
from prep.stream.writer import SplitWriter, lay_out

SEP = 0
FMT = get_format("megatron")


def reference(lengths: list[int], limit: int) -> list[tuple[list[int], int, int, list[int]]]:
    """(ids, documents starting, first_doc_at, pieces) per file, id by id."""
    stream, starts = [], []
    for k, n in enumerate(lengths):
        starts.append(len(stream))
        stream += [SEP] + [k % 200 + 1] * n
    files = []
    for lo in range(0, max(len(stream), 1), limit):
        hi = min(len(stream), lo + limit)
        mine = [s - lo for s in starts if lo <= s < hi]
        bounds = sorted({0, hi - lo, *mine})
        files.append((stream[lo:hi], len(mine), mine[0] if mine else hi - lo,
                      [b - a for a, b in itertools.pairwise(bounds)]))
    return files


def written(directory: Path, lengths: list[int], limit: int, cuts: list[int], resume_at: int
            ) -> list[tuple[list[int], int, int, list[int]]]:
    w = SplitWriter(directory, FMT, "train", 256, SEP, False, limit, fixed=True)
    w.start()
    bounds = sorted({0, len(lengths), *(c % (len(lengths) + 1) for c in cuts)})
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if b == resume_at:  # a commit point, then a resume's restore of its state
            w.sync()
            state = w.state()
            verified = FMT.check_open(directory, state.open, 256, SEP)  # type: ignore[arg-type]
            w.close()
            w = SplitWriter(directory, FMT, "train", 256, SEP, False, limit, fixed=True)
            w.restore(state, FMT.reopen(directory, verified, 256))
        ids = [np.full(n, k % 200 + 1, dtype=np.uint32) for k, n in enumerate(lengths)][lo:hi]
        flat = np.concatenate([np.zeros(0, np.uint32), *ids])
        w.add_laid(lay_out(flat, np.asarray(lengths[lo:hi], np.int64), 0, SEP, False))
    out = []
    for r in w.finish():
        ids = np.fromfile(directory / r.name, dtype="<u2").tolist()
        index = read_megatron_index(directory / r.name.replace(".bin", ".idx"))
        assert r.first_doc_at is not None
        out.append((ids, r.n_docs, r.first_doc_at, list(index["lengths"])))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[int], int, list[int], int]:
    limit = draw(st.integers(1, 40))
    one = st.one_of(st.integers(0, 3 * limit), st.just(limit - 1), st.just(2 * limit - 1))
    lengths = draw(st.lists(one, max_size=25))
    cuts = draw(st.lists(st.integers(0, 30), max_size=6))
    return lengths, limit, cuts, draw(st.integers(0, 6))


def check(case: tuple[list[int], int, list[int], int]) -> None:
    lengths, limit, cuts, resume_at = case
    with tempfile.TemporaryDirectory() as tmp:
        got = written(Path(tmp), lengths, limit, cuts, resume_at)
    assert got == reference(lengths, limit)
    assert all(len(f[0]) == limit for f in got[:-1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fixed_packing_is_the_naive_packers(case: tuple[list[int], int, list[int], int]
                                            ) -> None:
    check(case)


@pytest.mark.soak
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fixed_packing_is_the_naive_packers_soak(case: tuple[list[int], int, list[int], int]
                                                 ) -> None:
    check(case)


def test_the_edge_cases_by_name() -> None:
    """A document exactly filling a file, one longer than two, and an empty split."""
    for lengths, limit in (([4, 2], 5), ([11, 1], 4), ([], 3), ([2, 2, 2], 3)):
        check((lengths, limit, [1], 1))
