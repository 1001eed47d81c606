"""OrderedPool: results in task order whatever the finishing order, several per task;
errors at their place; a dead worker is reported; workers neither outlive a killed main
process nor take its signals."""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import worker_tasks as wt

from prep.procs.pool import InProcess, OrderedPool, WorkerDied

TESTS = Path(__file__).resolve().parents[2]  # tests/


def test_results_come_back_in_task_order_from_several_processes() -> None:
    # Early tasks sleep longest, so they finish last: only ordering can put them first.
    tasks = [(i, 0.05 * (12 - i) / 12) for i in range(12)]
    with OrderedPool(wt.slow_echo, workers=3) as pool:
        out = list(pool.map(tasks))
    assert [n for n, _ in out] == list(range(12))
    assert len({p for _, p in out}) > 1
    assert os.getpid() not in {p for _, p in out}


def test_several_results_per_task_stay_grouped_and_ordered() -> None:
    # More results per task than the queue holds (depth 1): streaming, not buffering.
    with OrderedPool(wt.parts, workers=3, depth=1, ahead=1) as pool:
        out = list(pool.map(range(8)))
    assert out == [(n, k) for n in range(8) for k in range(n)]


def test_an_exception_is_raised_at_its_tasks_place() -> None:
    seen = []
    with OrderedPool(wt.fail_on_three, workers=2) as pool, pytest.raises(ValueError,
                                                                         match="task 3 failed"):
        for n in pool.map(range(10)):
            seen.append(n)
    assert seen == [0, 1, 2, 3]


def test_in_process_gives_what_the_pool_gives_from_this_process() -> None:
    """``InProcess`` (a small source, no workers): the pool's results, order and errors,
    computed here, with nothing to end."""
    with OrderedPool(wt.parts, workers=3) as pool:
        want = list(pool.map(range(8)))
    with InProcess(wt.parts) as here:
        assert list(here.map(range(8))) == want
    with InProcess(wt.slow_echo) as here:
        assert {p for _, p in here.map([(0, 0.0), (1, 0.0)])} == {os.getpid()}
        assert here.copiers is None
    seen = []
    with pytest.raises(ValueError, match="task 3 failed"):
        for n in InProcess(wt.fail_on_three).map(range(10)):
            seen.append(n)
    assert seen == [0, 1, 2, 3]


def test_an_init_failure_is_raised_at_the_first_task() -> None:
    with OrderedPool(wt.pid, workers=2, init=wt.failing_init) as pool, pytest.raises(
            RuntimeError, match="cannot load the tokenizer"):
        list(pool.map(range(3)))


def test_a_killed_worker_is_reported() -> None:
    with OrderedPool(wt.die_on_two, workers=2) as pool, pytest.raises(
            WorkerDied, match="rerun with --resume"):
        list(pool.map(range(6)))


def test_close_ends_the_workers_at_once() -> None:
    pool: OrderedPool[tuple[int, float], tuple[int, int]] = OrderedPool(wt.slow_echo, workers=2)
    it = pool.map([(i, 30.0 if i else 0.0) for i in range(4)])
    next(it)
    pids = pool.pids()
    pool.close()
    for worker in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)


def test_leaving_map_waits_for_the_planner_to_end_its_step() -> None:
    """The planner thread reads the tasks (with a shuffle buffer: Parquet rows, through
    pyarrow). Left running when the process exits, a read in flight could hang the exit for
    good (issue 23), so leaving ``map`` ends the thread: here it is inside a step (a slow
    read) when the caller leaves, and must have ended when ``close`` of the generator
    returns."""
    inside, reads = threading.Event(), []

    def tasks() -> Iterator[tuple[int, float]]:
        for i in range(100):
            if i == 2:
                inside.set()
                time.sleep(0.3)  # a read in flight when the consumer leaves
                reads.append(i)
            yield (i, 0.0)

    with OrderedPool(wt.slow_echo, workers=1, ahead=1) as pool:
        it = pool.map(tasks())
        next(it)
        assert inside.wait(60), "the planner never reached the slow step"
        it.close()
        planners = [t for t in threading.enumerate() if t.name == "prep-planner"]
        assert planners == [], "the planner thread outlived map"
        assert reads == [2], "close returned before the step in flight ended"


def test_a_tasks_large_buffer_reaches_a_forked_worker_in_its_inbox() -> None:
    """A ``PickleBuffer`` in a task arrives as a view of the worker's inbox, unchanged; its
    pages are free again once the task ends, so 64 tasks of 1 MiB each (four times the
    inbox) all take it, through retirements too. Without an inbox it comes through the
    pipe as bytes."""
    blobs = [os.urandom(1 << 20) for _ in range(4)]
    tasks = [(n, pickle.PickleBuffer(blobs[n % 4])) for n in range(64)]
    want = [(n, hashlib.sha256(blobs[n % 4]).hexdigest()) for n in range(64)]
    with OrderedPool(wt.lent, workers=2, retire_after=5) as pool:
        got = list(pool.map(tasks))
    assert [(n, sha) for n, _, sha in got] == want
    assert {kind for _, kind, _ in got} == {"memoryview"}
    with OrderedPool(wt.lent, workers=2, inbox_bytes=0) as pool:
        got = list(pool.map(tasks[:4]))
    assert [(n, sha) for n, _, sha in got] == want[:4]
    assert {kind for _, kind, _ in got} == {"bytes"}


