"""The ordered background jobs behind background sealing
(prep.formats.backlog): results come back in submission order, the pending weight stays
within the limit, and a failed job raises its own error without losing the results before
it."""

from __future__ import annotations

import threading
import time

import pytest

from prep.formats.backlog import Backlog


def test_results_in_order_and_the_weight_within_the_limit() -> None:
    jobs: Backlog[int] = Backlog(3, "test", limit=5)
    peak, running, lock = [0], [0], threading.Lock()

    def job(k: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01 * (k % 3))  # later jobs may end first
        with lock:
            running[0] -= 1
        return k

    taken = []
    for k in range(20):
        taken.extend(jobs.room(2))  # each job weighs 2: one pending leaves room (2+2 <= 5)
        assert len(jobs) == min(k, 1)  # two would not (2+2+2 > 5): exactly one taken back
        jobs.submit(2, job, k)
    while jobs:
        taken.append(jobs.take())
    assert taken == list(range(20))
    assert peak[0] <= 3
    jobs.shutdown()


def test_a_job_heavier_than_the_limit_still_runs_alone() -> None:
    jobs: Backlog[str] = Backlog(1, "test", limit=10)
    jobs.submit(3, str, "small")
    assert list(jobs.room(100)) == ["small"]  # everything older is taken back first
    jobs.submit(100, str, "big")
    assert len(jobs) == 1 and jobs.take() == "big"
    jobs.shutdown()


def test_a_failed_job_raises_after_the_results_before_it() -> None:
    jobs: Backlog[int] = Backlog(2, "test", limit=3)

    def job(k: int) -> int:
        if k == 1:
            raise ValueError("job 1 failed")
        return k

    for k in range(3):
        jobs.submit(1, job, k)
    kept: list[int] = []
    with pytest.raises(ValueError, match="job 1 failed"):
        for result in jobs.room(3):
            kept.append(result)
    assert kept == [0]
    assert len(jobs) == 1  # job 2 is still pending
    with pytest.raises(RuntimeError, match="pending"):
        jobs.shutdown()
    assert jobs.drop() == []
    jobs.shutdown()


def test_drain_takes_back_every_job_in_submission_order() -> None:
    """Jobs that finish out of order (the first one sleeps) still come back in the order
    they were submitted, and nothing is pending afterwards."""
    jobs: Backlog[int] = Backlog(3, "test", limit=10)

    def job(k: int) -> int:
        if k == 0:
            time.sleep(0.2)
        return k

    for k in range(3):
        jobs.submit(1, job, k)
    assert list(jobs.drain()) == [0, 1, 2]
    assert len(jobs) == 0
    jobs.shutdown()
