"""The shared-memory arena, with real forked processes: arrays arrive identical (every dtype
and size, in-band when they do not fit), pages come back in any order and are reused, a
held array is never overwritten (by its worker or by a successor), a tiny arena under many
results never stalls the pool, a dead worker's arrays stay valid."""

from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import worker_tasks as wt

from prep.procs.arena import MIN_BYTES, PAGE, Arena
from prep.procs.pool import OrderedPool, WorkerDied

TESTS = Path(__file__).resolve().parents[2]  # tests/


def same(got: Any, want: Any) -> bool:
    """Equal values, dtype, shape and memory order, through dicts and lists."""
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return len(got) == len(want) and all(map(same, got, want))
    return bool(
        got.dtype == want.dtype and got.shape == want.shape
        and np.isfortran(got) == np.isfortran(want) and np.array_equal(got, want)
    )


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Exceptions raised where nothing catches them (a finalizer): none expected."""
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    yield seen
    gc.collect()
    assert not seen


def test_arrays_of_every_dtype_and_size_come_back_identical() -> None:
    tasks = range(6)
    with OrderedPool(wt.arrays, workers=2, arena_bytes=8 * PAGE) as pool:
        got = list(pool.map(tasks))
        shared = pool.shared_buffers()
    want = [result for task in tasks for result in wt.arrays(task)]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert same(g, w)
    # Some went through the arena; not those it cannot hold (20 pages), nor the small ones.
    assert 0 < shared < sum(a.nbytes >= MIN_BYTES for r in want for a in r.values())


def test_without_an_arena_everything_comes_through_the_pipe() -> None:
    with OrderedPool(wt.arrays, workers=1, arena_bytes=0) as pool:
        got = list(pool.map([3]))
        assert pool.shared_buffers() == 0
    assert all(map(same, got, wt.arrays(3)))


Ask = Callable[[int, int], tuple[int | None, Any]]


@contextmanager
def packer(pages: int) -> Iterator[tuple[Arena, Ask]]:
    """An arena of ``pages`` pages and ``ask(tag, pages)``: the array ``pages_of(tag,
    pages)`` packed by a forked child into it and unpacked here, with its first page (None:
    in-band)."""
    arena = Arena(pages * PAGE)
    ctx: Any = multiprocessing.get_context("fork")
    requests, replies = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=wt.pack_on_request, args=(arena, requests, replies))
    child.start()

    def ask(tag: int, pages: int) -> tuple[int | None, Any]:
        requests.put((tag, pages))
        packed = replies.get(timeout=60)
        first = packed.places[0][0] if packed.places else None
        return first, arena.unpack(packed)

    try:
        yield arena, ask
    finally:
        requests.put(None)
        child.join(timeout=60)


def test_pages_released_in_any_order_are_reused_lowest_first(unraisable: list[Any]) -> None:
    with packer(8) as (arena, ask):
        held = {}
        for tag in range(4):  # fills the arena
            first, held[tag] = ask(tag, 2)
            assert first == 2 * tag
        first, full = ask(4, 2)
        assert first is None and (full == 4).all()
        del held[2]
        first, held[5] = ask(5, 2)
        assert first == 4
        del held[0], held[3]  # free: pages 0-1 and 6-7, four pages in no one run
        first, apart = ask(6, 4)
        assert first is None and (apart == 6).all()
        del held[1]  # free: pages 0-3
        first, held[7] = ask(7, 4)
        assert first == 0
        for tag, array in held.items():
            assert (array == tag).all()
        assert arena.shared == 6


def test_a_tiny_arena_under_many_results_never_stalls_the_pool() -> None:
    # In a child, so that a stall fails the test (timeout) instead of hanging the suite.
    code = f"""
import collections, sys
sys.path[:0] = {[str(TESTS), str(TESTS.parent / "src")]!r}
import numpy as np
import worker_tasks as wt
from prep.procs.arena import PAGE
from prep.procs.pool import OrderedPool
held = collections.deque(maxlen=6)  # the consumer keeps results as a read-ahead would
want = (r for task in range(240) for r in wt.blocks(task))
with OrderedPool(wt.blocks, workers=2, arena_bytes=4 * PAGE, depth=2) as pool:
    for got in pool.map(range(240)):
        w = next(want)
        assert all(np.array_equal(g, x) and g.dtype == x.dtype for g, x in zip(got, w))
        held.append(got)
    assert next(want, None) is None
    print(pool.shared_buffers())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


def test_arrays_stay_valid_after_their_worker_died(unraisable: list[Any]) -> None:
    # ahead=1: task 1 (death) is sent only once task 0's result is in.
    pool = OrderedPool(wt.pages_then_die, workers=1, ahead=1, arena_bytes=8 * PAGE)
    results = pool.map([0, 1])
    held = next(results)
    with pytest.raises(WorkerDied):
        next(results)
    assert pool.shared_buffers() == 1
    pool.close()
    del pool, results
    gc.collect()
    assert (held == 0).all() and held.size == 4 * PAGE // 8
    del held  # its release goes to a pipe no worker reads: not an error


def test_successors_take_over_the_arena_and_spare_what_the_main_process_holds(
        unraisable: list[Any]) -> None:
    tasks = range(12)
    with OrderedPool(wt.pages_of_task, workers=2, retire_after=1,
                     arena_bytes=16 * PAGE) as pool:
        held = []
        for task, got in zip(tasks, pool.map(tasks), strict=True):
            assert (got == task).all()
            if task < 4:  # six pages of each arena, held through every successor
                held.append(got)
        assert pool.retired >= 10
        # Every result fitted: the successors knew which pages were still held, reused the
        # others, and wrote none of the held ones.
        assert pool.shared_buffers() == len(tasks)
    for task, got in enumerate(held):
        assert (got == task).all()


def test_a_forked_copy_of_a_held_array_frees_no_page(unraisable: list[Any]) -> None:
    # A process forked from the main process (a zygote, a subprocess' fork) holds copies of
    # its arrays; dropping them there must not free the main process's pages.
    with packer(8) as (_, ask):
        _, held = ask(1, 4)
        pid = os.fork()
        if pid == 0:  # the copy: drop it, collect, leave without running atexit hooks
            del held
            gc.collect()
            os._exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        first, got = ask(2, 4)
        assert first == 4  # not pages 0-3: the main process still holds them
        assert (got == 2).all() and (held == 1).all()


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "spawned"])
def test_a_result_that_cannot_be_pickled_is_raised_at_its_place(fork: bool) -> None:
    # Pickled by the worker itself, not by the queue's feeder thread, which would print the
    # error and drop the result: the results after it would arrive one short.
    with OrderedPool(wt.unpicklable, workers=1, fork=fork) as pool:
        results = pool.map([0])
        assert next(results) == 1
        with pytest.raises(TypeError, match="pickle"):
            next(results)


def test_without_address_space_for_an_arena_results_come_through_the_pipe() -> None:
    # ``ulimit -v`` (some clusters set one) leaves no room for a large arena: the pool works.
    code = f"""
import resource, sys
sys.path[:0] = {[str(TESTS), str(TESTS.parent / "src")]!r}
import worker_tasks as wt
from prep.procs.pool import OrderedPool
with open("/proc/self/status") as f:
    size = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize"))
resource.setrlimit(resource.RLIMIT_AS, (size + (256 << 20), resource.RLIM_INFINITY))
with OrderedPool(wt.pages_of_task, workers=2, arena_bytes=1 << 32) as pool:
    got = list(pool.map(range(4)))
    assert pool.shared_buffers() == 0
assert [int(a[0]) for a in got] == [0, 1, 2, 3], got
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
