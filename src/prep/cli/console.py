"""What the operator sees on stderr, set up by the CLI: the log format, the progress
reporter, and the final summary line.

- On a terminal: log lines carry the time (the reader is watching), progress is a bar.
- Elsewhere (cron, systemd, a log file): every log line carries the date and the time, and
  progress is a plain line every ``--log-interval`` seconds.
- With ``--quiet``: only errors and the summary, and the summary carries the date and time
  too (it is the only line a cron log gets, and must say when the run ended).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from prep.progress import BarLogHandler, BarReporter, LineReporter, Reporter, silent

if TYPE_CHECKING:
    from prep.api import Outcome
    from prep.merge import MergeOutcome

LOGGER = "prep"
DATE_TIME = "%Y-%m-%d %H:%M:%S"
TIME = "%H:%M:%S"


@dataclass
class Console:
    """The stderr of one ``prepare`` run. Use as a context manager: leaving it closes an open
    bar, so a message printed after a failure starts on a line of its own, and gives the
    ``prep`` logger back its previous handlers (a process that runs the CLI in-process, then
    the library, must not log to a stream the CLI's caller may have closed)."""

    stream: TextIO
    quiet: bool
    log_interval: float
    terminal: bool = field(init=False)
    reporter: Reporter = field(init=False)
    _saved: tuple[list[logging.Handler], int, bool] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.terminal = self.stream.isatty()
        self.reporter = self._make_reporter()
        handler: logging.Handler = (
            BarLogHandler(self.stream) if self.terminal else logging.StreamHandler(self.stream)
        )
        handler.setFormatter(_formatter(TIME if self.terminal else DATE_TIME))
        root = logging.getLogger(LOGGER)
        self._saved = (root.handlers[:], root.level, root.propagate)
        root.handlers[:] = [handler]
        root.setLevel(logging.WARNING if self.quiet else logging.INFO)
        root.propagate = False

    def _make_reporter(self) -> Reporter:
        if self.quiet:
            return silent
        if self.terminal:
            return BarReporter(self.stream)
        return LineReporter(self.log_interval)

    def summary(self, text: str) -> None:
        """The run's last line: as is after a bar or log lines, stamped with ``--quiet``."""
        self.message(stamp(text, time.time()) if self.quiet else text)

    def message(self, text: str) -> None:
        """A line of its own (an error, the summary): ends an open bar first."""
        self.close()
        print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if isinstance(self.reporter, BarReporter):
            self.reporter.close()

    def __enter__(self) -> Console:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        root = logging.getLogger(LOGGER)
        handlers, level, propagate = self._saved
        root.handlers[:] = handlers
        root.setLevel(level)
        root.propagate = propagate


def _formatter(datefmt: str) -> logging.Formatter:
    return logging.Formatter(f"%(asctime)s {LOGGER}: %(message)s", datefmt)


def stamp(text: str, when: float) -> str:
    """``text`` as a log line written at ``when`` (epoch seconds, local time)."""
    return f"{time.strftime(DATE_TIME, time.localtime(when))} {LOGGER}: {text}"


def summary_line(outcome: Outcome | MergeOutcome) -> str:
    """The summary of a run or a merge: what was published, its totals, time and rate."""
    m = outcome.manifest
    if outcome.status == "up-to-date":
        return f"{outcome.out} is up to date"
    if m is None or outcome.status == "already-complete":
        return f"{outcome.out} is already complete"
    parts = [
        f"{split} {t.n_tokens:,} tokens / {t.n_docs:,} docs / {t.n_files} files"
        for split, t in m.totals.items()
    ]
    if m.parts is not None:  # a merge: linking, not tokenizing, so no rate
        return f"published {outcome.out} from {len(m.parts)} parts: {'; '.join(parts)}; " \
            f"{outcome.seconds:,.1f} s"
    tokens = sum(t.n_tokens for t in m.totals.values())
    seconds = getattr(outcome, "active_seconds", None) or outcome.seconds  # a run's
    rate = f", {tokens / seconds:,.0f} tokens/s" if seconds else ""
    return f"published {outcome.out}: {'; '.join(parts)}; {seconds:,.1f} s{rate}"
