"""The lifecycle (prep.run.lifecycle): what it refuses before it looks at anything, and in
which order. A refusal that the options alone decide comes before any look at the output,
so it needs no connection, no credentials and leaves no lock file."""

from __future__ import annotations

from pathlib import Path

import pytest

import prep
from prep.errors import OutputError


def test_refresh_of_a_bucket_is_refused_before_the_bucket_is_reached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Nothing listens on loopback port 9: a look at the bucket would fail as unreachable
    (or retry); the refusal comes from the options first."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(OutputError, match=r"^--refresh of s3://bucket/data/ds: a bucket has "
                       r"no rename"):
        prep.prepare(out="s3://bucket/data/ds", source="sample", tokenizer="byte",
                     refresh=True)
    assert not (tmp_path / "cache").exists()  # no staging, no lock file


def test_a_directory_that_is_not_a_dataset_is_refused_before_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"exists and is not a prep dataset \(a directory "
                       r"that is not empty, no _MANIFEST.json\)"):
        prep.prepare(out=out, source="sample", tokenizer="byte")
    assert not (tmp_path / "ds.lock").exists()
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
