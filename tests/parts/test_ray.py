"""``--parts N --executor ray`` on a real local Ray: a Ray worker SIGKILLed in the middle of a
part is retried by Ray, the part resumes from its checkpoint, and the merged dataset is
byte-identical to the same parts run by hand and merged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PREPARE

from parts.partskit import GPT2, big_corpus, merged_by_hand, wait_for

pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

SLOW = ("--tokenizer", str(GPT2), "--batch-size", "4", "--checkpoint-interval", "0.01")


def test_a_sigkilled_worker_is_retried_and_the_bytes_match_a_hand_merge(
    tmp_path: Path, cli
) -> None:
    corpus = big_corpus(tmp_path / "c")
    expected = merged_by_hand(cli, corpus, tmp_path / "hand" / "ds", 3, SLOW)

    out = tmp_path / "ray" / "ds"
    cmd = [sys.executable, str(PREPARE), "--source", str(corpus), "--out", str(out),
           "--val-fraction", "0.2", "--max-file-tokens", "2500", "--dataset", "ds",
           "--doc-sep-id", "0", *SLOW, "--parts", "3", "--executor", "ray"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env={**os.environ, "RAY_ADDRESS": ""})
    try:
        lock_info = out.with_name("ds.parts") / "1-of-3.lock.json"
        checkpoint = out.with_name("ds.parts") / "1-of-3.incomplete" / "checkpoint.json"
        wait_for(lambda: checkpoint.exists() and lock_info.exists(), 240, "part 1 to checkpoint")
        worker = int(json.loads(lock_info.read_text())["pid"])
        assert worker not in (proc.pid, os.getpid())  # the part runs inside a Ray worker
        os.kill(worker, signal.SIGKILL)
        log, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, log[-3000:]
    got = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "_PROVENANCE.json"}
    assert got == expected
    part1 = json.loads((out.with_name("ds.parts") / "1-of-3" / "_PROVENANCE.json").read_text())
    assert part1["resumes"] >= 1  # it continued from its checkpoint, not from scratch
    argv = part1["argv"]  # the part keeps to the one core Ray reserved, not every core
    assert argv[argv.index("--workers") + 1] == "1" and argv[argv.index("--threads") + 1] == "1"
    assert cli("verify", out).code == 0
