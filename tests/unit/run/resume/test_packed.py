"""``prep.run.resume.packed``: resume's checks of a ``--pack fixed`` split, on shards a real
writer made. Document k's ids are all k + 1 and the separator is 0, so where each file's
documents start comes from the inputs: the fixed rule (every file but the last holds
exactly LIMIT ids) is simulated here from docs/format.md."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from run_helpers import checked_shards

from prep.errors import IntegrityError
from prep.formats import ShardFormat, get_format
from prep.run.resume.packed import Shard, check_fixed_cuts, check_fixed_records

FMT = get_format("llmc")
SEP = 0
LENGTHS = [5, 3, 30, 2, 6, 4, 1, 8, 3, 2, 4, 1]  # ids per document, without the separator
LIMIT = 12


def written(directory: Path, append: bool, fmt: ShardFormat = FMT) -> list[Shard]:
    """The documents written packed fixed at LIMIT, each file as resume checks it."""
    return checked_shards(directory, fmt, LENGTHS, LIMIT, append, fixed=True)


def simulated() -> list[tuple[int, int, int]]:
    """(ids, documents starting, first_doc_at) per file, from the rule: the stream cut
    every LIMIT ids; a document starts where its first id (or separator) lies."""
    starts, at = [], 0
    for n in LENGTHS:
        starts.append(at)
        at += n + 1
    out = []
    for lo in range(0, at, LIMIT):
        hi = min(at, lo + LIMIT)
        mine = [s - lo for s in starts if lo <= s < hi]
        out.append((hi - lo, len(mine), mine[0] if mine else hi - lo))
    return out


@pytest.mark.parametrize("fmt", ["llmc", "megatron"])
@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_the_real_cuts_pass_and_give_the_last_document(tmp_path: Path, append: bool,
                                                       fmt: str) -> None:
    files = written(tmp_path, append, get_format(fmt))
    assert [(f.tokens, f.docs, f.first) for f in files] == simulated()
    check_fixed_records(tmp_path, files, LIMIT)
    assert check_fixed_cuts(tmp_path, files, SEP, True, append) == LENGTHS[-1] + 1
    assert check_fixed_cuts(tmp_path, files, SEP, False, append) is None


def test_a_sealed_file_that_is_not_full_is_refused(tmp_path: Path) -> None:
    files = written(tmp_path, False, get_format("llmc"))
    with pytest.raises(IntegrityError, match=r"train-00000.bin: holds 12 tokens, but --pack "
                       r"fixed puts exactly the recipe's --max-file-tokens 13 in a sealed file"):
        check_fixed_records(tmp_path, files, LIMIT + 1)


@pytest.mark.parametrize("append", [False, True], ids=["prepend", "append"])
def test_a_moved_document_start_is_refused(tmp_path: Path, append: bool) -> None:
    files = written(tmp_path, append, get_format("llmc"))
    k = next(i for i, f in enumerate(files) if i and 0 < f.first < f.tokens)
    files[k] = replace(files[k], first=files[k].first - 1)
    check_fixed_records(tmp_path, files, LIMIT)  # still fits the records alone
    with pytest.raises(IntegrityError, match=rf"train-{k:05d}.bin: its separators start "):
        check_fixed_cuts(tmp_path, files, SEP, True, append)


def test_first_doc_at_that_cannot_be_is_refused(tmp_path: Path) -> None:
    files = written(tmp_path, False, get_format("llmc"))
    assert files[1].docs == 0 and files[3].docs  # the long document covers file 1
    for forged in (replace(files[0], first=1), replace(files[3], first=None),
                   replace(files[3], first=files[3].tokens), replace(files[1], first=0)):
        k = int(forged.name[6:11])
        with pytest.raises(IntegrityError, match=rf"{forged.name}: first_doc_at"):
            check_fixed_records(tmp_path, [*files[:k], forged, *files[k + 1:]], LIMIT)


def test_an_open_files_pieces_must_be_the_separators(tmp_path: Path) -> None:
    """Megatron's open file: the pieces its index is rebuilt from are the checkpoint's;
    resume finds them in its separators (every one kept), a document begun before first."""
    files = written(tmp_path, False, get_format("megatron"))
    op = files[-1]
    assert op.lengths is not None and op.scan.every is not None and op.first
    size, _, first = simulated()[-1]
    starts = [first, *(p for p in op.scan.every if p > first)]
    assert op.lengths == tuple(np.diff([0, *starts, size]).tolist())
    forged = (op.lengths[0] + 1, op.lengths[1] - 1, *op.lengths[2:])
    files[-1] = replace(op, lengths=forged)
    with pytest.raises(IntegrityError, match="document pieces disagree with the file's "):
        check_fixed_cuts(tmp_path, files, SEP, True, False)
