"""``--token`` never lands in anything prep writes or prints: ``_PROVENANCE.json`` (argv),
the checkpoint, logs, messages. Users upload the dataset directory and paste logs."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PREPARE
from harness import (
    World,
    gate,
    make_world,
    no_traceback,
    ops_corpus,
    provenance,
    release,
    run,
    spawn,
    wait_for,
)

TOKEN = "hf_" + "Zq9" * 12  # shaped like a real token (never valid anywhere)
OTHER = "plain-secret-7f3a"  # not hf_-shaped: masked because it is the --token value


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("secretworld"), ops_corpus(2, 3000))


def everything_written(tmp_path: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def assert_nowhere(secret: str, tmp_path: Path, *outputs: str) -> None:
    for name, data in everything_written(tmp_path).items():
        assert secret.encode() not in data, f"{secret} written into {name}"
    for text in outputs:
        assert secret not in text, text


@pytest.mark.parametrize(
    ("flags", "secret"),
    [(["--token", TOKEN], TOKEN), ([f"--token={TOKEN}"], TOKEN), (["--token", OTHER], OTHER)],
    ids=["separate", "equals", "any-value"],
)
def test_the_token_is_in_no_file_and_no_output(
    world: World, tmp_path: Path, flags: list[str], secret: str
) -> None:
    """An interrupted run (checkpoint, log), its resume, and the published dataset."""
    out = tmp_path / "run" / "out"
    args = world.args(out, *flags, "--batch-size", 8, "--checkpoint-interval", 0.000001)
    # SIGTERM while parked after a checkpoint: the run cannot have finished first.
    where = tmp_path / "gate"
    where.mkdir()
    first = spawn(args, tmp_path / "logs" / "first.log",
                  [gate("prep.run.committed.RunState.checkpoint", where, nth=2)])
    wait_for((where / "reached").exists, "a checkpoint", first)
    first.popen.send_signal(signal.SIGTERM)
    release(where)
    code, err1 = first.finish()
    assert code == 75, err1
    code, err2 = run([*world.args(out, *flags), "--resume"], tmp_path / "logs" / "resume.log")
    assert code == 0, err2
    no_traceback(err2)
    argv = provenance(out)["argv"]
    assert any(a.endswith("***") for a in argv), argv  # recorded, masked
    assert_nowhere(secret, tmp_path, err1, err2)


def test_the_token_is_not_in_an_error_message(world: World, tmp_path: Path) -> None:
    """A message that would echo what was typed (here a bad --source) masks hf_ tokens."""
    done = subprocess.run(
        [
            sys.executable,
            str(PREPARE),
            "--out",
            str(tmp_path / "out"),
            "--token",
            TOKEN,
            "--source",
            str(tmp_path / TOKEN),
            "--tokenizer",
            str(world.tokenizer),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "no such file or directory" in done.stderr
    assert_nowhere(TOKEN, tmp_path, done.stdout, done.stderr)


def test_help_says_to_prefer_hf_token() -> None:
    done = subprocess.run(
        [sys.executable, str(PREPARE), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert "prefer the HF_TOKEN environment variable" in help_text
    assert "ps" in help_text
