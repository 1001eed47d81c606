"""Copiers: child processes that write the ids the workers sent through their arenas into the
shard files, at the offsets the main process gives them.

The copy of a batch's ids into the page cache was the largest per-byte cost left in the main
process (a thread of its own, but one thread per open shard, serial: ~0.35 CPU s per GB of
text, more on a machine short of free memory). The ids already sit on shared pages (each
worker's :class:`~prep.procs.arena.Arena`, mapped in every process forked after it was created),
so any such process can write them. A copier is one: the main process sends it, through a
Unix socket, where the ids are (the arena and the place in it), where they go (the file's
descriptor, passed with the message, and the offset the append gave them), and waits for its
answer: 0 or the ``errno`` of the failed write. The main process keeps the array (so its
pages) until the answer comes, and a sync waits for every answer before its ``fsync``: the
copier writes through a descriptor of the same open file, so that ``fsync`` covers its
writes as it covers the main process's own.

Copiers are forked with the workers, at the one moment the main process may safely fork, and
die with the main process (:func:`prep.procs.launch.adopt`: the kernel kills them when it dies).
They do not hold the run's lock (filelock closes its descriptor in a forked child), so for
the microseconds between the main process's death and theirs a write under way may finish
while the lock is already free; it writes past the committed prefix the very ids, at the
very offset, that a resumed run would write there, since the output depends on nothing but
the recipe. A copier that has died, or that could not receive the file's descriptor (a
process at its descriptor limit), is not an error: the main process writes that batch
itself, from the same pages (a dead copier is logged once and not asked again).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import queue
import socket
import struct
import threading
from multiprocessing.process import BaseProcess
from typing import Any

import numpy.typing as npt

from prep.fsio import pwrite_all
from prep.procs.arena import Arena
from prep.procs.launch import Context, adopt

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
STOP_SECONDS = 5.0
WORKERS_PER_COPIER = 8  # a copier copies ~25x faster than a worker tokenizes the same text
_ORDER = struct.Struct("=IQQQ")  # arena slot, place in it, bytes, offset in the file
_ANSWER = struct.Struct("=i")  # 0, the errno of the failed write, or UNSERVED
UNSERVED = -1  # the order came without its file or its arena: the caller writes it
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)  # a send fails so: the copier died
_STOP = _ORDER.pack(2**32 - 1, 0, 0, 0)  # no arena: the copier ends


def copiers_for(workers: int) -> int:
    """How many copiers ``workers`` workers' output needs."""
    return max(1, -(-workers // WORKERS_PER_COPIER))


def _serve(sock: socket.socket, arenas: list[Arena | None], parent: int) -> None:
    """A copier's loop: one order at a time, answered, until the main process says stop (its
    end of the socket is inherited by every process forked after it: closing it is no
    signal)."""
    adopt(parent)
    gc.freeze()  # what it inherited stays shared with the main process (copy-on-write)
    while True:
        try:
            order, fds, _, _ = socket.recv_fds(sock, _ORDER.size, 1)
        except OSError:
            return
        if not order or order == _STOP:
            return
        slot, at, nbytes, offset = _ORDER.unpack(order)
        error = UNSERVED
        try:
            arena = arenas[slot] if slot < len(arenas) else None
            if arena is not None and len(fds) == 1:
                pwrite_all(fds[0], arena.view(at, nbytes), offset)
                error = 0
        except OSError as e:
            error = e.errno or 5  # EIO when the OS gave none
        finally:
            for fd in fds:
                os.close(fd)
        try:
            sock.send(_ANSWER.pack(error))
        except OSError:
            return


class Copiers:
    """``count`` copier processes over ``arenas`` (forked now: call it where a fork is safe).
    :meth:`write` hands one array to a free copier and waits for it."""

    def __init__(self, context: Context, arenas: list[Arena | None], count: int) -> None:
        self._arenas = arenas
        # Free copiers' sockets; None once there will be none (closed, or every one lost):
        # it wakes a thread waiting for one, which puts it back for the next.
        self._idle: queue.SimpleQueue[socket.socket | None] = queue.SimpleQueue()
        self._procs: list[BaseProcess] = []
        self._count = threading.Lock()  # guards count, written, and closing against a put
        self._lost = False
        self._closed = False
        self.count = 0
        try:
            for k in range(count):
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                try:
                    proc = context.Process(target=_serve, args=(theirs, arenas, os.getpid()),
                                           name=f"prep-copier-{k}", daemon=True)
                    proc.start()
                except BaseException:
                    ours.close()
                    raise
                finally:
                    theirs.close()
                self._procs.append(proc)
                self._idle.put(ours)
                self.count += 1
        except BaseException:
            self.close()  # the ones already started
            raise
        self.cpu_seconds = 0.0  # the copiers' CPU, read when they are closed
        self.written = 0  # bytes the copiers wrote

    def write(self, fd: int, ids: npt.NDArray[Any], offset: int) -> bool:
        """Have a copier write ``ids`` (a contiguous array) at ``offset`` of ``fd``, and wait
        for it; False (nothing written) when the ids are not on an arena's pages or no copier
        is left: the caller writes them. Raises the ``OSError`` of a failed write."""
        place = self._place(ids)
        sock = None if place is None else self._take()
        if place is None or sock is None:
            return False
        try:
            socket.send_fds(sock, [_ORDER.pack(*place, ids.nbytes, offset)], [fd])
        except OSError as e:
            if e.errno in _GONE:  # it died: this batch and the next are written here
                self._lose(sock)
            else:  # the order never left (``fd`` is no file): not the copier's end
                self._give_back(sock)
            return False
        try:
            answer = sock.recv(_ANSWER.size)
        except OSError:
            answer = b""
        if len(answer) != _ANSWER.size:  # it died while writing
            self._lose(sock)
            return False
        self._give_back(sock)
        error = _ANSWER.unpack(answer)[0]
        if error == UNSERVED:
            return False
        if error:
            raise OSError(error, os.strerror(error))
        with self._count:
            self.written += ids.nbytes
        return True

    def _give_back(self, sock: socket.socket) -> None:
        """A copier is free again: back to the idle queue, or told to stop once closed."""
        with self._count:  # closing cannot drain the idle copiers between the test and put
            if self._closed:
                _stop(sock)
            else:
                self._idle.put(sock)

    def report(self) -> dict[str, float]:
        """What ``_PROVENANCE.json`` records of them (their CPU: once they are closed)."""
        return {"processes": len(self._procs), "bytes_written": self.written,
                "cpu_seconds": round(self.cpu_seconds, 3)}

    def _take(self) -> socket.socket | None:
        """A free copier's socket; None once there is none left or they are closed."""
        while not self._closed and self.count:
            with contextlib.suppress(queue.Empty):
                sock = self._idle.get(timeout=POLL_SECONDS)
                if sock is None:
                    self._idle.put(None)
                return sock
        return None

    def _place(self, ids: npt.NDArray[Any]) -> tuple[int, int] | None:
        if not ids.flags.c_contiguous or not ids.nbytes:
            return None
        for slot, arena in enumerate(self._arenas):
            if arena is not None and (at := arena.place_of(ids)) is not None:
                return slot, at
        return None

    def _lose(self, sock: socket.socket) -> None:
        sock.close()
        with self._count:
            self.count -= 1
            if not self.count:
                self._idle.put(None)  # the last one: nobody waits for another
        if not self._lost:
            self._lost = True
            logger.warning("a copier process ended (killed?); the main process writes the ids "
                           "it would have written")

    def pids(self) -> list[int]:
        """The copiers' process ids."""
        return [p.pid for p in self._procs if p.pid is not None]

    def close(self) -> None:
        """End the copiers, first noting their CPU time (a write under way finishes: its
        copier answers, then is told to stop)."""
        self.cpu_seconds = sum(process_cpu_seconds(p.pid) for p in self._procs)
        with self._count, contextlib.suppress(queue.Empty):
            self._closed = True
            while True:
                if (sock := self._idle.get_nowait()) is not None:
                    _stop(sock)
        self._idle.put(None)  # a thread waiting for a copier takes none, at once
        for p in self._procs:
            p.join(timeout=STOP_SECONDS)
            if p.is_alive():
                p.kill()
                p.join()


def _stop(sock: socket.socket) -> None:
    """Tell the copier at the other end of ``sock`` to end, and close it."""
    with contextlib.suppress(OSError):
        sock.send(_STOP)
    sock.close()


def process_cpu_seconds(pid: int | None) -> float:
    """The user and system CPU seconds process ``pid`` has used (Linux ``/proc``; 0 where it
    cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def copiers_or_none(context: Context, arenas: list[Arena | None], workers: int) -> Copiers | None:
    """Copiers for ``workers`` workers' arenas, or None where there is no arena (spawned
    workers, or none could be mapped): the main process then writes everything itself."""
    if not any(a is not None for a in arenas):
        return None
    with contextlib.suppress(OSError):
        return Copiers(context, arenas, copiers_for(workers))
    return None
