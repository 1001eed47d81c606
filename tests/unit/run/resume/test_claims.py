"""``prep.run.resume.claims``: the checks resume makes of a checkpoint's claims, on shards a real
writer made. Documents have known lengths (document k's ids are all k + 1, the separator is
0), so the expected first and last document and every cut come from the inputs, not from
prep: the cut rule is simulated here from the README."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import pytest
from run_helpers import checked_shards

from prep.errors import IntegrityError
from prep.formats import ShardFormat, get_format
from prep.run.resume.claims import Shard, check_cuts

FMT = get_format("llmc")
SEP = 0
LENGTHS = [5, 3, 7, 2, 6, 4, 1, 8, 3, 3]  # ids per document, separator not included
LIMIT = 12


def written(directory: Path, append: bool, fmt: ShardFormat = FMT) -> list[Shard]:
    """The documents written with rollover at LIMIT, each file as resume checks it."""
    return checked_shards(directory, fmt, LENGTHS, LIMIT, append)


def simulated_files() -> list[list[int]]:
    """Document lengths (with the separator) per file, by the README's rule."""
    files: list[list[int]] = [[]]
    for n in LENGTHS:
        if files[-1] and sum(files[-1]) + n + 1 > LIMIT:
            files.append([])
        files[-1].append(n + 1)
    return files


@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_check_cuts_accepts_the_real_cuts_and_returns_the_last_document(
    tmp_path: Path, append: bool
) -> None:
    files = written(tmp_path, append)
    assert [f.tokens for f in files] == [sum(d) for d in simulated_files()]
    last = check_cuts(tmp_path, files, SEP, True, append, LIMIT)
    assert last == LENGTHS[-1] + 1


@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_a_larger_limit_that_some_cut_contradicts_is_refused(tmp_path: Path, append: bool) -> None:
    """The smallest limit under which some sealed file would have taken the next document:
    file k's tokens plus the next file's first document."""
    sims = simulated_files()
    sums = [sum(a) + b[0] for a, b in itertools.pairwise(sims)]
    limit, k = min(sums), sums.index(min(sums))
    files = written(tmp_path, append)
    with pytest.raises(IntegrityError) as info:
        check_cuts(tmp_path, files, SEP, True, append, limit)
    assert f"train-{k:05d}.bin: was sealed at {sum(sims[k]):,} tokens although the next " \
           f"document ({sims[k + 1][0]:,} tokens, the first of train-{k + 1:05d}.bin) fits " \
           f"the recipe's --max-file-tokens {limit:,}" in str(info.value)
    check_cuts(tmp_path, files, SEP, True, append, limit - 1)  # every cut agrees: accepted


@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_the_other_separator_position_is_refused(tmp_path: Path, append: bool) -> None:
    files = written(tmp_path, append)
    with pytest.raises(IntegrityError, match=r"train-00000\.bin: does not (start|end) with "
                       r"the separator 0, as --sep-position (prepend|append) puts it"):
        check_cuts(tmp_path, files, SEP, True, not append, LIMIT)


def test_without_a_separator_only_the_counts_are_known(tmp_path: Path) -> None:
    """An ordinary-token separator (not exclusive) does not tell documents apart: the
    shards cannot give the cut rule from below nor the last document."""
    files = written(tmp_path, False)
    assert check_cuts(tmp_path, files, SEP, False, False, 10**6) is None
    more = [replace(files[0], docs=files[0].scan.count + 1), *files[1:]]
    with pytest.raises(IntegrityError, match="separators but"):
        check_cuts(tmp_path, more, SEP, False, False, LIMIT)


@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_recorded_document_lengths_are_checked_against_the_separators(
    tmp_path: Path, append: bool
) -> None:
    """Megatron's open shard: its index is rebuilt from the checkpoint's document lengths,
    so lengths that keep the count and the sum but move a boundary are refused."""
    files = written(tmp_path, append, get_format("megatron"))
    last = files[-1]
    assert last.lengths == tuple(n + 1 for n in LENGTHS[-len(last.lengths or ()):])
    check_cuts(tmp_path, files, SEP, True, append, LIMIT)
    a, b, *rest = last.lengths or ()
    moved = replace(last, lengths=(a + 1, b - 1, *rest))
    with pytest.raises(IntegrityError, match=rf"its {last.name} document lengths disagree "
                       "with the file's separators from document 0 on"):
        check_cuts(tmp_path, [*files[:-1], moved], SEP, True, append, LIMIT)
