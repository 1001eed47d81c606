"""Part assignment (docs/format.md, "Partitioned runs"): worked examples by hand, then the
rule's literal transcription as an oracle for any listing, and the properties it promises."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.errors import InputError, UsageError
from prep.partition import (
    Part,
    argv_without,
    boundaries,
    part_at,
    part_out,
    part_range,
    parts_root,
)


@pytest.mark.parametrize(
    ("sizes", "count", "expected"),
    [
        # c = 0,10,20,30,40: equal shares land exactly on file boundaries.
        ([10, 10, 10, 10], 2, [0, 2, 4]),
        ([10, 10, 10, 10], 4, [0, 1, 2, 3, 4]),
        # shares at 13.3 and 26.7 bytes: the nearest boundaries are 10 (k=1) and 30 (k=3).
        ([10, 10, 10, 10], 3, [0, 1, 3, 4]),
        # a 100-byte file first: the nearest boundary to 34.3 is k=0, pushed to 1 so part 0
        # is not empty; 68.7 is nearest to k=1, pushed to 2 for the same reason.
        ([100, 1, 1, 1], 3, [0, 1, 2, 4]),
        # the big file last: 51.5 is 48.5 from c=3 and 51.5 from c=103.
        ([1, 1, 1, 100], 2, [0, 3, 4]),
        # a tie (share 2: c=1 and c=3 are both 1 away) goes to the smaller k.
        ([1, 2, 1], 2, [0, 1, 3]),
        # empty files: every distance is 0, the smallest allowed k wins.
        ([0, 0, 0], 3, [0, 1, 2, 3]),
        ([7, 3, 9], 1, [0, 3]),
    ],
)
def test_worked_examples(sizes: list[int], count: int, expected: list[int]) -> None:
    assert boundaries(sizes, count) == expected


def test_more_parts_than_files_is_refused_with_the_limit() -> None:
    with pytest.raises(InputError, match=r"4 parts but the source has only 3 file\(s\).*at most 3"):
        boundaries([1, 2, 3], 4)


@pytest.mark.parametrize("text", ["3", "1/0", "-1/2", "a/b", "2/2", "1/2/3", ""])
def test_part_spec_rejects_malformed_or_out_of_range(text: str) -> None:
    with pytest.raises(UsageError, match="--part"):
        Part.parse(text)


def test_part_spec_and_paths() -> None:
    part = Part.parse("2/3")
    assert (part.index, part.count, part.name) == (2, 3, "2-of-3")
    assert parts_root(Path("/d/tok")) == Path("/d/tok.parts")
    assert part_out(Path("/d/tok"), part) == Path("/d/tok.parts/2-of-3")
    assert list(part_range([5, 5, 5, 5, 5, 5], part)) == [4, 5]


def rule(sizes: list[int], count: int) -> list[int]:
    """The docstring's rule, transcribed literally: a scan over every allowed k."""
    n, total = len(sizes), sum(sizes)
    b = [0]
    for i in range(1, count):
        allowed = range(b[-1] + 1, n - (count - i) + 1)
        b.append(min(allowed, key=lambda k: (abs(count * sum(sizes[:k]) - i * total), k)))
    return [*b, n]


listings = st.lists(st.integers(0, 10_000), min_size=1, max_size=40)


@settings(max_examples=400, deadline=None)
@given(listings, st.data())
def test_matches_the_rule_and_covers_every_file_once(sizes: list[int], data: st.DataObject) -> None:
    count = data.draw(st.integers(1, len(sizes)))
    b = boundaries(sizes, count)
    assert b == rule(sizes, count)
    ranges = [part_range(sizes, Part(i, count)) for i in range(count)]
    assert [i for r in ranges for i in r] == list(range(len(sizes)))  # contiguous, in order
    assert all(len(r) >= 1 for r in ranges)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60), st.integers(1, 1000), st.data())
def test_equal_sizes_give_counts_that_differ_by_at_most_one(
    n: int, size: int, data: st.DataObject
) -> None:
    count = data.draw(st.integers(1, n))
    lengths = [len(part_range([size] * n, Part(i, count))) for i in range(count)]
    assert set(lengths) <= {n // count, -(-n // count)}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=40), st.data())
def test_no_part_exceeds_a_share_plus_the_largest_file(
    sizes: list[int], data: st.DataObject
) -> None:
    count = data.draw(st.integers(1, len(sizes)))
    for i in range(count):
        part = sum(sizes[k] for k in part_range(sizes, Part(i, count)))
        assert part * count <= sum(sizes) + count * max(sizes)


def test_argv_without_drops_valued_options_in_both_spellings_and_flags_alone() -> None:
    argv = ["--out", "d", "--workers", "8", "--resume", "--part=1/2", "--seed", "7",
            "--resume=x", "--quiet"]
    assert argv_without(argv, ("--workers", "--part"), ("--resume",)) == [
        "--out", "d", "--seed", "7", "--quiet"]
    assert argv_without(["--workers", "--resume"], ("--workers",)) == []  # its value went too


def test_part_at_names_the_parts_folder_and_n_of_a_parts_dataset_path() -> None:
    assert part_at("x/d.parts/2-of-4") == ("x/d.parts", 4)
    assert part_at("d.parts/0-of-1/") == ("d.parts", 1)
    assert part_at("x/d/2-of-4") is None  # a folder so named, not under NAME.parts/
    assert part_at("x/d.parts/2-of-4.incomplete") is None  # a run's state, no dataset
    assert part_at("x/d.parts/shared") is None
