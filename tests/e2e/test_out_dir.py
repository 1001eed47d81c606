"""``--out`` as users give it: a new path; an existing empty directory (created by a
provisioning script) which the dataset is published onto atomically (an empty mount point
too: tests/ops/test_mount_out.py); never something that is not a prep dataset, and then
without suggesting --refresh (which cannot help). A run refused before it starts leaves no
``DIR.lock``. Real processes and the real filesystem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import PREPARE, REPO, dir_bytes, numbered_docs, write_parquet

DRIVER = REPO / "tests" / "fault_driver.py"


def prepare(*args: object, faults: list[dict[str, object]] | None = None
            ) -> subprocess.CompletedProcess[str]:
    script = DRIVER if faults else PREPARE
    env = {**os.environ, "PREP_FAULT": json.dumps(faults or [])}
    return subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True,
                          text=True, timeout=300, check=False, env=env)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_parquet(tmp_path_factory.mktemp("src") / "p.parquet", numbered_docs(300))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("ref") / "ds"
    r = prepare("--source", corpus, "--tokenizer", "byte", "--out", out)
    assert r.returncode == 0, r.stderr
    return dir_bytes(out)


def recipe(corpus: Path) -> list[object]:
    return ["--source", corpus, "--tokenizer", "byte", "--dataset", "ds"]


def lock_files(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".lock" in p.name)


@pytest.mark.parametrize("mode", [[], ["--resume"], ["--refresh"]])
@pytest.mark.parametrize("kind", ["dir", "file"])
def test_something_that_is_not_a_dataset_is_refused_without_suggesting_refresh(
    tmp_path: Path, corpus: Path, kind: str, mode: list[str]
) -> None:
    out = tmp_path / "ds"
    if kind == "dir":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    else:
        out.write_text("mine")
    before = dir_bytes(tmp_path)

    r = prepare(*recipe(corpus), "--out", out, *mode)

    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    message = r.stderr.strip().splitlines()[-1]
    what = "a directory that is not empty" if kind == "dir" else "not a directory"
    assert message == (
        f"prep: error: {out} exists and is not a prep dataset ({what}, no _MANIFEST.json); "
        "prep writes only into a new or an empty directory. Choose another --out, or move "
        f"{out} away"), r.stderr
    assert "--refresh" not in r.stderr and "already complete" not in r.stderr
    assert dir_bytes(tmp_path) == before  # untouched, and no DIR.lock left behind
    assert lock_files(tmp_path) == []


def test_an_existing_dataset_is_refused_and_no_lock_is_left(
    tmp_path: Path, corpus: Path
) -> None:
    out = tmp_path / "ds"
    assert prepare(*recipe(corpus), "--out", out).returncode == 0
    (tmp_path / "ds.lock").unlink()

    r = prepare(*recipe(corpus), "--out", out)

    assert r.returncode == 1
    assert "already exists; prep never overwrites a dataset" in r.stderr
    assert "--refresh to update it" in r.stderr  # here --refresh is the way
    assert lock_files(tmp_path) == []


@pytest.mark.parametrize("mode", [[], ["--resume"], ["--refresh"]])
def test_an_empty_directory_is_published_onto(tmp_path: Path, corpus: Path, mode: list[str],
                                              reference: dict[str, bytes]) -> None:
    out = tmp_path / "ds"
    out.mkdir()  # what a provisioning script or an operator creates in advance

    r = prepare(*recipe(corpus), "--out", out, *mode)

    assert r.returncode == 0, r.stderr
    assert dir_bytes(out) == reference
    assert not (tmp_path / "ds.incomplete").exists()
    again = prepare(*recipe(corpus), "--out", out, "--resume")
    assert again.returncode == 0 and "already complete" in again.stderr


def test_an_empty_directory_that_fills_up_before_publishing_is_not_replaced(
    tmp_path: Path, corpus: Path, reference: dict[str, bytes]
) -> None:
    """Someone writes into the empty --out at the last instant: the publishing rename fails
    (rename(2) never replaces a non-empty directory), their file survives, staging is
    kept, and once the directory is emptied --resume publishes."""
    out = tmp_path / "ds"
    out.mkdir()
    theirs = out / "theirs.txt"
    # parked at the publishing rename itself, after prep saw the directory empty
    gate = {"target": "prep.outputs.local.os.rename", "action": "gate", "when": "before",
            "arg_contains": "ds.incomplete",
            "reached": str(tmp_path / "reached"), "release": str(tmp_path / "release")}
    proc = subprocess.Popen(
        [sys.executable, str(DRIVER), *map(str, recipe(corpus)), "--out", str(out)],
        env={**os.environ, "PREP_FAULT": json.dumps([gate])},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "reached").exists() and proc.poll() is None:
            assert time.monotonic() < deadline, "the run never reached publishing"
            time.sleep(0.01)
        assert (tmp_path / "reached").exists(), proc.communicate()[1]
        theirs.write_text("mine")  # the run is parked just before publishing
        (tmp_path / "release").touch()
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert f"{out} is no longer empty; nothing was replaced" in err
    assert theirs.read_text() == "mine" and sorted(os.listdir(out)) == ["theirs.txt"]
    assert (tmp_path / "ds.incomplete").is_dir()

    theirs.unlink()
    r = prepare(*recipe(corpus), "--out", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert dir_bytes(out) == reference


def test_a_mount_point_that_is_not_empty_is_refused_before_the_lock(corpus: Path) -> None:
    """An empty mount point is published onto (tests/ops/test_mount_out.py, as root); one
    with content is refused like any directory that is not empty."""
    mount = Path("/proc")  # a mount point, never empty, on every Linux system
    assert os.path.ismount(mount)
    r = prepare("--source", corpus, "--tokenizer", "byte", "--out", mount)
    assert r.returncode == 1, r.stderr
    assert "/proc exists and is not a prep dataset (a directory that is not empty" in r.stderr
    assert "--refresh" not in r.stderr
    assert not Path("/proc.lock").exists()
