"""examples/slurm on a real one-node Slurm (Debian's slurm-wlm and munge, started by
examples/slurm/start-local-cluster.sh): an array of parts, one task requeued mid-run, then
the merge job; the result is byte-identical to the parts run by hand and merged.

Opt-in (``pytest -m slurm``): it needs root and apt, and takes minutes. CI runs it
(.ci/run). If this test started the cluster, it stops it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO
from parts.partskit import GPT2, RECIPE, big_corpus, merged_by_hand, wait_for

pytestmark = pytest.mark.slurm

SLURM = REPO / "examples" / "slurm"
OPTIONS = ["--val-fraction", "0.2", "--max-file-tokens", "2500", "--dataset", "ds",
           "--doc-sep-id", "0", "--tokenizer", str(GPT2), "--batch-size", "4",
           "--checkpoint-interval", "0.01"]


def _sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    was_up = Path("/run/prep-slurm/slurmctld.pid").exists() and shutil.which("sinfo") and \
        subprocess.run(["scontrol", "ping"], capture_output=True).returncode == 0
    subprocess.run(["bash", str(SLURM / "start-local-cluster.sh")], check=True, timeout=600)
    yield
    if not was_up:
        subprocess.run(["bash", str(SLURM / "stop-local-cluster.sh")], check=True, timeout=120)


def _state(job: str) -> str:
    return _sh("squeue", "-h", "-j", job, "-o", "%T").strip()


def test_array_with_one_requeue_then_merge_gives_the_hand_merged_bytes(
    tmp_path: Path, cli, cluster
) -> None:
    corpus = big_corpus(tmp_path / "c")
    assert OPTIONS[:8] == list(RECIPE)
    expected = merged_by_hand(cli, corpus, tmp_path / "hand" / "ds", 2, OPTIONS[8:])
    out = tmp_path / "slurm" / "ds"
    prep = Path(sys.executable).with_name("prep")
    env = {"PATH": f"{prep.parent}:/usr/bin:/bin:/usr/sbin:/sbin", "PREP": str(prep),
           "PREP_CPUS": "1", "PREP_TIME": "30:00", "PREP_SIGNAL_SECS": "60"}
    r = subprocess.run(["bash", str(SLURM / "submit.sh"), "2", str(out), "--",
                        "--source", str(corpus), *OPTIONS],
                       capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    assert r.returncode == 0, r.stderr
    array, merge = (tmp_path / "slurm" / "ds.parts" / "slurm-jobs").read_text().split()
    logs = out.with_name("ds.parts") / "logs"
    checkpoint = out.with_name("ds.parts") / "0-of-2.incomplete" / "checkpoint.json"
    wait_for(checkpoint.exists, 300, "part 0 to write a checkpoint")
    _sh("scontrol", "requeue", f"{array}_0")
    deadline = time.monotonic() + 900
    while _state(f"{array},{merge}"):
        assert time.monotonic() < deadline, _sh("squeue")
        if "PENDING" in _state(f"{array}_0"):  # skip the requeue's 2-minute begin delay
            subprocess.run(["scontrol", "update", f"JobId={array}_0", "StartTime=now"],
                           capture_output=True, check=False)
        time.sleep(1)
    part0 = (logs / "part-0.out").read_text()
    assert "(restart 1)" in part0 and "prep exited 75" in part0, part0
    assert (logs / "merge.out").exists()
    assert out.is_dir(), (logs / "merge.out").read_text()
    got = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "_PROVENANCE.json"}
    assert got == expected
    prov = json.loads((out.with_name("ds.parts") / "0-of-2" / "_PROVENANCE.json").read_text())
    assert prov["resumes"] >= 1
    assert cli("verify", out).code == 0
