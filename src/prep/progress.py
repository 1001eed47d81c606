"""Progress reporting: a bar on a terminal, a plain line every ``--log-interval`` seconds
otherwise (cron logs), nothing with ``--quiet``.

The job calls a :class:`Reporter` after every committed batch with a :class:`Snapshot`; the
reporter decides whether to draw. Rendering is a pure function of the snapshot.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Protocol, TextIO

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """Where the run is. ``total_rows`` comes from the Parquet footers (None if unknown);
    ``start_rows`` is where this process started (a resume), for the rate."""

    rows: int
    total_rows: int | None
    tokens: int
    text_bytes: int
    seconds: float
    start_rows: int = 0
    start_tokens: int = 0
    start_bytes: int = 0


class Reporter(Protocol):
    def __call__(self, snap: Snapshot, final: bool = False) -> None: ...


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def render(snap: Snapshot, *, bar_width: int = 0) -> str:
    """One line: rows (and % of the total), tokens, tokens/s, MB/s, ETA."""
    el = max(snap.seconds, 1e-9)
    tok_rate = (snap.tokens - snap.start_tokens) / el
    mb_rate = (snap.text_bytes - snap.start_bytes) / 1e6 / el
    parts = []
    if snap.total_rows:
        frac = min(snap.rows / snap.total_rows, 1.0)
        if bar_width:
            done = int(frac * bar_width)
            parts.append("[" + "#" * done + "." * (bar_width - done) + "]")
        parts.append(f"{frac:6.1%} rows {snap.rows:,}/{snap.total_rows:,}")
    else:
        parts.append(f"rows {snap.rows:,}")
    parts.append(f"tokens {snap.tokens:,}")
    parts.append(f"{tok_rate:,.0f} tokens/s")
    parts.append(f"{mb_rate:,.1f} MB/s")
    row_rate = (snap.rows - snap.start_rows) / el
    if snap.total_rows and row_rate > 0 and snap.rows < snap.total_rows:
        parts.append(f"ETA {_duration((snap.total_rows - snap.rows) / row_rate)}")
    return " | ".join(parts)


class LineReporter:
    """A log line at most every ``interval`` seconds (and one at the end)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last = time.monotonic()

    def __call__(self, snap: Snapshot, final: bool = False) -> None:
        now = time.monotonic()
        if final or now - self._last >= self.interval:
            self._last = now
            logger.info("%s", render(snap))


class BarReporter:
    """A single redrawn line on a terminal, at most 10 times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last = 0.0

    def __call__(self, snap: Snapshot, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last < 0.1:
            return
        self._last = now
        self.stream.write("\r\x1b[2K" + render(snap, bar_width=30))
        if final:
            self.stream.write("\n")
        self.stream.flush()


def silent(snap: Snapshot, final: bool = False) -> None:
    """The reporter for ``--quiet``."""
