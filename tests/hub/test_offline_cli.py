"""Offline mode and resume without the network, end to end: ``scripts/prepare.py`` as a real
subprocess with ``HF_HUB_OFFLINE=1`` (or ``--offline``) over a cache that the real ``hf
download`` filled from the loopback Hub; runs SIGKILLed mid-file; a Hub that drops every
connection during a resume."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GPT2_DIR, dir_bytes

from .fakehub import FOREVER, RESET, FakeHub
from .helpers import (
    COMMON,
    CORPUS,
    DATASET,
    EXTRAS,
    GIT_FILE,
    ORDER,
    TOKENIZER_REPO,
    URI,
    assert_same_dataset,
    bins,
    hub_env,
    manifest,
    prepare,
    rows_committed,
    spawn,
    tokenizer_files,
    wait_for,
)
from .hfcache import hf_download, run_suggested

OFFLINE = {"HF_HUB_OFFLINE": "1"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "hf"


def _staging(out: Path) -> Path:
    return out.parent / f"{out.name}.incomplete"


def _killed_online(hub: FakeHub, home: Path, out: Path) -> None:
    """An online run SIGKILLed while it waits for the second file's download: the first
    file is committed (checkpointed), the second and third are not in the cache."""
    gate = hub.gate(ORDER[1])
    args = ["--source", URI, "--out", out, *COMMON, "--batch-size", "16"]
    proc = spawn([*args, "--checkpoint-interval", "0.000001"], hub_env(hub, home))  # every batch
    try:
        wait_for(lambda: hub.requests("GET", ORDER[1]) and rows_committed(out) >= 16, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        gate.set()
    assert proc.returncode == -signal.SIGKILL
    assert 16 <= rows_committed(out) <= 120  # within the first file


def test_offline_with_a_populated_cache_gives_the_local_bytes(
    hub: FakeHub, reference: Path, home: Path, tmp_path: Path
) -> None:
    commit = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    hf_download(hub, home, DATASET, "--repo-type", "dataset")  # on the login node
    hub.commit("dataset", DATASET, {"data/other.parquet": CORPUS[ORDER[0]]})  # main moves on
    hub.clear_log()
    env_out, flag_out = tmp_path / "env" / "out", tmp_path / "flag" / "out"
    by_env = prepare(["--source", URI, "--out", env_out, *COMMON], hub_env(hub, home, **OFFLINE))
    by_flag = prepare(
        ["--source", URI, "--out", flag_out, *COMMON, "--offline"], hub_env(hub, home)
    )
    assert by_env.returncode == 0, by_env.stderr
    assert by_flag.returncode == 0, by_flag.stderr
    assert_same_dataset(env_out, reference, revision=commit)  # the cached commit, not main's
    assert dir_bytes(flag_out) == dir_bytes(env_out)
    assert not hub.requests()  # not one request reached the Hub


def test_offline_hub_tokenizer_gives_the_local_tokenizers_bytes(
    hub: FakeHub, home: Path, tmp_path: Path
) -> None:
    hub.commit("model", TOKENIZER_REPO, tokenizer_files())
    hf_download(hub, home, TOKENIZER_REPO)
    hub.clear_log()
    src = tmp_path / "src"
    src.mkdir()
    for name in ORDER:
        (src / name.replace("/", "-")).write_bytes(CORPUS[name])
    common = ["--source", src, "--dataset", "t", "--tokenizer-id", "gpt2"]
    offline = prepare(
        [*common, "--out", tmp_path / "hub", "--tokenizer", f"hf:{TOKENIZER_REPO}"],
        hub_env(hub, home, **OFFLINE),
    )
    local = prepare([*common, "--out", tmp_path / "local", "--tokenizer", GPT2_DIR])
    assert offline.returncode == 0, offline.stderr
    assert local.returncode == 0, local.stderr
    assert bins(tmp_path / "hub") == bins(tmp_path / "local") != {}
    assert manifest(tmp_path / "hub")["doc_sep_id"] == 50256  # generation_config.json's
    assert not hub.requests()


def test_a_file_missing_from_the_cache_exits_1_naming_it(
    hub: FakeHub, home: Path, tmp_path: Path
) -> None:
    commit = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    hf_download(hub, home, DATASET, "--repo-type", "dataset", "--exclude", ORDER[2])
    hub.clear_log()
    out = tmp_path / "out"
    r = prepare(["--source", URI, "--out", out, *COMMON], hub_env(hub, home, **OFFLINE))
    assert r.returncode == 1, r.stderr
    assert f"lacks 1 file(s) of commit {commit[:12]}: {ORDER[2]}" in r.stderr
    assert f"hf download {DATASET} {ORDER[2]} --repo-type dataset --revision {commit}" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists() and not _staging(out).exists()
    assert not hub.requests()


def test_a_killed_hub_run_resumes_offline_to_the_same_bytes(
    hub: FakeHub, reference: Path, home: Path, tmp_path: Path
) -> None:
    commit = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    out = tmp_path / "out"
    _killed_online(hub, home, out)
    hub.clear_log()
    before = dir_bytes(_staging(out))

    # the compute node has no network, and the cache lacks the files not read yet
    r = prepare(["--out", out, "--resume"], hub_env(hub, home, **OFFLINE))
    assert r.returncode == 1, r.stderr
    assert f"lacks 2 file(s) of commit {commit[:12]}: {ORDER[1]}, {ORDER[2]}" in r.stderr
    assert "Traceback" not in r.stderr
    assert dir_bytes(_staging(out)) == before  # refused before changing anything
    assert not hub.requests()

    run_suggested(hub, home, r.stderr)  # the printed command, on the login node
    hub.clear_log()

    # a cached file the run already read is checked against the SHA-256 it recorded
    snapshot = home / "hub" / "datasets--acme--corpus" / "snapshots" / commit
    blob = (snapshot / ORDER[0]).resolve()
    good = blob.read_bytes()
    blob.write_bytes(good[:50] + bytes([good[50] ^ 0xFF]) + good[51:])
    r = prepare(["--out", out, "--resume"], hub_env(hub, home, **OFFLINE))
    assert r.returncode == 1, r.stderr
    assert f"the cached copy of {ORDER[0]} at commit {commit[:12]} is damaged" in r.stderr
    assert dir_bytes(_staging(out)) == before
    blob.write_bytes(good)

    r = prepare(["--out", out, "--resume"], hub_env(hub, home, **OFFLINE))
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=commit)
    assert not hub.requests()


def test_an_outage_during_a_resume_that_needs_a_file_exits_75(
    hub: FakeHub, reference: Path, home: Path, tmp_path: Path
) -> None:
    commit = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    out = tmp_path / "out"
    _killed_online(hub, home, out)
    hub.commit("dataset", DATASET, {"data/new.parquet": CORPUS[ORDER[0]]})  # main moves on
    hub.clear_log()
    hub.fail("/", RESET, times=FOREVER)  # every connection dropped
    checkpoint = _staging(out) / "checkpoint.json"
    before = checkpoint.read_bytes()

    r = prepare(["--out", out, "--resume"], hub_env(hub, home), fast_retry=True)
    assert r.returncode == 75, r.stderr
    assert f"downloading {ORDER[1]}" in r.stderr and "--resume" in r.stderr
    assert "Traceback" not in r.stderr
    assert checkpoint.read_bytes() == before  # the commit point, commit and listing kept
    # the commit and listing came from the checkpoint: only the download was tried
    assert {q.path for q in hub.requests()} == {f"/datasets/{DATASET}/resolve/{commit}/{ORDER[1]}"}

    hub.clear_faults()
    r = prepare(["--out", out, "--resume"], hub_env(hub, home))
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=commit)  # never the moved main
    assert not hub.requests(contains="/tree/") and not hub.requests(contains="/revision/")


def test_python_m_prep_runs_offline(hub: FakeHub, home: Path, tmp_path: Path) -> None:
    hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))
    hf_download(hub, home, DATASET, "--repo-type", "dataset")
    hub.clear_log()
    out = tmp_path / "out"
    r = subprocess.run(
        [sys.executable, "-m", "prep", "prepare", "--source", URI, "--out", str(out), *COMMON],
        capture_output=True,
        text=True,
        timeout=120,
        env=hub_env(hub, home, **OFFLINE),
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert manifest(out)["source"]["kind"] == "hf"
    assert not hub.requests()
