"""A worker's shared-memory arena: how large numpy buffers of a result reach the main process
without crossing a pipe.

Received through a pipe, every byte of a result costs the receiver a copy out of the kernel,
another into an array and the wake-ups between; for token ids that was most of the main
process's CPU, the serial part of a run. So a worker pickles a result with protocol 5 and
copies each out-of-band buffer of ``MIN_BYTES`` or more into free pages of its arena, an
anonymous shared mapping created by the main process before any worker is forked (so every
worker, and a zygote's late replacement, maps the same pages). Only the pickle (small) and
the pages' places cross the pipe; the main process builds its arrays on those pages, without
a copy.

Pages are freed by the process that allocates them, the worker, on the main process's word:
when the last array built on a buffer is dropped (``weakref.finalize``; CPython's reference
counting makes that prompt), the main process writes the buffer's pages to the arena's
release pipe, and the worker reads that pipe before it next allocates. Releases may come in
any order. The page flags live in the arena itself, so a retired worker's successor knows
which pages the main process still holds; the pipe's kernel lock orders the main process's
last read of a buffer before the worker's next write to it.

A worker never waits for pages: a buffer that does not fit the free pages (a huge document,
or the main process holding many results) is pickled in-band, through the pipe as before.
So the arena cannot deadlock the pool whatever the main process holds, and its size only
decides how much goes the fast way. Linux and fork only: a spawned worker keeps the pipe.

The same arena serves the other way (an inbox): the main process lends a task's large
buffers to a worker (a compressed file's block of text: :meth:`Arena.pack` there,
:meth:`Arena.borrow` in the worker) and frees their pages itself once the worker has ended
that task (:meth:`Arena.free`): the task's end, read from the worker's result pipe, orders
the worker's last read of them before their next use.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import pickle
import struct
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

PAGE = 1 << 16
MIN_BYTES = PAGE  # smaller buffers cost less in-band than a page each
DEFAULT_BYTES = 32 << 20
_RELEASE = struct.Struct("=II")  # first page, pages: 8 bytes, written atomically to a pipe
_READ = _RELEASE.size * 4096


@dataclass(frozen=True)
class Packed:
    """A result as it crosses the pipe: its pickle and, per out-of-band buffer in order,
    ``(first page, bytes)`` in the sender's arena."""

    data: bytes
    places: tuple[tuple[int, int], ...]


