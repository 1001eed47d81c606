"""docs/operations.md tried for real: its systemd unit checked by ``systemd-analyze verify``
and against the exit codes prep documents. (Its VM start-up script runs against the real S3
server in tests/s3/test_vm_startup.py.)"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from markdown import code_block

OPERATIONS = REPO / "docs" / "operations.md"


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
