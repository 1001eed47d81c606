"""docs/operations.md's VM start-up script run under bash against the real S3 server
(tests/s3server.py): a first boot killed with its disk, and a replacement VM finishing the
dataset.

The start-up script is taken from the document as written; only its paths are moved into
a temporary directory (the checkout, tokenizer), its SOURCE is the local corpus and its OUT
a bucket on the test server (gs:// has no local server; the script is the same for s3://).
The first boot's ``prep`` is the fault driver, parked before its third remote checkpoint: the
VM dies there (SIGKILL to its whole process group) and its disk (the local staging) is gone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from harness import DRIVER, World, make_world, no_traceback, ops_corpus, paced, wait_for
from markdown import code_block
from s3server import S3Server

OPERATIONS = REPO / "docs" / "operations.md"
VENV = Path(sys.executable).parent.parent
# The first VM's prep: the fault driver, with batches small enough that each shard is
# committed (and its remote checkpoint written) on its own (batch size changes no byte).
FAULTY_PREP = """#!/usr/bin/env bash
exec "{python}" "{driver}" "${{@:2}}" --batch-size 64
"""


@dataclass(frozen=True)
class Vm:
    """The start-up script with its paths moved under ``root``; ``prep`` on its PATH-less
    ``.venv/bin`` is the real one, or (``faulty``) the fault driver."""

    root: Path
    script: Path
    out: str
    env: dict[str, str]

    def boot(self, disk: Path, faults: list[dict[str, object]] | None = None
             ) -> tuple[subprocess.Popen[str], Path]:
        """Start the script on a VM whose local disk (the cache: local staging) is
        ``disk``; with ``faults``, its ``prep`` runs through the fault driver. Returns the
        process and the file its output goes to."""
        env = {**self.env, "XDG_CACHE_HOME": str(disk)}
        bin_dir = self.root / "srv" / "prep" / ".venv" / "bin"
        prep = bin_dir / "prep"
        prep.unlink(missing_ok=True)
        if faults:
            prep.write_text(FAULTY_PREP.format(python=sys.executable, driver=DRIVER))
            prep.chmod(prep.stat().st_mode | stat.S_IXUSR)
            env["PREP_FAULT"] = json.dumps(faults)
        else:
            prep.symlink_to(VENV / "bin" / "prep")
        log = self.root / f"boot-{disk.name}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen(["bash", str(self.script)], stdout=f, stderr=f, text=True,
                                    env=env, start_new_session=True)
        return proc, log


@pytest.fixture
def vm(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> Vm:
    world: World = make_world(tmp_path / "inputs", ops_corpus(2, 600))
    checkout = tmp_path / "srv" / "prep"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / "scripts").symlink_to(REPO / "scripts")
    text = code_block(OPERATIONS, "Preemptible VM start-up script", "bash")
    out = f"s3://{s3_bucket}/vm-{uuid.uuid4().hex[:8]}/web-2026"
    moves = {"/srv/prep": str(checkout), "/models/gpt2": str(world.tokenizer),
             "SOURCE=gs://raw-corpora/web-2026/": f"SOURCE={world.source}",
             "OUT=gs://tokens/web-2026": f"OUT={out}",
             "--max-file-tokens 100M": "--max-file-tokens 3000"}  # a few shards, not one
    for old, new in moves.items():
        assert old in text, f"the start-up script no longer mentions {old}"
        text = text.replace(old, new)
    script = tmp_path / "startup.sh"
    script.write_text(text)
    env = {**s3_server.env(), "PYTHONUNBUFFERED": "1"}
    return Vm(tmp_path, script, out, env)


def test_a_replacement_vm_finishes_what_a_killed_one_started(
        vm: Vm, s3_server: S3Server, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    # Parked once its second remote checkpoint is written: the first is at row 0, the
    # second at the first commit that names a sealed shard. Paced (0.05 s after each batch
    # of 64 documents), the stream is then far from its end, and the run cannot publish
    # meanwhile: its commits soon wait for the parked writer (at most MAX_QUEUED jobs).
    # Unpaced, the second could be the last commit's, which a publish may drop.
    park = {"target": "prep.outputs.bucket.mirror.Mirror._checkpoint", "action": "gate",
            "nth": 2, "when": "after", "reached": str(gate / "reached"),
            "release": str(gate / "release")}
    first, log = vm.boot(tmp_path / "disk-1", [park, paced(0.05)])
    wait_for(lambda: (gate / "reached").exists() or first.poll() is not None,
             "the first VM's second remote checkpoint")
    assert (gate / "reached").exists(), log.read_text()
    os.killpg(first.pid, signal.SIGKILL)  # the VM is gone, with its disk
    first.wait(timeout=60)
    shutil.rmtree(tmp_path / "disk-1")

    second, log = vm.boot(tmp_path / "disk-2")
    code = second.wait(timeout=300)
    err = log.read_text()
    assert code == 0, err
    no_traceback(err)
    assert re.search(r"local staging \S+ is missing: restoring it from the remote "
                     rf"checkpoint of {re.escape(vm.out)} at row [1-9]", err), err

    reference = tmp_path / "reference" / "web-2026"
    local = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "prepare.py"), "--source",
         code_arg(vm, "SOURCE"), "--tokenizer", str(tmp_path / "inputs" / "tok"), "--out",
         str(reference), "--max-file-tokens", "3000", "--quiet"],
        capture_output=True, text=True, timeout=300, check=False)
    assert local.returncode == 0, local.stderr
    fs = s3_server.filesystem()
    for p in sorted(reference.iterdir()):
        if p.suffix == ".bin" or p.name == "_MANIFEST.json":
            with fs.open_input_stream(f"{vm.out[5:]}/{p.name}") as f:
                assert f.read() == p.read_bytes(), p.name


def code_arg(vm: Vm, name: str) -> str:
    """A variable's value as the moved script sets it."""
    m = re.search(rf"^{name}=(\S+)", vm.script.read_text(), re.M)
    assert m
    return m[1]