def _pages(nbytes: int) -> int:
    return -(-nbytes // PAGE)


class _Releaser:
    """The main process's end of the release pipe. It lives as long as an array built on the
    arena does (each finalizer holds it), so its descriptor is never closed, and its number
    never reused by another file, while a release may still be written."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        os.set_blocking(self.read_fd, False)
        self.owner = os.getpid()

    def release(self, first: int, pages: int) -> None:
        # A forked child holding a copy of an array must not free the owner's pages.
        if os.getpid() != self.owner:
            return
        # Full only if the worker is gone or blocked: it drains the pipe before every
        # allocation, and a default arena has no more buffers out than even a one-page pipe
        # holds (512). A release dropped here loses its pages to in-band results, never
        # hands out a page still in use.
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            os.write(self.write_fd, _RELEASE.pack(first, pages))

    def __del__(self) -> None:
        if os.getpid() == self.owner:
            os.close(self.read_fd)
            os.close(self.write_fd)


class Arena:
    """``size`` bytes of shared pages for one worker slot, created in the main process
    before the slot's worker is forked. The worker calls :meth:`pack`, the main process
    :meth:`unpack`; one worker at a time uses an arena (a successor after its predecessor
    has exited)."""

    def __init__(self, size: int = DEFAULT_BYTES) -> None:
        self.pages = max(size // PAGE, 1)
        header = _pages(self.pages) * PAGE  # one flag byte per page: 1 while in use
        self._data = header
        self._map = mmap.mmap(-1, header + self.pages * PAGE)
        self._flags = np.frombuffer(self._map, np.uint8, self.pages)
        self._base = self._flags.__array_interface__["data"][0]  # the mapping's address
        self._releaser = _Releaser()
        self.shared = 0  # buffers received through the arena (main process)

    def pack(self, obj: object) -> Packed:
        """In the worker: ``obj`` pickled, its large buffers copied into free pages. Raises
        what pickling raises (the pages taken for it are freed again)."""
        self._drain()
        places: list[tuple[int, int]] = []

        def place(buffer: pickle.PickleBuffer) -> bool:
            with buffer.raw() as raw:
                first = self._allocate(raw.nbytes) if raw.nbytes >= MIN_BYTES else -1
                if first < 0:
                    return True  # in-band
                start = self._data + first * PAGE
                self._map[start:start + raw.nbytes] = raw
                places.append((first, raw.nbytes))
            return False

        try:
            data = pickle.dumps(obj, protocol=5, buffer_callback=place)
        except BaseException:
            for first, nbytes in places:
                self._flags[first:first + _pages(nbytes)] = 0
            raise
        return Packed(data, tuple(places))

    def unpack(self, packed: Packed) -> Any:  # Any: what the worker pickled; the pool types it
        """In the main process: the object ``pack`` sent, its large arrays on the arena's
        pages (which go back to the worker once no array uses them)."""
        buffers = []
        for first, nbytes in packed.places:
            view = np.frombuffer(self._map, np.uint8, nbytes, self._data + first * PAGE)
            finalizer = weakref.finalize(view, self._releaser.release, first, _pages(nbytes))
            finalizer.atexit = False
            buffers.append(view)
        self.shared += len(buffers)
        return pickle.loads(packed.data, buffers=buffers)

    def borrow(self, packed: Packed) -> Any:  # Any: what the lender pickled; the pool types it
        """In the worker, the reverse way (the main process lends a task's large buffers,
        :meth:`pack` there): the object, its buffers read-only views on the arena's pages,
        valid until the lender frees them (:meth:`free`, once the task has ended)."""
        whole = memoryview(self._map).toreadonly()
        return pickle.loads(packed.data, buffers=[
            whole[self._data + first * PAGE:self._data + first * PAGE + nbytes]
            for first, nbytes in packed.places])

    def free(self, packed: Packed) -> None:
        """In the lender: the pages :meth:`pack` took for ``packed`` are free again (its
        borrower is done with them)."""
        for first, nbytes in packed.places:
            self._flags[first:first + _pages(nbytes)] = 0

    def place_of(self, array: npt.NDArray[Any]) -> int | None:
        """Where ``array``'s bytes start in this arena's mapping (the same place in every
        process that maps it), or None when they are not all inside it."""
        at = array.__array_interface__["data"][0] - self._base
        return at if at >= 0 and at + array.nbytes <= len(self._map) else None

    def view(self, at: int, nbytes: int) -> memoryview:
        """``nbytes`` of the mapping from ``at`` (:meth:`place_of`), in any process that
        maps it."""
        return memoryview(self._map)[at:at + nbytes]

    def _drain(self) -> None:
        """Free the pages the main process has released since the last call."""
        while True:
            try:
                chunk = os.read(self._releaser.read_fd, _READ)
            except BlockingIOError:
                return
            for first, pages in _RELEASE.iter_unpack(chunk):
                self._flags[first:first + pages] = 0
            if len(chunk) < _READ:
                return

    def _allocate(self, nbytes: int) -> int:
        """The first page of the lowest run of free pages that holds ``nbytes``, now marked
        in use; -1 when there is none. Lowest first: the pages ever touched (the memory the
        arena really takes) stay as few as the results in flight need."""
        need = _pages(nbytes)
        free = np.concatenate(([0], (self._flags == 0).view(np.int8), [0]))
        edges = np.diff(free)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        fits = np.flatnonzero(ends - starts >= need)
        if not len(fits):
            return -1
        first = int(starts[fits[0]])
        self._flags[first:first + need] = 1
        return first


def arena_or_none(size: int) -> Arena | None:
    """An arena of ``size`` bytes, or None (results through the pipe) for size 0 or when the
    address space cannot hold one (``ulimit -v``, as some clusters set, or strict
    overcommit): logged, never an error, since the pipe does the same job more slowly."""
    if size <= 0:
        return None
    try:
        return Arena(size)
    except OSError as e:
        logger.info("workers: no shared-memory arena of %s bytes (%s); results go through "
                    "pipes", f"{size:,}", e)
        return None


def pack(obj: object, arena: Arena | None) -> Packed:
    """``obj`` as it crosses to the main process: through ``arena`` (see :meth:`Arena.pack`)
    or, without one, pickled whole here. Either way pickling happens in the caller, so an
    object that cannot be pickled raises in order, where a queue's feeder thread would only
    print the error and drop the object."""
    if arena is not None:
        return arena.pack(obj)
    return Packed(pickle.dumps(obj, protocol=5), ())


def unpack(packed: Packed, arena: Arena | None) -> Any:  # Any: as Arena.unpack's
    """What :func:`pack` was given, in the main process."""
    return pickle.loads(packed.data) if arena is None else arena.unpack(packed)


def borrow(packed: Packed, inbox: Arena | None) -> Any:  # Any: as Arena.borrow's
    """What the main process :func:`pack`-ed into ``inbox`` (or, without one, pickled
    whole), in the worker."""
    return pickle.loads(packed.data) if inbox is None else inbox.borrow(packed)
