"""The first thing a ``prepare`` process does: catch SIGTERM/SIGINT before the heavy imports.

Importing numpy, pyarrow and tokenizers takes a large part of a second. A signal in that
window would otherwise kill the process by the signal (exit 143 or 130) instead of the
documented exit 75. :func:`guard` records such signals (stdlib only, so it is cheap to
import); the CLI installs its real handlers and then :func:`take_pending` hands over what
arrived in between, so no signal is lost.
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
