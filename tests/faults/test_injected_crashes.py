"""SIGKILL at exact calls of a real run (injected at the call's import site by
tests/fault_driver.py), then resume: nothing half-written is visible, and the result is
byte-identical to an uninterrupted run's."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import harness as h
import pytest
from harness import World

CKPT = "checkpoint.json"
REPLACE = "prep.fsio.os.replace"  # the os.replace that atomic_write_bytes calls
FSYNC = "prep.formats.idfile.os.fsync"
SEAL = "prep.formats.idfile.IdFileWriter.seal"
RENAME = "prep.outputs.base.rename_noreplace"  # creating staging
PUBLISH_RENAME = "prep.outputs.local.rename_noreplace"

# Where the kill leaves things: only the temporary building directory, a staging
# directory, or the published dataset.
BUILDING, STAGING, PUBLISHED = "building", "staging", "published"


def kill(target: str, when: str = "after", nth: int = 1, **filters: Any) -> dict[str, Any]:
    return {"target": target, "when": when, "nth": nth, "action": "kill", **filters}


CASES = [
    # staging creation
    pytest.param(kill(REPLACE, arg_contains=CKPT), BUILDING, False,
                 id="first-checkpoint-written-in-building"),
    pytest.param(kill(RENAME, "before", within="create_staging"), BUILDING, False,
                 id="before-renaming-building-to-staging"),
    pytest.param(kill(RENAME, within="create_staging"), STAGING, False,
                 id="after-renaming-building-to-staging"),
    # checkpoints
    pytest.param(kill(REPLACE, arg_contains=CKPT, nth=2), STAGING, True,
                 id="after-replace-of-checkpoint-2"),
    pytest.param(kill(REPLACE, arg_contains=CKPT, nth=10), STAGING, True,
                 id="after-replace-of-checkpoint-10", marks=pytest.mark.soak),  # as the 2nd
    pytest.param(kill(REPLACE, "before", arg_contains=CKPT, nth=10), STAGING, True,
                 id="checkpoint-10-written-not-yet-replaced"),
    pytest.param(kill("prep.state.checkpoint.atomic_write_bytes", "before", nth=8), STAGING, True,
                 id="open-files-fsynced-checkpoint-not-written"),
    pytest.param(kill(REPLACE, arg_contains=CKPT, src_contains='"finished": true'), STAGING,
                 False, id="after-replace-of-the-finished-checkpoint"),
    # rollover
    pytest.param(kill(SEAL, within="_roll"), STAGING, False,
                 id="after-first-rollover-seal"),
    pytest.param(kill(SEAL, within="_roll", nth=7), STAGING, False,
                 id="after-seventh-rollover-seal", marks=pytest.mark.soak),  # as the first
    pytest.param(kill(FSYNC, "before", within=["seal", "_roll"], nth=3), STAGING, False,
                 id="rollover-seal-header-written-not-fsynced"),
    pytest.param(kill("prep.formats.onefile.IdFileWriter", within="_roll", nth=4), STAGING, False,
                 id="next-file-created-after-rollover"),
    # finishing
    pytest.param(kill(FSYNC, "before", within=["seal", "finish"]), STAGING, False,
                 id="during-the-final-seal-of-train"),
    pytest.param(kill(SEAL, within="finish"), STAGING, False,
                 id="train-sealed-val-not"),
    pytest.param(kill(SEAL, within="finish", nth=2), STAGING, False,
                 id="both-splits-sealed-no-manifest"),
    pytest.param(kill(REPLACE, arg_contains="_PROVENANCE.json"), STAGING, False,
                 id="provenance-written-manifest-not"),
    pytest.param(kill(REPLACE, "before", arg_contains="_MANIFEST.json"), STAGING, False,
                 id="manifest-temp-written-not-replaced"),
    pytest.param(kill(REPLACE, arg_contains="_MANIFEST.json"), STAGING, False,
                 id="manifest-written-checkpoint-still-there"),
    pytest.param(kill("pathlib.Path.unlink", arg_contains=CKPT, within="_drop_checkpoint"),
                 STAGING, False, id="checkpoint-removed-not-yet-renamed"),
    # publishing
    pytest.param(kill("prep.outputs.local.LocalDir.publish", "before"), STAGING, False,
                 id="right-before-publish"),
    pytest.param(kill(PUBLISH_RENAME, "before", within="publish"), STAGING, False,
                 id="right-before-the-final-rename"),
    pytest.param(kill(PUBLISH_RENAME, within="publish"), PUBLISHED, False,
                 id="after-the-final-rename-before-fsync"),
]  # fmt: skip


@pytest.fixture(scope="module")
def w(tmp_path_factory: pytest.TempPathFactory) -> World:
    return h.world(tmp_path_factory, h.SMALL)


def killed_run(
    w: World,
    out: Path,
    fault: dict[str, Any],
    mark: Path,
    fast: bool,
    args: list[Any] | None = None,
) -> None:
    """Run with ``fault`` and check that it fired and killed the run."""
    if args is None:
        args = ["--out", out, *w.recipe(), *(h.EVERY_BATCH if fast else ())]
    done = h.run(args, faults=fault, mark=mark)
    assert mark.exists(), f"the fault's call was never reached:\n{done.stderr}"
    assert done.returncode == -signal.SIGKILL, done.stderr


def check_state(w: World, out: Path, state: str) -> None:
    """No partial output: before publishing, DIR does not exist at all."""
    staging = h.staging_of(out)
    building = out.with_name("." + out.name + ".incomplete.new")
    if state == PUBLISHED:  # whole; the killed run's lock info is still beside it
        assert not staging.exists()
        h.assert_identical(w, out, beside=False)
        return
    assert not out.exists(), "a dataset appeared before it was complete"
    assert staging.is_dir() == (state == STAGING)
    assert building.is_dir() == (state == BUILDING)
    if state == STAGING:
        assert (staging / CKPT).is_file() or (staging / "_MANIFEST.json").is_file()


@pytest.mark.parametrize(("fault", "state", "fast"), CASES)
def test_kill_at_an_exact_call_then_resume_is_identical(
    w: World, tmp_path: Path, fault: dict[str, Any], state: str, fast: bool
) -> None:
    out = tmp_path / "out"
    killed_run(w, out, fault, tmp_path / "fired", fast)
    check_state(w, out, state)
    # Staging holds the recipe, so `--out DIR --resume` alone continues it; with only the
    # building directory left there is nothing to resume: the supervisor's full command.
    resume = ["--out", out, "--resume"] if state != BUILDING else w.fresh_args(out, "--resume")
    done = h.run(resume)
    assert done.returncode == 0, done.stderr
    if state == PUBLISHED:
        assert "already complete" in done.stderr
    h.assert_identical(w, out)


SECOND = [
    pytest.param(kill("pathlib.Path.unlink", within="apply_restore", arg_contains=".bin"),
                 id="after-removing-a-file-written-after-the-checkpoint"),
    pytest.param(kill("prep.formats.onefile.IdFileWriter", within="apply_restore"),
                 id="after-truncating-the-open-file"),
    pytest.param(kill(REPLACE, arg_contains=CKPT), id="after-the-first-checkpoint-of-the-resume"),
]  # fmt: skip


@pytest.mark.parametrize("second", SECOND)
def test_kill_while_resuming_then_resume_again(
    w: World, tmp_path: Path, second: dict[str, Any]
) -> None:
    """A crash right after a rollover leaves a file the checkpoint does not name and an open
    file longer than committed; a resume killed while cleaning them up is resumed again."""
    out = tmp_path / "out"
    first = kill("prep.formats.onefile.IdFileWriter", within="_roll", nth=3)
    killed_run(
        w, out, first, tmp_path / "fired-1", fast=False, args=["--out", out, *w.recipe(), *h.FAST]
    )
    cp = h.read_checkpoint(out)
    assert cp is not None
    named = {r["name"] for s in cp["splits"].values() for r in s["sealed"]}
    named |= {s["open"]["name"] for s in cp["splits"].values() if s["open"]}
    unnamed = {p.name for p in h.staging_of(out).glob("*.bin")} - named
    assert unnamed, "the first crash left no file after the checkpoint"
    killed_run(
        w, out, second, tmp_path / "fired-2", fast=True, args=["--out", out, "--resume", *h.FAST]
    )
    check_state(w, out, STAGING)
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def test_kill_while_writing_the_lock_info_leaves_nothing_behind(w: World, tmp_path: Path) -> None:
    out = tmp_path / "out"
    fault = kill(REPLACE, "before", arg_contains=".lock.json")
    killed_run(w, out, fault, tmp_path / "fired", fast=False)
    done = h.run(w.fresh_args(out, "--resume"))
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)


def test_resume_discards_whatever_lies_past_the_checkpoint(w: World, tmp_path: Path) -> None:
    """A torn tail after the open file's committed ids (garbage, as a power loss can leave,
    longer than any file will grow) and a .bin file the checkpoint does not name are both
    discarded before the run continues."""
    out = tmp_path / "out"
    killed_run(w, out, kill(REPLACE, arg_contains=CKPT, nth=10), tmp_path / "fired", fast=True)
    cp = h.read_checkpoint(out)
    assert cp is not None
    staging = h.staging_of(out)
    opened = cp["splits"]["train"]["open"]
    with open(staging / opened["name"], "ab") as f:
        f.write(bytes(range(256)) * 256)  # 64 KiB: past 2 * max_file_tokens bytes of ids
    (staging / "train-09999.bin").write_bytes(b"not committed")
    done = h.run(["--out", out, "--resume"])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
