"""Read-ahead: run a producer generator in a thread, a bounded number of items ahead.

Reading Parquet, UTF-8 encoding and split hashing run here while the main thread tokenizes
(``tokenizers`` releases the GIL). Memory is bounded by ``depth`` items.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
DONE = object()  # the producer's last item when the source ended
# How long closing waits for the producer to notice: one step of the source (a row group
# read, a batch tokenized) takes far less; a download may take longer, and is left to end.
JOIN_SECONDS = 10.0


class ReadAhead(Generic[T]):
    """Iterate ``source`` in a daemon thread; exceptions re-raise in the consumer.

    Use as a context manager (or call :meth:`close`) so an early exit stops the thread."""

    def __init__(self, source: Iterator[T], depth: int = 2, name: str = "prep-reader") -> None:
        self._source = source
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._source:
                if not self._put(item):
                    return
        except BaseException as e:
            self._put(Raised(e))
            return
        self._put(DONE)

    def __iter__(self) -> Iterator[T]:
        while True:
            try:
                item = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():  # closed: the producer will put nothing more
                    return
                continue
            if item is DONE:
                return
            if isinstance(item, Raised):
                raise item.error
            yield item  # type: ignore[misc]

    def close(self) -> None:
        """Stop the producer and wait (up to ``JOIN_SECONDS``) until its thread has ended.

        Waiting matters: a producer still inside pyarrow when the interpreter exits can hang
        the exit for good. pyarrow reads a Python file object from its own I/O threads,
        which call back into Python; once Python is finalizing, such a thread is stopped as
        it takes the GIL, its read never completes, and pyarrow's thread pool waits for it
        forever from the exit handlers (issue 23)."""
        self._stop.set()
        self._thread.join(timeout=JOIN_SECONDS)

    @property
    def alive(self) -> bool:
        """Whether the producer's thread still runs."""
        return self._thread.is_alive()

    def __enter__(self) -> ReadAhead[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Raised:
    """The producer's last item when the source raised ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
