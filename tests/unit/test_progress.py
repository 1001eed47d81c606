"""Progress (``prep.progress``): the plain log line, worked by hand, and the bar's drawings,
which never wrap a terminal: every one starts at column 0 and fits the terminal's width.

The bar is drawn by the real :class:`BarReporter` (tqdm) on a stream whose width is a real
pseudo-terminal's window size, as on a user's terminal; what is drawn is kept as text, so a
drawing is a function call, not a run (tests/ops/test_progress.py runs ``prepare.py`` in a
real tmux pane)."""

from __future__ import annotations

import fcntl
import io
import os
import struct
import termios
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st
from terminal import drawn_segments

from prep.progress import BarReporter, Snapshot, render


def test_the_log_line_states_rows_tokens_rates_and_eta() -> None:
    # 250 of 1,000 rows in 2 s: 125 rows/s leaves 750 rows, 6 s; 12,346 tokens / 2 s.
    snap = Snapshot(rows=250, total_rows=1000, tokens=12_346, text_bytes=3_000_000, seconds=2.0)
    assert render(snap) == (
        " 25.0% rows 250/1,000 | tokens 12,346 | 6,173 tokens/s | 1.5 MB/s | ETA 0:00:06")


def test_a_resumed_run_rates_only_what_this_process_did() -> None:
    # Resumed at 900 rows, 40,000 tokens, 1 MB: 100 rows, 5,000 tokens and 0.5 MB in 10 s,
    # so 10 rows/s leave 9,000 rows for 900 s = 0:15:00.
    snap = Snapshot(rows=1000, total_rows=10_000, tokens=45_000, text_bytes=1_500_000,
                    seconds=10.0, start_rows=900, start_tokens=40_000, start_bytes=1_000_000)
    assert render(snap) == (
        " 10.0% rows 1,000/10,000 | tokens 45,000 | 500 tokens/s | 0.1 MB/s | ETA 0:15:00")


def test_no_eta_when_the_total_is_unknown_or_reached() -> None:
    unknown = Snapshot(rows=7, total_rows=None, tokens=70, text_bytes=0, seconds=1.0)
    assert render(unknown) == "rows 7 | tokens 70 | 70 tokens/s | 0.0 MB/s"
    done = Snapshot(rows=4, total_rows=4, tokens=8, text_bytes=0, seconds=2.0)
    assert render(done) == "100.0% rows 4/4 | tokens 8 | 4 tokens/s | 0.0 MB/s"


def test_an_eta_past_a_day_counts_hours() -> None:
    # One row in 100 s leaves 999 rows: 99,900 s = 27 h 45 min.
    snap = Snapshot(rows=1, total_rows=1000, tokens=1, text_bytes=0, seconds=100.0)
    assert render(snap).endswith("| ETA 27:45:00")


class _Terminal(io.StringIO):
    """Text written to a terminal whose width is a real pseudo-terminal's window size."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return True


@contextmanager
def terminal(cols: int) -> Iterator[_Terminal]:
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        yield _Terminal(slave)
    finally:
        os.close(slave)
        os.close(master)


@st.composite
def runs(draw: st.DrawFn) -> list[Snapshot]:
    """A run's snapshots: rows and tokens only grow, the total is known or not, and the run
    may have been resumed; any size from a handful of rows to billions, any speed."""
    total = draw(st.one_of(st.none(), st.integers(1, 10**10)))
    start = draw(st.integers(0, total or 10**10))
    rows = sorted(draw(st.lists(st.integers(start, total or 10**10), min_size=1, max_size=6)))
    per_row = draw(st.integers(0, 5000))
    seconds = sorted(draw(st.lists(st.floats(0, 1e7), min_size=len(rows), max_size=len(rows))))
    return [Snapshot(rows=r, total_rows=total, tokens=r * per_row, text_bytes=r * per_row * 4,
                     seconds=s, start_rows=start, start_tokens=start * per_row,
                     start_bytes=start * per_row * 4)
            for r, s in zip(rows, seconds, strict=True)]


@settings(max_examples=150, deadline=None)
@given(run=runs(), cols=st.sampled_from([40, 60, 80, 132, 200]))
def test_every_drawing_starts_at_column_0_and_fits_the_terminal(run: list[Snapshot], cols: int
                                                                 ) -> None:
    with terminal(cols) as stream:
        reporter = BarReporter(stream)
        for i, snap in enumerate(run):
            reporter(snap, final=i == len(run) - 1)
        text = stream.getvalue()
    assert text.startswith("\r") and text.endswith("\n"), repr(text)  # the line is ended
    drawings = [s for s in drawn_segments(text) if s]
    assert drawings, repr(text)
    too_wide = [s for s in drawings if len(s) >= cols]  # the last column stays free
    assert not too_wide, too_wide
    if run[0].total_rows is not None:  # a bar with a total fills the width
        assert all(len(s) >= cols - 10 for s in drawings), drawings
        if run[-1].rows == run[-1].total_rows:
            assert drawings[-1].startswith("100%|"), drawings


def test_the_final_drawing_of_a_finished_run_is_at_100_percent() -> None:
    with terminal(80) as stream:
        BarReporter(stream)(Snapshot(rows=5000, total_rows=5000, tokens=60_000,
                                     text_bytes=240_000, seconds=1.0), final=True)
        drawings = [s for s in drawn_segments(stream.getvalue()) if s]
    assert drawings[-1].startswith("100%|"), drawings
    assert "| 5.00k/5.00k rows [" in drawings[-1], drawings
    assert drawings[-1].endswith(", 60.0k tok, 60.0k tok/s, 0.2 MB/s]"), drawings


def test_a_bar_without_a_total_is_redrawn() -> None:
    """A source whose total_rows is None (the default of sources.base): tqdm refuses bool()
    of such a bar, which once failed a run on a terminal at its second batch."""
    with terminal(80) as stream:
        reporter = BarReporter(stream)
        reporter(Snapshot(rows=10, total_rows=None, tokens=100, text_bytes=400, seconds=1.0))
        reporter(Snapshot(rows=20, total_rows=None, tokens=200, text_bytes=800, seconds=2.0),
                 final=True)
        drawings = [s for s in drawn_segments(stream.getvalue()) if s]
    assert drawings[-1].startswith("20.0 rows ["), drawings
