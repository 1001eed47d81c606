"""Progress and the final summary: plain lines every ``--log-interval`` when stderr is not a
terminal (cron logs), each with the date and time; a bar on a terminal that fits its width;
nothing but the summary, stamped, with ``--quiet``.

Real processes; the terminals are a real tmux pane of 80 x 24 and a real pseudo-terminal.
The runs whose line or redraw counts are checked are paced (a sleep after every batch), so
they last long enough on any machine: with ``--batch-size 8`` a run over 5,000 documents
makes 625 batches of at least 1 ms, dozens of ``--log-interval 0.01`` periods; the test
asks for four. That every drawing of the bar fits the terminal's width is a property of the
reporter, tested as a function in tests/unit/test_progress.py.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import PREPARE, REPO, write_parquet
from harness import (
    World,
    make_world,
    manifest,
    no_traceback,
    ops_corpus,
    paced,
    provenance,
    spawn,
)
from terminal import run_in_tmux, run_with_pty_stderr, tmux_available

N_DOCS = 5000
SLOW = ["--batch-size", "8"]
NUM = r"[\d,]+"
PROGRESS = re.compile(
    rf"prep: +(?P<pct>[\d.]+)% rows (?P<rows>{NUM})/(?P<total>{NUM}) \| tokens (?P<tokens>{NUM})"
    rf" \| (?P<rate>{NUM}) tokens/s \| [\d.,]+ MB/s"
)
SUMMARY = re.compile(
    rf"^published (?P<out>\S+): train (?P<train_tokens>{NUM}) tokens / (?P<train_docs>{NUM}) docs"
    rf" / (?P<train_files>\d+) files; val (?P<val_tokens>{NUM}) tokens / (?P<val_docs>{NUM}) docs"
    rf" / (?P<val_files>\d+) files; (?P<seconds>[\d.,]+) s, (?P<rate>{NUM}) tokens/s$"
)


STAMP = re.compile(r"^(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) prep: (?P<text>.*)$")


def num(text: str) -> int:
    return int(text.replace(",", ""))


def stamped(line: str, start: float, end: float) -> str:
    """The text of a log line that carries the local date and time of a moment between
    ``start`` and ``end`` (epoch seconds, whole seconds as written)."""
    m = STAMP.match(line)
    assert m, f"no date and time: {line!r}"
    when = datetime.strptime(m["when"], "%Y-%m-%d %H:%M:%S").timestamp()
    assert int(start) <= when <= end, (m["when"], start, end)
    return m["text"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("progress"), ops_corpus(2, N_DOCS // 2))


def check_summary(line: str, out: Path) -> None:
    """The summary line states exactly the manifest's totals."""
    m = SUMMARY.match(line)
    assert m, line
    assert m["out"] == str(out)
    totals: dict[str, Any] = manifest(out)["totals"]
    for split in ("train", "val"):
        assert num(m[f"{split}_tokens"]) == totals[split]["n_tokens"]
        assert num(m[f"{split}_docs"]) == totals[split]["n_docs"]
        assert int(m[f"{split}_files"]) == totals[split]["n_files"]
    # Time and rate are the run's active time in _PROVENANCE.json (not "> 0" as printed: a
    # run under 0.05 s, on a fast machine, prints 0.0 s).
    active = provenance(out)["active_seconds"]
    assert active > 0
    tokens = sum(t["n_tokens"] for t in totals.values())
    assert (m["seconds"], m["rate"]) == (f"{active:,.1f}", f"{tokens / active:,.0f}"), line


