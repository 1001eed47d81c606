"""docs/operations.md tried for real: its VM start-up script run under bash, its systemd
unit checked by ``systemd-analyze verify`` and against the exit codes prep documents.

The start-up script is taken from the document as written; only its paths are moved into
a temporary directory (the checkout, corpus, tokenizer and disk), and the cloud copy
``gsutil`` is a stand-in on PATH that records its arguments (and fails when told to).
"""

from __future__ import annotations

import configparser
import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from harness import World, make_world, no_traceback, ops_corpus
from markdown import code_block

OPERATIONS = REPO / "docs" / "operations.md"
VENV = Path(sys.executable).parent.parent
GSUTIL = """#!/usr/bin/env bash
echo "$@" >> "$GSUTIL_RECORD"
exit "${GSUTIL_EXIT:-0}"
"""


@dataclass(frozen=True)
class Vm:
    """The start-up script with its paths moved under ``root``."""

    root: Path
    script: Path
    out: Path
    record: Path

    def boot(self, gsutil_exit: int = 0) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{self.root / 'bin'}:{os.environ['PATH']}",
               "GSUTIL_RECORD": str(self.record), "GSUTIL_EXIT": str(gsutil_exit)}
        return subprocess.run(["bash", str(self.script)], capture_output=True, text=True,
                              env=env, timeout=300, check=False)


@pytest.fixture
def vm(tmp_path: Path) -> Vm:
    world: World = make_world(tmp_path / "inputs", ops_corpus(2, 60))
    checkout = tmp_path / "srv" / "prep"
    checkout.mkdir(parents=True)
    (checkout / ".venv").symlink_to(VENV)  # .venv/bin/python and .venv/bin/prep
    (checkout / "scripts").symlink_to(REPO / "scripts")
    assert (checkout / ".venv" / "bin" / "prep").exists(), "the prep command is not installed"
    out = tmp_path / "disk" / "tokens" / "corpus"
    out.parent.mkdir(parents=True)
    gsutil = tmp_path / "bin" / "gsutil"
    gsutil.parent.mkdir()
    gsutil.write_text(GSUTIL)
    gsutil.chmod(gsutil.stat().st_mode | stat.S_IXUSR)
    text = code_block(OPERATIONS, "Preemptible VM start-up script", "bash")
    moves = {"/srv/prep": checkout, "/mnt/corpus": world.source, "/models/gpt2": world.tokenizer,
             "/mnt/disk/tokens/corpus": out}
    for old, new in moves.items():
        assert old in text, f"the start-up script no longer mentions {old}"
        text = text.replace(old, str(new))
    script = tmp_path / "startup.sh"
    script.write_text(text)
    return Vm(tmp_path, script, out, tmp_path / "gsutil.calls")


def tamper(path: Path) -> None:
    """Flip one bit of one token id in the middle of ``path`` (a .bin file)."""
    data = bytearray(path.read_bytes())
    data[1024 + (len(data) - 1024) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_startup_script_copies_a_good_dataset_and_exits_0(vm: Vm) -> None:
    r = vm.boot()
    assert r.returncode == 0, r.stdout + r.stderr
    no_traceback(r.stderr)
    assert f"{vm.out}: OK" in r.stdout
    assert vm.record.read_text().splitlines() == [
        f"-m rsync -r {vm.out} gs://bucket/tokens/corpus"]


def test_startup_script_exits_non_zero_when_verify_fails(vm: Vm) -> None:
    assert vm.boot().returncode == 0
    vm.record.unlink()
    tamper(vm.out / "train-00000.bin")

    r = vm.boot()

    assert r.returncode != 0, r.stdout + r.stderr
    assert "FAIL" in r.stdout and "train-00000.bin" in r.stdout, r.stdout
    assert f"prep verify failed: not copying {vm.out}" in r.stderr
    assert not vm.record.exists(), "a dataset that failed verification was copied"


def test_startup_script_reports_a_failed_copy(vm: Vm) -> None:
    r = vm.boot(gsutil_exit=3)
    assert r.returncode == 3, r.stdout + r.stderr
    assert vm.record.exists()


def unit() -> configparser.ConfigParser:
    text = code_block(OPERATIONS, "systemd", "ini")
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_systemd_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (.ci/run installs systemd)")
    text = code_block(OPERATIONS, "systemd", "ini")
    # the unit as written, pointed at this checkout so that ExecStart= exists
    text = text.replace("/srv/prep/.venv/bin/python", sys.executable)
    text = text.replace("WorkingDirectory=/srv/prep", f"WorkingDirectory={REPO}")
    path = tmp_path / "prep-corpus.service"
    path.write_text(text)
    r = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr


def test_systemd_unit_agrees_with_the_exit_codes() -> None:
    """75 (stopped, resumable) is a clean stop that is restarted unless asked for; 1 and 2
    (need a human) are never restarted; network-online.target is pulled in, not only
    ordered after."""
    u = unit()
    service = u["Service"]
    assert set(service["SuccessExitStatus"].split()) == {"75"}
    assert set(service["RestartForceExitStatus"].split()) == {"75"}
    assert set(service["RestartPreventExitStatus"].split()) == {"1", "2"}
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    after = set(u["Unit"]["After"].split())
    wants = set(u["Unit"].get("Wants", "").split())
    assert "network-online.target" in after and "network-online.target" in wants
    # the table of exit codes at the top of the same document says the same
    doc = OPERATIONS.read_text()
    assert "| `75` | stopped early but resumable" in doc
    assert "| `1` | error" in doc and "| `2` | usage error" in doc
