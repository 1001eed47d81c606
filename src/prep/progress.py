"""Progress reporting: a bar on a terminal (tqdm), a plain line every ``--log-interval``
seconds otherwise (cron logs), nothing with ``--quiet``.

The job calls a :class:`Reporter` after every committed batch with a :class:`Snapshot`; the
reporter decides whether to draw. Rendering is a pure function of the snapshot.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, Protocol, TextIO

if TYPE_CHECKING:
    from tqdm import tqdm

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


def render(snap: Snapshot) -> str:
    """One log line: rows (and % of the total), tokens, tokens/s, MB/s, ETA."""
    el = max(snap.seconds, 1e-9)
    tok_rate = (snap.tokens - snap.start_tokens) / el
    mb_rate = (snap.text_bytes - snap.start_bytes) / 1e6 / el
    parts = []
    if snap.total_rows:
        frac = min(snap.rows / snap.total_rows, 1.0)
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
    """A tqdm bar on a terminal: one line that fits the terminal's width (re-read at each
    redraw), redrawn at most 10 times a second; closed once, so 100 % is drawn once.

    Log records must reach the terminal through :class:`BarLogHandler` while the bar is
    open, or they would be drawn over it. :meth:`close` ends the line (call it when a run
    stops early: an error message must not continue the bar's line).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._bar: tqdm[NoReturn] | None = None

    def __call__(self, snap: Snapshot, final: bool = False) -> None:
        # not `self._bar or ...`: tqdm's bool() of a bar without a total raises TypeError
        bar = self._bar if self._bar is not None else self._open(snap)
        bar.set_postfix_str(_bar_stats(snap), refresh=False)
        bar.update(snap.rows - bar.n)
        if final:
            self.close()

    def _open(self, snap: Snapshot) -> tqdm[NoReturn]:
        known = snap.total_rows is not None
        bar: tqdm[NoReturn] = _tqdm()(
            total=snap.total_rows,
            initial=snap.start_rows,
            file=self.stream,
            dynamic_ncols=True,
            mininterval=0.1,
            unit_scale=True,
            bar_format=_BAR if known else _COUNTER,
        )
        self._bar = bar
        return bar

    def close(self) -> None:
        """Draw the last state and end the line; a no-op when no bar is open."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _tqdm() -> type[tqdm[NoReturn]]:
    """tqdm, imported when a bar is first drawn: a run whose stderr is not a terminal (cron,
    scripts, tests) never draws one, and importing tqdm is a tenth of a small run's start."""
    from tqdm import tqdm

    return tqdm


# tqdm fills {bar} with whatever the terminal's width leaves; {postfix} is ", <stats>".
_BAR = "{percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} rows [{elapsed}<{remaining}{postfix}]"
_COUNTER = "{n_fmt} rows [{elapsed}{postfix}]"


def _bar_stats(snap: Snapshot) -> str:
    el = max(snap.seconds, 1e-9)
    tok_rate = (snap.tokens - snap.start_tokens) / el
    mb_rate = (snap.text_bytes - snap.start_bytes) / 1e6 / el
    size = _tqdm().format_sizeof
    return f"{size(snap.tokens)} tok, {size(tok_rate)} tok/s, {mb_rate:,.1f} MB/s"


class BarLogHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each record above an open bar (tqdm clears the bar, writes, redraws it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _tqdm().write(self.format(record), file=self.stream)
        except Exception:  # the logging contract: report, never raise
            self.handleError(record)


def silent(snap: Snapshot, final: bool = False) -> None:
    """The reporter for ``--quiet``."""