def test_periodic_lines_when_stderr_is_not_a_terminal(world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    start = time.time()
    code, err = spawn(world.args(out, "--log-interval", 0.01, *SLOW), tmp_path / "log",
                      paced(0.001)).finish()
    end = time.time()
    assert code == 0, err
    no_traceback(err)
    log = err.splitlines()[:-1]
    assert log, err
    for line in log:  # every log line carries the date and the time
        stamped(line, start, end)
    lines = [m for m in map(PROGRESS.search, err.splitlines()) if m]
    assert len(lines) >= 4, err  # at least three periodic lines and the final one
    rows = [num(m["rows"]) for m in lines]
    tokens = [num(m["tokens"]) for m in lines]
    assert rows == sorted(rows) and tokens == sorted(tokens)
    assert rows[0] < N_DOCS, "no progress line before the end"
    assert {num(m["total"]) for m in lines} == {N_DOCS}
    total_tokens = sum(t["n_tokens"] for t in manifest(out)["totals"].values())
    assert (rows[-1], tokens[-1], lines[-1]["pct"]) == (N_DOCS, total_tokens, "100.0")
    assert all(num(m["rate"]) > 0 for m in lines)
    assert "\r" not in err and "\x1b[" not in err, "a bar was drawn although not on a terminal"
    check_summary(err.splitlines()[-1], out)


def test_default_interval_logs_only_the_final_progress_line(cli, world: World, tmp_path: Path
                                                            ) -> None:
    out = tmp_path / "out"
    t = time.monotonic()
    r = cli("prepare", *world.args(out))
    elapsed = time.monotonic() - t
    assert r.code == 0, r.err
    if elapsed >= 30:
        pytest.skip(f"the run took {elapsed:.0f} s, longer than the default --log-interval")
    lines = [m for m in map(PROGRESS.search, r.err.splitlines()) if m]
    assert [num(m["rows"]) for m in lines] == [N_DOCS]
    check_summary(r.err.splitlines()[-1], out)


def test_quiet_prints_only_the_summary_with_date_and_time(world: World, tmp_path: Path
                                                          ) -> None:
    out = tmp_path / "out"
    start = time.time()
    code, err = spawn(world.args(out, "--quiet", "--log-interval", 0.01, *SLOW),
                      tmp_path / "log").finish()
    end = time.time()
    assert code == 0, err
    assert len(err.splitlines()) == 1, err
    check_summary(stamped(err.splitlines()[0], start, end), out)


def test_quiet_still_reports_up_to_date_and_errors(cli, world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("prepare", *world.args(out, "--quiet")).code == 0

    start = time.time()
    r = cli("prepare", *world.args(out, "--quiet", "--refresh"))
    assert r.code == 0, r.err
    assert len(r.err.splitlines()) == 1, r.err
    assert stamped(r.err.splitlines()[0], start, time.time()) == f"{out} is up to date"

    r = cli("prepare", *world.args(out, "--quiet"))
    assert r.code == 1, r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("prep: error: "), r.err
    assert "already exists" in lines[0]


BAR = re.compile(r"\d%.*\brows\b")  # a drawn bar: "NN%" then the rows done


def prepare_command(world: World, out: Path, *extra: object) -> list[object]:
    return [sys.executable, PREPARE, *world.args(out, *extra)]


@pytest.mark.skipif(not tmux_available(), reason="tmux is not installed (.ci/run installs it)")
def test_bar_fits_a_real_80x24_terminal(world: World, tmp_path: Path) -> None:
    """In a tmux pane of 80 x 24 the bar is one line, redrawn in place: the pane (with its
    scroll-back) holds exactly one bar line, at 100 % once, and then the summary."""
    out = tmp_path / "out"
    screen = run_in_tmux(prepare_command(world, out, "--batch-size", 1), REPO)
    assert screen.code == 0, screen.text
    no_traceback(screen.text)
    bars = [line for line in screen.lines if BAR.search(line)]
    assert len(bars) == 1, "the bar flooded the terminal:\n" + screen.text
    assert bars[0].startswith("100%|"), bars[0]
    assert f"| {N_DOCS / 1000:.2f}k/{N_DOCS / 1000:.2f}k rows [" in bars[0], bars[0]
    assert sum(line.count("100%") for line in screen.lines) == 1, screen.text
    assert not any(re.search(r"prep: +[\d.]+% rows", line) for line in screen.lines)
    # the summary is the last thing printed (the pane wraps it at 80 columns, and drops a
    # space that ends a wrapped row: pad those rows back to 80)
    rows = screen.lines[screen.lines.index(bars[0]) + 1:]
    after = "".join(row.ljust(80) for row in rows[:-1]) + rows[-1]
    check_summary(after[after.rindex(f"published {out}: "):], out)


def test_an_error_after_the_bar_starts_on_its_own_line(world: World, tmp_path: Path) -> None:
    """Bad data found mid-run on a terminal: the bar is ended before the error, so the
    message starts at column 0 instead of continuing the bar's line."""
    source = tmp_path / "src"
    shutil.copytree(world.source, source)
    write_parquet(source / "part-99999.parquet", ["fine", None])
    out = tmp_path / "out"
    args = ["--source", source, "--tokenizer", world.tokenizer, "--out", out, "--batch-size", 1]
    code, raw = run_with_pty_stderr([sys.executable, PREPARE, *args], REPO)
    assert code == 1, raw
    no_traceback(raw)
    assert BAR.search(raw), f"no bar was drawn before the error: {raw!r}"
    error = raw.index("prep: error: ")
    assert raw[error - 1] == "\n", repr(raw[error - 80:error + 80])
    assert "part-99999.parquet" in raw[error:], raw[error:]