def test_a_worker_retires_after_its_tasks_and_a_fresh_one_takes_its_slot() -> None:
    with OrderedPool(wt.pid, workers=2, retire_after=3) as pool:
        first = pool.pids()
        out = list(pool.map(range(14)))
        assert pool.retired == 4  # slot 0 ran tasks 0,2,..,12 (7), slot 1 ran 7: 2 + 2
    # Task i ran on slot i % 2; each process served 3 of its slot's tasks, in turn.
    for slot in (0, 1):
        served = out[slot::2]
        runs = [served[k:k + 3] for k in range(0, len(served), 3)]
        assert all(len(set(run)) == 1 for run in runs)
        assert len({run[0] for run in runs}) == len(runs) == 3
        assert served[0] == first[slot]
    assert os.getpid() not in out


def test_weight_decides_when_a_worker_retires() -> None:
    # Task n yields n items of weight 1; a worker retires once it has yielded 5 items.
    with OrderedPool(wt.numbered, workers=1, retire_after=5, weigh=wt.weight) as pool:
        out = list(pool.map([2, 2, 1, 4, 3, 3]))
    assert [n for n, _ in out] == [2, 2, 2, 2, 1, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3]
    pids = [p for _, p in out]
    # 2+2+1 = 5: the third task ends the first worker; 4+3 = 7 ends the second.
    assert len({*pids[:5]}) == len({*pids[5:12]}) == len({*pids[12:]}) == 1
    assert len({pids[0], pids[5], pids[12]}) == 3


def test_resident_memory_decides_when_a_worker_retires() -> None:
    """``retire_rss`` (``--worker-memory``): each task keeps 256 MiB more in its worker; with
    the budget 384 MiB above a fresh worker's resident size, a worker passes it after its
    second task, and only then retires: the tasks run in pairs, each pair on a new process.
    Without the budget one process runs them all. The margins (128 MiB either way) are far
    above how much a fresh worker's resident size can differ between two forks of a test
    process whose collector may free memory in between."""
    gc.collect()
    with OrderedPool(wt.resident, workers=1, retire_after=1) as probe:
        base = max(rss for _, rss in probe.map(range(2)))  # fresh workers, forked alike
    budget = base + (384 << 20)
    with OrderedPool(wt.hog, workers=1, retire_rss=budget) as pool:
        out = list(pool.map(range(6)))
        assert pool.retired == 3
    pids = [p for p, _ in out]
    assert [pids[0]] * 2 + [pids[2]] * 2 + [pids[4]] * 2 == pids
    assert len(set(pids)) == 3
    held = [rss for _, rss in out]
    assert all(rss <= budget for rss in held[0::2]) and all(rss > budget for rss in held[1::2])
    with OrderedPool(wt.hog, workers=1) as pool:
        assert len({p for p, _ in pool.map(range(3))}) == 1 and pool.retired == 0


def test_replacements_keep_order_errors_and_death_reports() -> None:
    with OrderedPool(wt.fail_on_three, workers=1, retire_after=1) as pool, pytest.raises(
            ValueError, match="task 3 failed"):
        assert list(pool.map(range(10))) == []
    with OrderedPool(wt.die_on_two, workers=2, retire_after=1) as pool, pytest.raises(
            WorkerDied, match="rerun with --resume"):
        list(pool.map(range(6)))


def test_close_ends_replacement_workers_at_once() -> None:
    pool: OrderedPool[tuple[int, float], tuple[int, int]] = OrderedPool(
        wt.slow_echo, workers=2, retire_after=1)
    it = pool.map([(i, 30.0 if i > 2 else 0.0) for i in range(6)])
    seen = [next(it) for _ in range(3)]
    pids = pool.pids()
    assert not set(pids) & {p for _, p in seen[:2]}  # both first workers replaced
    pool.close()
    for worker in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)


CHILD = """
import sys, time
sys.path[:0] = {paths!r}
import worker_tasks as wt
from prep.procs.pool import OrderedPool
pool = OrderedPool(wt.slow_echo, workers=2, retire_after={retire})
seen = {{p for _, p in pool.map([(0, 0.3), (1, 0.3)])}}
assert not seen & set(pool.pids()) if {retire} else seen == set(pool.pids())
print(" ".join(map(str, pool.pids())), flush=True)
time.sleep(60)
"""


def _alive(p: int) -> bool:
    try:
        os.kill(p, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("retire", [None, 1], ids=["first-workers", "replacements"])
def test_workers_exit_when_the_main_process_is_killed(retire: int | None) -> None:
    code = CHILD.format(paths=[str(TESTS), str(TESTS.parent / "src")], retire=retire)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


@pytest.mark.parametrize("retire", [None, 2], ids=["first-worker", "replacement"])
def test_workers_ignore_sigint_and_sigterm_sent_to_them(retire: int | None) -> None:
    with OrderedPool(wt.pid, workers=1, retire_after=retire) as pool:
        if retire:  # the first worker retires after two tasks
            assert len(set(pool.map([0, 1]))) == 1
        (worker,) = pool.map([2])
        assert worker == pool.pids()[0]
        os.kill(worker, signal.SIGTERM)
        os.kill(worker, signal.SIGINT)
        assert list(pool.map([3])) == [worker]
