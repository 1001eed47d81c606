"""Local copies of pinned objects, downloaded ahead of the reader.

Workers read Parquet by path, so each object is copied to local disk before its row groups
are planned (:meth:`ObjectCache.local`), and the next :data:`READ_AHEAD` objects of the
read order are already downloading in background threads meanwhile, so tokenizing does not
wait on the network. The first ones start as soon as the read order is known
(:meth:`ObjectCache.plan`), before the run's engine and workers.

Where: ``$XDG_CACHE_HOME/prep/objects/run-PID-XXXX/`` (default ``~/.cache``), one directory
per run process, removed when the process ends; a directory whose process is gone (a
SIGKILLed run) is removed by the next run that starts. How much: the objects being read and
read ahead, plus the last :data:`KEEP_BEHIND` asked for (their row groups may still be
queued for workers); an older copy is deleted when a newer one is asked for. A resume
downloads again what it needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from prep.buckets.objects import ObjectPin
from prep.fsio import cache_home

logger = logging.getLogger(__name__)

READ_AHEAD = 4  # objects downloading ahead of the one asked for
# Copies kept after they were asked for: more than the tasks a worker pool holds in flight
# (each worker's queue, the planner's and the results'), so no copy goes while a queued
# task still has to open it.
KEEP_BEHIND = 8 * (os.cpu_count() or 1) + 16
_PREFIX = "run-"


def cache_root() -> Path:
    return cache_home() / "objects"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(root: Path) -> None:
    """Remove the directories of run processes that no longer exist."""
    with contextlib.suppress(OSError):
        for d in root.glob(f"{_PREFIX}*"):
            pid = d.name[len(_PREFIX):].partition("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(d, ignore_errors=True)


class ObjectCache:
    """Downloads of pinned objects into one private directory, ``READ_AHEAD`` ahead of the
    reader in the order :meth:`plan` gave (default: the order asked)."""

    def __init__(self, fetch: Callable[[ObjectPin, Path, Callable[[], bool]], str],
                 root: Path | None = None) -> None:
        self._fetch = fetch
        self._root = root or cache_root()
        self._dir: Path | None = None
        self._lock = threading.Lock()
        self._futures: dict[str, Future[tuple[Path, str]]] = {}
        self._order: list[ObjectPin] = []
        self._asked: deque[str] = deque()
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="prep-download")

    def plan(self, order: Sequence[ObjectPin]) -> None:
        """The order objects will be asked for: what to download ahead. The first
        :data:`READ_AHEAD` start downloading now, while the run builds its engine and starts
        its workers."""
        with self._lock:
            self._order = list(order)
            for pin in self._order[:READ_AHEAD]:
                self._submit(pin)

    def _directory(self) -> Path:
        if self._dir is None:
            self._root.mkdir(parents=True, exist_ok=True)
            sweep(self._root)
            self._dir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=self._root))
            weakref.finalize(self, _remove, self._dir, self._stop, self._pool)
        return self._dir

    def _submit(self, pin: ObjectPin) -> Future[tuple[Path, str]]:
        fut = self._futures.get(pin.path)
        if fut is None:
            name = hashlib.sha256(pin.path.encode()).hexdigest()[:16]
            dest = self._directory() / f"{name}-{pin.path.rsplit('/', 1)[-1]}"
            fut = self._pool.submit(lambda: (dest, self._fetch(pin, dest, self._stop.is_set)))
            self._futures[pin.path] = fut
        return fut

    def local(self, pin: ObjectPin) -> tuple[Path, str]:
        """The local copy of ``pin`` and its SHA-256, downloading it (and starting the next
        ones) first. Raises what the download raised."""
        with self._lock:
            fut = self._submit(pin)
            paths = [p.path for p in self._order]
            if pin.path in paths:
                at = paths.index(pin.path)
                for nxt in self._order[at + 1 : at + 1 + READ_AHEAD]:
                    self._submit(nxt)
        try:
            result = fut.result()
        except BaseException:
            with self._lock:
                self._futures.pop(pin.path, None)  # a later call tries again
            raise
        with self._lock:
            if pin.path not in self._asked:
                self._asked.append(pin.path)
            while len(self._asked) > KEEP_BEHIND:
                self._drop(self._asked.popleft())
        return result

    def _drop(self, path: str) -> None:
        fut = self._futures.pop(path, None)
        if fut is not None and fut.done() and fut.exception() is None:
            fut.result()[0].unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the downloads and remove every copy (also done when the process ends)."""
        if self._dir is not None:
            _remove(self._dir, self._stop, self._pool)


def _remove(directory: Path, stop: threading.Event, pool: ThreadPoolExecutor) -> None:
    stop.set()
    pool.shutdown(wait=True, cancel_futures=True)
    shutil.rmtree(directory, ignore_errors=True)
