"""A bucket output's resume command: ``--staging`` only when the run staged elsewhere than
a resume looks by default, and then with the reason (no option the user never typed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.outputs.bucket.output import BucketOutput

URI = "s3://bkt/runs/ds"


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_default_staging_is_not_suggested(cache: Path) -> None:
    default = cache / "prep/staging/s3/bkt/runs"
    for out in (BucketOutput.parse(URI), BucketOutput.parse(URI, default)):
        assert out.staging == default / "ds.incomplete"
        assert out.resume_args() == ["--out", URI]
        assert out.resume_why() == ""


def test_a_staging_elsewhere_is_suggested_with_why(tmp_path: Path, cache: Path) -> None:
    out = BucketOutput.parse(URI, tmp_path / "scratch")
    assert out.resume_args() == ["--out", URI, "--staging", str(tmp_path / "scratch")]
    assert out.resume_why() == (f"--staging: this run stages in {tmp_path / 'scratch'}, not "
                                f"in the default {cache / 'prep/staging/s3/bkt/runs'}")
