"""The first thing a ``prepare`` process does: catch SIGTERM/SIGINT before the heavy imports.

Importing numpy, pyarrow and tokenizers takes a large part of a second. A signal in that
window would otherwise kill the process by the signal (exit 143 or 130) instead of the
documented exit 75. :func:`guard` records such signals (stdlib only, so it is cheap to
import); the CLI installs its real handlers and then :func:`take_pending` hands over what
arrived in between, so no signal is lost. :func:`settle` covers the other end: once the
command has returned, a signal while the interpreter exits must not turn a finished job into
death by the signal.
"""

from __future__ import annotations

import signal
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_pending: list[int] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _pending.append(signum)


def guard() -> None:
    """Record SIGTERM/SIGINT until the CLI's handlers take over."""
    for s in SIGNALS:
        signal.signal(s, _record)


def take_pending() -> list[int]:
    """Signals recorded by :func:`guard` so far (call after installing the real handlers,
    so that any later signal reaches those)."""
    taken = list(_pending)
    _pending.clear()
    return taken


def settle() -> None:
    """Ignore SIGTERM/SIGINT from now on: the command has finished and its exit code is
    known. Python resets its own handlers to the default while it shuts down, so without this a
    signal in the last instants (after publishing) would kill the process (exit 143 or 130)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
