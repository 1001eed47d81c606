"""The operator's stderr: which reporter and log format each kind of stream gets, the
``prep`` logger given back on leaving, the stamped summary of ``--quiet``, and the summary
line of a run and of a merge (its rate computed here)."""

from __future__ import annotations

import dataclasses
import io
import logging
import re
import time

import pytest

from prep.cli.console import Console, stamp, summary_line
from prep.merge import MergeOutcome
from prep.progress import LineReporter, silent
from prep.run.lifecycle import Outcome
from prep.state.manifest import Manifest, ManifestSource, SplitSummary
from prep.state.parts import MergedPart

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d prep: "


def test_a_log_file_gets_dated_lines_and_plain_progress() -> None:
    stream = io.StringIO()
    root = logging.getLogger("prep")
    before = (root.handlers[:], root.level, root.propagate)
    with Console(stream, quiet=False, log_interval=30.0) as console:
        assert not console.terminal
        assert isinstance(console.reporter, LineReporter)
        logging.getLogger("prep.run").info("sealed train-00003.bin")
        logging.getLogger("prep.run").debug("not shown")
    assert re.fullmatch(STAMP + r"sealed train-00003\.bin\n", stream.getvalue())
    assert (root.handlers, root.level, root.propagate) == before
    logging.getLogger("prep.run").info("after the console: not on its stream")
    assert stream.getvalue().count("\n") == 1


def test_quiet_shows_only_warnings_and_a_stamped_summary() -> None:
    stream = io.StringIO()
    with Console(stream, quiet=True, log_interval=30.0) as console:
        assert console.reporter is silent
        logging.getLogger("prep").info("hidden")
        logging.getLogger("prep").warning("a warning")
        console.summary("published out")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(STAMP + "a warning", lines[0])
    assert re.fullmatch(STAMP + "published out", lines[1])


def test_without_quiet_the_summary_is_as_given() -> None:
    stream = io.StringIO()
    with Console(stream, quiet=False, log_interval=1.0) as console:
        console.summary("published out")
    assert stream.getvalue() == "published out\n"


def test_stamp_is_local_date_and_time() -> None:
    when = 1_700_000_000.0
    expected = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    assert stamp("done", when) == f"{expected} prep: done"


def manifest(**over: object) -> Manifest:
    source = ManifestSource("parquet", "/d", None, "text", None, (), 0, 0, None)
    m = Manifest(dataset="d", tokenizer_id="t", tokenizer_sha256="a" * 64, vocab_size=256,
                 doc_sep_id=0, sep_position="prepend", format="llmc", dtype="uint16",
                 bin_version=1, max_file_tokens=100, corpus_manifest_sha256="b" * 64,
                 source=source, recipe={}, val_bytes_per_token=None,
                 totals={"train": SplitSummary(1_234_567, 1_000, 13),
                         "val": SplitSummary(8_765, 10, 1)}, files=())
    return dataclasses.replace(m, **over)


def test_the_summary_of_a_published_run_with_its_rate() -> None:
    line = summary_line(Outcome("published", "out/ds", manifest(), seconds=99.0,
                                active_seconds=2.5))
    rate = f"{(1_234_567 + 8_765) / 2.5:,.0f}"
    assert line == ("published out/ds: train 1,234,567 tokens / 1,000 docs / 13 files; "
                    f"val 8,765 tokens / 10 docs / 1 files; 2.5 s, {rate} tokens/s")
    assert summary_line(Outcome("published", "o", manifest(), seconds=0.0)).endswith("; 0.0 s")


@pytest.mark.parametrize(("outcome", "line"), [
    (Outcome("up-to-date", "out/ds", manifest()), "out/ds is up to date"),
    (Outcome("already-complete", "out/ds", manifest()), "out/ds is already complete"),
    (Outcome("published", "out/ds", None), "out/ds is already complete"),
])
def test_the_summary_of_a_run_that_published_nothing(outcome: Outcome, line: str) -> None:
    assert summary_line(outcome) == line


def test_the_summary_of_a_merge_has_no_rate() -> None:
    parts = tuple(MergedPart(f"{i}-of-2", "c" * 64, i, 1, 1, 0, None, {}) for i in range(2))
    line = summary_line(MergeOutcome("published", "out/ds", manifest(parts=parts), 1_234.56))
    assert line == ("published out/ds from 2 parts: train 1,234,567 tokens / 1,000 docs / 13 "
                    "files; val 8,765 tokens / 10 docs / 1 files; 1,234.6 s")
