"""Planning worker tasks from the files' units (here Parquet footers): the tasks cover
exactly the stream rows after a resume point and before --max-documents, each file's first
task hashes it, and every file reached is opened even without rows to read."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import write_parquet
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.run.work.cuts import MIN_SPAN_ROWS, BlockTask, RowGroupTask, row_group_tasks
from prep.sources import jsonl_blocks as jb
from prep.sources import resolve_local

SIZES = [(120, 50), (0, 50), (7, 3), (50, 50), (1, 10)]  # (rows, row group size) per file


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> object:
    root = tmp_path_factory.mktemp("src")
    for i, (rows, group) in enumerate(SIZES):
        write_parquet(root / f"part-{i}.parquet", [f"d{i}-{r}" for r in range(rows)],
                      row_group_size=group)
    return resolve_local(str(root))


def expected_rows(skip: int, limit: int | None) -> list[tuple[int, int]]:
    """(file, row) of the stream rows in [skip, limit), by counting rows one by one."""
    rows = [(i, r) for i, (n, _) in enumerate(SIZES) for r in range(n)]
    return rows[skip:limit]


def covered(tasks: list) -> list[tuple[int, int]]:  # type: ignore[type-arg]
    """(file, row) of the rows the tasks read (a block task: its block's rows in range)."""
    out = []
    for t in tasks:
        if isinstance(t, BlockTask):
            first, _, data, _ = t.block
            stop = first + data.count(b"\n") + 1 if t.stop is None else t.stop
            out += [(t.index, r) for r in range(max(t.start, first), stop)]
        else:
            out += [(t.index, r) for r in range(t.start, t.stop or 0)]
    return out


def group(t: RowGroupTask) -> int:
    """The Parquet row group a task reads (a Parquet unit's ``at``), -1 for none."""
    return t.unit.at if t.unit.rows else -1


@settings(max_examples=60, deadline=None)
@given(skip=st.integers(0, 190), limit=st.one_of(st.none(), st.integers(1, 190)))
def test_tasks_cover_exactly_the_rows_to_read(source: object, skip: int,
                                              limit: int | None) -> None:
    if limit is not None and limit < skip:
        return
    tasks = list(row_group_tasks(source, source.files, skip, limit))  # type: ignore[attr-defined]
    assert covered(tasks) == expected_rows(skip, limit)
    for t in tasks:  # a task stays inside its row group
        size = SIZES[t.index][1]
        assert t.first == group(t) * size or group(t) == -1
        assert t.first <= t.start <= t.stop <= t.first + size
    # Each file reached is hashed by its first task, once.
    firsts = [t.index for t in tasks if t.hash_file]
    assert firsts == sorted(set(t.index for t in tasks))


def test_an_empty_file_gets_a_task_that_only_opens_it(source: object) -> None:
    tasks = list(row_group_tasks(source, source.files, 0, None))  # type: ignore[attr-defined]
    empty = [t for t in tasks if t.index == 1]
    assert [(group(t), t.start, t.stop, t.hash_file) for t in empty] == [(-1, 0, 0, True)]


def test_a_file_whose_footer_is_unreadable_gets_one_task(tmp_path: Path) -> None:
    write_parquet(tmp_path / "a.parquet", ["x", "y"])
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    src = resolve_local(str(tmp_path))
    tasks = list(row_group_tasks(src, src.files, 0, None))
    assert [(t.index, group(t), t.start, t.stop) for t in tasks] == [(0, 0, 0, 2), (1, 0, 0, None)]


@settings(max_examples=30, deadline=None)
@given(first=st.integers(0, len(SIZES)), extra=st.integers(0, 60))
def test_a_continued_stream_opens_no_file_before_its_first(source: object, first: int,
                                                           extra: int) -> None:
    """An incremental refresh's stream starts at its first new file: the tasks are the
    ones a plan from the start gives from there, and the files before it are never opened
    (here they point nowhere: opening one would give it a task)."""
    files = source.files  # type: ignore[attr-defined]
    before = sum(n for n, _ in SIZES[:first])
    gone = [replace(f, local=Path("/nonexistent") / f.path) for f in files[:first]]
    whole = list(row_group_tasks(source, files, before + extra, None))
    continued = list(row_group_tasks(source, gone + files[first:], before + extra, None,
                                     (first, before)))
    assert continued == [t for t in whole if t.index >= first]


BIG = [(3_100, 3_100), (2_600, 2_100)]  # (rows, row group size): one big group; then two


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> object:
    root = tmp_path_factory.mktemp("big")
    for i, (rows, group) in enumerate(BIG):
        write_parquet(root / f"part-{i}.parquet", [str(r) for r in range(rows)],
                      row_group_size=group)
    return resolve_local(str(root))


def test_a_big_row_group_is_cut_into_one_task_per_worker(big: object) -> None:
    """One file written at once is one row group: cut, it keeps two workers busy, not one.
    Spans are equal and never under MIN_SPAN_ROWS (3,100 rows give at most 3)."""
    files = big.files  # type: ignore[attr-defined]
    spans = [(t.index, group(t), t.start, t.stop) for t in row_group_tasks(big, files[:1], 0,
                                                                          None, cut=2)]
    assert spans == [(0, 0, 0, 1550), (0, 0, 1550, 3100)]
    spans = [(t.start, t.stop) for t in row_group_tasks(big, files[:1], 0, None, cut=8)]
    assert spans == [(0, 1033), (1033, 2066), (2066, 3100)]
    assert MIN_SPAN_ROWS == 1024
    # A group of 2,100 rows gives two spans; one of 500 stays whole.
    spans = [(group(t), t.start, t.stop) for t in row_group_tasks(big, files, 0, None,
                                                                 (1, 3_100), cut=4)]
    assert spans == [(0, 0, 1050), (0, 1050, 2100), (1, 2100, 2600)]


@settings(max_examples=60, deadline=None)
@given(skip=st.integers(0, 5_700), limit=st.one_of(st.none(), st.integers(1, 5_700)),
       cut=st.integers(1, 9))
def test_cut_tasks_cover_exactly_the_rows_to_read(big: object, skip: int, limit: int | None,
                                                  cut: int) -> None:
    if limit is not None and limit < skip:
        return
    files = big.files  # type: ignore[attr-defined]
    tasks = list(row_group_tasks(big, files, skip, limit, cut=cut))
    rows = [(i, r) for i, (n, _) in enumerate(BIG) for r in range(n)]
    assert covered(tasks) == rows[skip:limit]
    cuts: dict[tuple[int, int], list[int]] = {}
    for t in tasks:
        if group(t) < 0:  # a file reached without rows to read: opened only
            continue
        size = BIG[t.index][1]
        assert t.first == group(t) * size
        assert t.first <= t.start <= t.stop <= t.first + size
        cuts.setdefault((t.index, group(t)), []).append((t.stop or 0) - t.start)
    assert [t.index for t in tasks if t.hash_file] == sorted({t.index for t in tasks})
    for sizes in cuts.values():  # a group's rows to read: whole, or cut into equal spans
        assert len(sizes) <= cut
        if len(sizes) > 1:
            assert min(sizes) >= MIN_SPAN_ROWS and max(sizes) - min(sizes) <= 1
    # A stream continued at the second file (a refresh) is cut as the whole one is there.
    if skip >= BIG[0][0]:
        continued = list(row_group_tasks(big, files, skip, limit, (1, BIG[0][0]), cut=cut))
        assert continued == [t for t in tasks if t.index >= 1]


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Three compressed JSON Lines files of 3,000 lines (written by Debian's zstd)."""
    root = tmp_path_factory.mktemp("zst")
    for i in range(3):
        plain = root / f"part-{i}.jsonl"
        plain.write_text("".join(json.dumps({"text": f"{i}-{r}"}) + "\n" for r in range(3000)))
        subprocess.run(["zstd", "-q", "--rm", str(plain), "-o", f"{plain}.zst"], check=True)
    return resolve_local(str(root))


def test_a_compressed_file_is_read_here_in_blocks_that_workers_parse(streams: object,
                                                                     monkeypatch) -> None:
    """gzip and zstd cannot seek: the main process decompresses each file once, as it
    plans, into blocks of whole lines, each a task whose worker parses it; a resume point
    and a budget cut them as they cut row groups."""
    monkeypatch.setattr(jb, "BLOCK_BYTES", 20_000)  # several blocks per file
    files = streams.files  # type: ignore[attr-defined]
    tasks = list(row_group_tasks(streams, files, 0, None, cut=2))
    assert all(isinstance(t, BlockTask) for t in tasks) and len(tasks) > 6
    assert covered(tasks) == [(i // 3000, i % 3000) for i in range(9000)]
    assert [t.index for t in tasks if t.hash_file] == [0, 1, 2]
    for skip, limit in ((4000, None), (0, 3500), (2999, 6001)):
        part = list(row_group_tasks(streams, files, skip, limit, cut=2))
        assert covered(part) == [(i // 3000, i % 3000) for i in range(skip, limit or 9000)]
        assert [t.index for t in part if t.hash_file] == sorted({t.index for t in part})
