"""How many workers a run starts, and the start line of a run with more workers than it
keeps busy (``prep.run.work.sizing``): the arithmetic, and a command line prep's own parser reads
back as the user's options with one part and its workers each."""

from __future__ import annotations

import re
import shlex

from prep.cli.commands import prepare_parser
from prep.procs.pool import default_workers
from prep.run.work.sizing import IN_PROCESS_BYTES, parts_advice, workers_for

ARGV = ["--source", "my corpus/", "--tokenizer", "gpt2", "--out", "tok/big", "--workers=64",
        "--max-file-tokens", "1M", "--resume"]


def test_as_many_workers_as_it_keeps_busy_needs_no_advice() -> None:
    assert parts_advice(10, ARGV, "/d/tok/big", kept_busy=10) is None
    assert parts_advice(1, None, "/d/tok/big", kept_busy=10) is None


def test_64_workers_become_parts_of_at_most_the_workers_one_run_keeps_busy() -> None:
    said = parts_advice(64, ARGV, "/d/tok/big", kept_busy=10)
    assert said is not None
    assert said.startswith("--workers 64: one run keeps about 10 workers busy")
    loop = re.search(r"for i in \$\(seq 0 (\d+)\); do prep prepare (.*) & done; wait; "
                     r"prep merge (\S+)$", said)
    assert loop is not None
    assert loop[1] == "6" and loop[3] == "/d/tok/big"  # 7 parts (ceil 64/10), 0..6
    ns = prepare_parser().parse_args(shlex.split(loop[2].replace("$i", "3")))
    assert (ns.source, ns.tokenizer, str(ns.out)) == ("my corpus/", "gpt2", "tok/big")
    assert (ns.part, ns.workers, ns.max_file_tokens) == ("3/7", 10, 1_000_000)  # 7 x 10 >= 64
    assert "resume" not in vars(ns)  # a fresh part, not a resume of this run


def test_a_part_or_a_library_call_gets_the_arithmetic_without_a_command() -> None:
    part = parts_advice(32, ARGV, "/d/tok/big", part="1/4", kept_busy=10)
    assert part is not None and "this part (1/4) could be split" in part
    library = parts_advice(32, None, "/d/tok/big", kept_busy=10)
    assert library is not None
    assert "run 4 parts side by side (--part I/4 --workers 8, I = 0..3)" in library


def test_a_small_source_is_tokenized_without_workers_unless_they_are_asked_for() -> None:
    """No worker (0) for a source of at most IN_PROCESS_BYTES with one tokenizer thread;
    ``--workers`` as given; otherwise one per core the process may use."""
    cores = default_workers()
    assert workers_for(None, None, None, IN_PROCESS_BYTES) == 0
    assert workers_for(None, 1, None, 2_000) == 0
    assert workers_for(None, None, None, IN_PROCESS_BYTES + 1) == cores
    assert workers_for(None, 2, None, 2_000) == cores  # its tokenizer pool needs a worker
    assert workers_for(None, None, 10**9, 2_000) == cores  # workers to recycle
    assert workers_for(3, None, None, 2_000) == workers_for(3, None, None, 10**12) == 3
