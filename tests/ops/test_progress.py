"""Progress and the final summary: plain lines every ``--log-interval`` when stderr is not a
terminal (cron logs), a redrawn bar on a terminal, nothing but the summary with ``--quiet``.

Real processes; the terminal is a real pseudo-terminal. With ``--batch-size 8`` a run over
5,000 documents makes 625 batches and lasts a few tenths of a second, dozens of
``--log-interval 0.01`` periods (28 lines here); the test asks for four.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from harness import World, make_world, manifest, no_traceback, ops_corpus, spawn

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


def num(text: str) -> int:
    return int(text.replace(",", ""))


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
    assert float(m["seconds"].replace(",", "")) > 0
    assert num(m["rate"]) > 0


def test_periodic_lines_when_stderr_is_not_a_terminal(world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, err = spawn(world.args(out, "--log-interval", 0.01, *SLOW), tmp_path / "log").finish()
    assert code == 0, err
    no_traceback(err)
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


def test_quiet_prints_only_the_summary(world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, err = spawn(world.args(out, "--quiet", "--log-interval", 0.01, *SLOW),
                      tmp_path / "log").finish()
    assert code == 0, err
    assert len(err.splitlines()) == 1, err
    check_summary(err.splitlines()[0], out)


def test_quiet_still_reports_up_to_date_and_errors(cli, world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli("prepare", *world.args(out, "--quiet")).code == 0

    r = cli("prepare", *world.args(out, "--quiet", "--refresh"))
    assert r.code == 0, r.err
    assert r.err.splitlines() == [f"{out} is up to date"]

    r = cli("prepare", *world.args(out, "--quiet"))
    assert r.code == 1, r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("prep: error: "), r.err
    assert "already exists" in lines[0]


def _drain(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:  # EIO: every slave descriptor is closed
            return
        if not data:
            return
        chunks.append(data)


def test_bar_on_a_terminal(world: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    master, slave = os.openpty()
    chunks: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(master, chunks), daemon=True)
    reader.start()
    try:
        proc = spawn(world.args(out, *SLOW), tmp_path / "unused.log", stderr=slave)
    finally:
        os.close(slave)
    code, _ = proc.finish()
    reader.join(30)
    os.close(master)
    text = b"".join(chunks).decode(errors="replace")
    assert code == 0, text
    no_traceback(text)
    redraws = text.split("\r\x1b[2K")[1:]
    assert redraws, f"no bar redraw in {text!r}"
    assert all(r.startswith("[") for r in redraws)
    final = redraws[-1].splitlines()[0]
    assert final.startswith("[" + "#" * 30 + "] | 100.0% rows 5,000/5,000 | tokens "), final
    assert not re.search(r"prep: +[\d.]+% rows", text), "log-style progress on a terminal"
    lines = text.replace("\r\n", "\n").split("\n")
    check_summary(next(line for line in reversed(lines) if line.strip()), out)
