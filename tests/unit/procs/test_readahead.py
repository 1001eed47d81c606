"""Read-ahead in a real thread: order kept, the producer's exception raised in the consumer,
and a close that ends the producer's thread even when the source never ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from prep.procs.readahead import ReadAhead


def test_items_arrive_in_order_and_the_thread_ends_with_the_source() -> None:
    with ReadAhead(iter(range(1000)), depth=3, name="prep-test") as ra:
        assert list(ra) == list(range(1000))
    assert not ra.alive


def test_the_producers_exception_is_raised_in_the_consumer_after_its_items() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("row group 3 is corrupt")

    got = []
    with ReadAhead(source()) as ra, pytest.raises(ValueError) as e:
        for item in ra:
            got.append(item)
    assert str(e.value) == "row group 3 is corrupt"
    assert got == [1, 2]


def test_the_producer_runs_in_its_own_named_thread() -> None:
    names: list[str] = []

    def source() -> Iterator[int]:
        names.append(threading.current_thread().name)
        yield 0

    with ReadAhead(source(), name="prep-reader-x") as ra:
        assert list(ra) == [0]
    assert names == ["prep-reader-x"]


def test_close_stops_a_producer_that_never_ends() -> None:
    drawn: list[int] = []
    full = threading.Event()

    def forever() -> Iterator[int]:
        n = 0
        while True:
            drawn.append(n)
            if n == 3:  # 0 taken by the consumer, 1 and 2 queued (depth 2), 3 in hand
                full.set()
            yield n
            n += 1

    ra = ReadAhead(forever(), depth=2)
    items = iter(ra)
    assert next(items) == 0
    assert full.wait(10)
    ra.close()
    assert not ra.alive
    assert drawn == [0, 1, 2, 3]  # bounded: it never drew past what the queue holds
    assert list(items) == [1, 2]  # what was queued drains, then iteration ends
