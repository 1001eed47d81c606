"""A Hub run's remote checkpoints are commits, gathered: at most one a COMMIT_SECONDS, sooner
when COMMIT_FILES sealed files wait; and the source's own card read for the license."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hub.fakehub import FakeHub

from prep.buckets.uri import BucketPath
from prep.hub.calls import HubOptions
from prep.outputs.bucket.layout import BucketLayout
from prep.outputs.hf import run
from prep.outputs.hf.run import HubMirror, HubRun
from prep.outputs.hf.store import HubObjects
from prep.outputs.local import LocalDir

from .conftest import REPO, TOKEN
from .test_card import _manifest


def _run(options: HubOptions, tmp_path: Path) -> HubRun:
    objects = HubObjects(REPO, "main", writer=True, token=TOKEN, options=options)
    layout = BucketLayout(BucketPath("hf", f"datasets/{REPO}", "d"), objects)
    return HubRun(f"hf://datasets/{REPO}/d", LocalDir(tmp_path / "d"), layout)


def test_checkpoint_commits_are_gathered(options: HubOptions, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    r = _run(options, tmp_path)
    monkeypatch.setattr(run, "COMMIT_SECONDS", 3600.0)
    m = HubMirror(r.layout, tmp_path, None, "me")
    try:
        assert m.wants_checkpoint(0, force=True)  # a stop, the first one: always
        assert not m.wants_checkpoint(run.COMMIT_FILES - 1, force=False)
        assert m.wants_checkpoint(1, force=False)  # COMMIT_FILES files wait
        assert not m.wants_checkpoint(1, force=False)
        monkeypatch.setattr(run, "COMMIT_SECONDS", 0.0)
        assert m.wants_checkpoint(1, force=False)  # the interval passed
        assert not m.wants_checkpoint(0, force=False)  # nothing new: no commit
    finally:
        m.close()


def test_the_parts_of_a_dataset_share_its_commit_rate(options: HubOptions, tmp_path: Path
                                                      ) -> None:
    """The N parts of one dataset commit to one repository: each waits N intervals, so
    together they commit no more often than the dataset alone would."""
    assert run.commit_interval("d") == run.COMMIT_SECONDS
    assert run.commit_interval("x/d.parts/2-of-4") == 4 * run.COMMIT_SECONDS
    assert run.commit_interval("x/d/2-of-4") == run.COMMIT_SECONDS  # a folder so named
    objects = HubObjects(REPO, "main", writer=True, token=TOKEN, options=options)
    part = BucketLayout(BucketPath("hf", f"datasets/{REPO}", "d.parts/0-of-3"), objects)
    m = HubMirror(part, tmp_path, None, "me")
    try:
        assert m.wants_checkpoint(0, force=True)
        m._asked_at = time.monotonic() - 2.5 * run.COMMIT_SECONDS  # the last commit, then
        assert not m.wants_checkpoint(1, force=False)  # 2.5 intervals: not yet for 1 of 3
        m._asked_at -= 0.5 * run.COMMIT_SECONDS
        assert m.wants_checkpoint(0, force=False)
    finally:
        m.close()


def test_the_source_card_is_read_at_the_pinned_commit(hub: FakeHub, options: HubOptions,
                                                     tmp_path: Path) -> None:
    sha = hub.commit("dataset", "acme/corpus", {"README.md": b"---\nlicense: mit\n---\n# c\n"},
                     git_files=("README.md",))
    hub.commit("dataset", "acme/corpus", {"README.md": b"---\nlicense: gpl-3.0\n---\n"})
    manifest = _manifest()
    manifest = type(manifest)(**{**manifest.__dict__, "source": type(manifest.source)(
        **{**manifest.source.__dict__, "revision": sha})})
    card = _run(options, tmp_path).source_card(manifest)
    assert card.values("license") == ["mit"]  # the commit read, not the branch today
