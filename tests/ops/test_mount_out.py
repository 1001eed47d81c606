"""``--out`` on a mount point (issue 11: "an existing empty directory (a mount point) is
refused as --out. Accept it"). A real tmpfs is mounted at ``OUT``: staging lives inside it
(``OUT/.prep-staging``), publishing links the files into ``OUT`` with ``_MANIFEST.json``
last. Real processes killed with SIGKILL during the run and during the publish, then
resumed, give the bytes of a run into an ordinary directory. Needs root for mount(2)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import dir_bytes, numbered_docs, write_parquet
from harness import gate, no_traceback, run, spawn, wait_for

PREP = Path(sys.executable).parent / "prep"
STAGING = ".prep-staging"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs the suite as root)"
)


def prep(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PREP), *map(str, args)], capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Path]:
    """An empty tmpfs mounted at ``tmp_path/mnt/ds``, unmounted afterwards."""
    point = tmp_path / "mnt" / "ds"
    point.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(point)],
                   check=True)
    try:
        assert os.path.ismount(point) and not os.listdir(point)
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_parquet(tmp_path_factory.mktemp("src") / "p.parquet", numbered_docs(2000))


def recipe(corpus: Path) -> list[object]:
    return ["--source", corpus, "--tokenizer", "byte", "--dataset", "ds",
            "--max-file-tokens", "20K"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, bytes]:
    """The same recipe published into an ordinary new directory."""
    out = tmp_path_factory.mktemp("ref") / "ds"
    r = run([*recipe(corpus), "--out", out])
    assert r.returncode == 0, r.stderr
    assert len(dir_bytes(out)) > 4  # several shards: a publish that stops midway leaves some
    return dir_bytes(out)


def test_an_empty_mount_point_is_published_onto(mount: Path, corpus: Path,
                                               reference: dict[str, bytes]) -> None:
    r = run([*recipe(corpus), "--out", mount])
    assert r.returncode == 0, r.stderr
    assert os.path.ismount(mount)  # still the mount: files were moved in, not the directory
    assert dir_bytes(mount) == reference
    assert not (mount / STAGING).exists()
    assert prep("verify", mount).returncode == 0
    assert (mount.parent / "ds.lock").exists()  # the lock file lives beside --out, as ever


def test_a_kill_during_publish_then_resume(mount: Path, corpus: Path,
                                          reference: dict[str, bytes]) -> None:
    kill = {"target": "prep.outputs.mount.os.link", "nth": 3, "action": "kill"}
    r = run([*recipe(corpus), "--out", mount], faults=kill)
    assert r.returncode == -signal.SIGKILL, r.stderr
    moved = sorted(p.name for p in mount.iterdir() if p.name != STAGING)
    assert len(moved) == 3 and "_MANIFEST.json" not in moved  # killed mid-publish
    assert (mount / STAGING / "_MANIFEST.json").is_file()
    assert all((mount / STAGING / name).samefile(mount / name) for name in moved)  # links

    again = run([*recipe(corpus), "--out", mount])  # without --resume: refused, kept
    assert again.returncode == 1 and "--resume" in again.stderr, again.stderr
    no_traceback(again.stderr)

    resumed = run([*recipe(corpus), "--out", mount, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert dir_bytes(mount) == reference
    assert not (mount / STAGING).exists()
    assert prep("verify", mount).returncode == 0


def test_a_kill_right_after_the_commit_point(mount: Path, corpus: Path,
                                            reference: dict[str, bytes]) -> None:
    kill = {"target": "prep.outputs.mount.os.link", "arg_contains": "_MANIFEST.json",
            "action": "kill"}
    r = run([*recipe(corpus), "--out", mount], faults=kill)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert dir_bytes(mount) == reference  # the manifest's link published it
    left = sorted(p.name for p in (mount / STAGING).iterdir())  # staging's own links
    assert left and all((mount / STAGING / name).samefile(mount / name) for name in left)
    assert prep("verify", mount).returncode == 0

    done = run([*recipe(corpus), "--out", mount, "--resume"])
    assert done.returncode == 0 and "already complete" in done.stderr, done.stderr
    assert not (mount / STAGING).exists()  # the staging left by the kill is removed


def test_a_live_then_killed_run_is_inspected_and_resumed_by_the_printed_command(
    mount: Path, corpus: Path, reference: dict[str, bytes]
) -> None:
    # Parked after its second checkpoint: alive, holding ds.lock beside the mount point, on
    # any machine (a SIGSTOP once staging showed up could come after the ~1 s run ended).
    where = mount.parent.parent / "gate"
    where.mkdir()
    proc = spawn([*recipe(corpus), "--out", mount, "--batch-size", "1",
                  "--checkpoint-interval", "1e-9"],
                 faults=[gate("prep.run.committed.RunState.checkpoint", where, nth=2)])
    try:
        wait_for((where / "reached").exists, "a checkpoint", proc)
        assert (mount / STAGING / "checkpoint.json").is_file()
        live = prep("inspect", mount)
        assert live.returncode == 0 and "running (ds.lock held by pid" in live.stdout, live
        second = run([*recipe(corpus), "--out", mount, "--resume"])
        assert second.returncode == 75 and "another run holds" in second.stderr, second
    finally:
        proc.kill()
        proc.wait()

    seen = prep("inspect", mount)
    assert seen.returncode == 0, seen.stderr
    lines = seen.stdout.splitlines()
    assert lines[0].startswith(f"staging {mount / STAGING}: in progress, not running"), lines
    resume = shlex.split(lines[-1].removeprefix("resume with: "))
    assert resume == ["prep", "prepare", "--out", str(mount), "--resume"]

    # The printed command as typed, run with this environment's prep (the one on PATH may
    # belong to another install when the venv is not activated).
    here = str(Path(sys.executable).with_name("prep"))
    done = subprocess.run([here, *resume[1:]], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert dir_bytes(mount) == reference


def test_refresh_of_a_mount_point(mount: Path, corpus: Path, tmp_path: Path) -> None:
    src = tmp_path / "grow"
    src.mkdir()
    write_parquet(src / "a.parquet", numbered_docs(300))
    args = ["--source", src, "--tokenizer", "byte", "--out", mount, "--refresh"]
    assert run(args).returncode == 0  # a first build publishes
    before = dir_bytes(mount)
    same = run(args)
    assert same.returncode == 0 and "up to date" in same.stderr, same.stderr

    write_parquet(src / "b.parquet", numbered_docs(100, start=300))
    changed = run(args)
    assert changed.returncode == 1, changed.stderr
    assert "mount point" in changed.stderr and "empty it" in changed.stderr
    no_traceback(changed.stderr)
    assert dir_bytes(mount) == before and not (mount / STAGING).exists()


def test_lost_found_is_not_content_and_a_user_file_is(mount: Path, corpus: Path,
                                                     reference: dict[str, bytes]) -> None:
    (mount / "notes.txt").write_text("mine")
    refused = run([*recipe(corpus), "--out", mount])
    assert refused.returncode == 1 and "is not a prep dataset" in refused.stderr
    assert not (mount.parent / "ds.lock").exists() and os.listdir(mount) == ["notes.txt"]

    (mount / "notes.txt").unlink()
    (mount / "lost+found").mkdir()  # what mkfs.ext4 leaves at a filesystem's root
    r = run([*recipe(corpus), "--out", mount])
    assert r.returncode == 0, r.stderr
    assert dir_bytes(mount) == reference and (mount / "lost+found").is_dir()


def test_a_bind_mount_within_one_filesystem_is_a_mount_point(
        tmp_path: Path, corpus: Path, reference: dict[str, bytes]) -> None:
    """A directory bind-mounted onto itself has its parent's device, so ``os.path.ismount``
    says no; yet no rename can replace it (EBUSY). prep must see it as a mount point from
    the kernel's mount table and publish into it, not build staging beside it and fail at
    the last step."""
    point = tmp_path / "bound" / "ds"
    point.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(point), str(point)], check=True)
    try:
        assert not os.path.ismount(point)  # the blind spot this test is about
        r = run([*recipe(corpus), "--out", point])
        assert r.returncode == 0, r.stderr
        assert dir_bytes(point) == reference
        assert not (point.parent / "ds.incomplete").exists()
        assert prep("verify", point).returncode == 0
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture(scope="module")
def trove_reference(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> dict[str, bytes]:
    """``--format datatrove`` into an ordinary directory: each split in a folder."""
    out = tmp_path_factory.mktemp("trove") / "ds"
    r = run([*recipe(corpus), "--format", "datatrove", "--out", out])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["train", "val"]
    return dir_bytes(out)


@pytest.mark.parametrize("kill", [
    {"target": "prep.outputs.mount.os.link", "nth": 3, "action": "kill"},
    pytest.param({"target": "prep.outputs.mount.os.link", "arg_contains": "_MANIFEST.json",
                  "action": "kill"}, marks=pytest.mark.soak),
], ids=["during-publish", "after-the-commit-point"])
def test_datatrove_split_folders_are_published_into_the_mount_point(
    mount: Path, corpus: Path, trove_reference: dict[str, bytes], kill: dict[str, object]
) -> None:
    args = [*recipe(corpus), "--format", "datatrove", "--out", mount]
    r = run(args, faults=kill)
    assert r.returncode == -signal.SIGKILL, r.stderr
    linked = [p for p in mount.rglob("*.ds*") if STAGING not in p.parts]
    assert linked and all(p.samefile(mount / STAGING / p.relative_to(mount)) for p in linked)
    resumed = run([*args, "--resume"])
    assert resumed.returncode == 0, resumed.stderr
    assert dir_bytes(mount) == trove_reference
    assert sorted(os.listdir(mount)) == ["_MANIFEST.json", "_PROVENANCE.json", "train", "val"]
    assert prep("verify", mount).returncode == 0
