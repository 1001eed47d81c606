"""The outputs' roles (``prep.outputs``) on a local directory: one look (``state()``) is a
typed ``Seen`` (what it holds, whether a run of it is staged, what it holds instead of a
dataset); ``check_out`` refuses from that look alone, naming what is there; an interrupted
refresh swap finished by ``recover_swap`` gives the look after it, not the one before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prep.errors import OutputError
from prep.fsio import file_sha256
from prep.outputs import ABSENT, DATASET, EMPTY, OTHER, Holds, LocalDir, Seen, resolve_output


def _dataset(directory: Path, text: str = "{}") -> Path:
    directory.mkdir(parents=True)
    (directory / "_MANIFEST.json").write_text(text)
    return directory


def test_a_look_says_what_a_directory_holds(tmp_path: Path) -> None:
    out = LocalDir(tmp_path / "ds")
    assert out.state() == Seen(ABSENT, staged=False)
    out.final.mkdir()
    assert out.state() == Seen(EMPTY, staged=False)
    out.staging.mkdir()
    assert out.state() == Seen(EMPTY, staged=True)
    (out.final / "notes.txt").write_text("mine")
    assert out.state() == Seen(OTHER, True, "a directory that is not empty")
    (out.final / "_MANIFEST.json").write_text("{}")
    assert out.state() == Seen(DATASET, staged=True)

    link, file = LocalDir(tmp_path / "link"), LocalDir(tmp_path / "file")
    link.final.symlink_to(out.staging)  # a directory without a manifest
    file.final.write_text("x")
    assert link.state() == Seen(OTHER, False, "a symbolic link")
    assert file.state() == Seen(OTHER, False, "not a directory")
    assert [h.value for h in Holds] == ["absent", "empty", "dataset", "other"]


def test_check_out_refuses_from_the_look_it_is_given(tmp_path: Path) -> None:
    out = resolve_output(tmp_path / "ds")
    seen = Seen(OTHER, False, "a symbolic link")
    with pytest.raises(OutputError) as other:
        out.check_out(seen, resume=True, refresh=True)  # nothing there: only the look says
    assert f"{out} exists and is not a prep dataset (a symbolic link, no _MANIFEST.json)" in (
        str(other.value))
    with pytest.raises(OutputError, match="use --refresh to update it"):
        out.check_out(Seen(DATASET, False), resume=False, refresh=False)
    out.check_out(Seen(DATASET, False), resume=True, refresh=False)
    out.check_out(Seen(ABSENT, False), resume=False, refresh=False)


def test_recover_swap_gives_the_look_after_the_swap_it_finished(tmp_path: Path) -> None:
    out = LocalDir(tmp_path / "ds")
    _dataset(out.staging, '{"new": true}')  # killed between the two renames of a swap
    new_sha = file_sha256(out.staging / "_MANIFEST.json")
    out.journal.write_text(json.dumps({"new_manifest_sha256": new_sha}))
    before = out.state()
    assert before == Seen(ABSENT, staged=True)
    after = out.recover_swap(before)
    assert after == Seen(DATASET, staged=False) == out.state()
    assert (out.final / "_MANIFEST.json").read_text() == '{"new": true}'
    assert out.recover_swap(after) is after  # no journal: nothing to finish, nothing looked at


def test_a_look_asks_for_staging_only_when_a_caller_needs_it() -> None:
    asked: list[int] = []

    def staging_exists() -> bool:
        asked.append(1)
        return True

    seen = Seen(DATASET, staging_exists)
    assert not asked  # a refusal on what the output holds never looks for staging
    assert seen.staged and seen.staged
    assert asked == [1]  # asked once, then remembered
    assert seen == Seen(DATASET, staged=True)


def test_a_bucket_refuses_refresh_before_it_connects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Port 9 on loopback (discard) has no S3 server: a look would fail or retry; the
    refusal must come first, from the options alone."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    out = resolve_output("s3://bucket/data/ds")
    with pytest.raises(OutputError, match=r"--refresh of s3://bucket/data/ds: a bucket has no "
                       r"rename"):
        out.check_options(resume=False, refresh=True)
    out.check_options(resume=True, refresh=False)  # everything else waits for a look
