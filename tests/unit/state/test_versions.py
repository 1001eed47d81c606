"""``prep.state.versions.installed_version``, which reads the versions a run records without
importing ``importlib.metadata``: its answers are ``importlib.metadata``'s, for every
installed distribution and for the layouts where a directory name alone would mislead."""

from __future__ import annotations

import sys
import zipfile
from importlib.metadata import distributions, version
from pathlib import Path

import pytest

from prep.state.versions import installed_version


def dist_info(root: Path, dirname: str, name: str, version: str, meta: str = "METADATA") -> None:
    d = root / dirname
    d.mkdir(parents=True)
    (d / meta).write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n")


def test_every_installed_distribution() -> None:
    names = {d.metadata["Name"] for d in distributions()}
    assert {"numpy", "pyarrow", "tokenizers", "gigatoken", "filelock"} <= names
    assert {n: installed_version(n) for n in names} == {n: version(n) for n in names}
    assert installed_version("no-such-distribution-here") is None


AHEAD = {"egg-info first": "0.0.1", "zip first": "0.0.2", "egg first": "0.0.3",
         "version not in the name": "1.0-1", "name spelled otherwise": "0.0.5"}


@pytest.mark.parametrize("layout", list(AHEAD))
def test_layouts_ahead_of_the_installed_one(layout: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Something named numpy ahead of the real one on ``sys.path``: the answer is still
    ``importlib.metadata``'s (which reads it), never the installed numpy's."""
    ahead = tmp_path / "ahead"
    ahead.mkdir()
    entry = str(ahead)
    if layout == "egg-info first":
        dist_info(ahead, "numpy-0.0.1-py3.11.egg-info", "numpy", "0.0.1", meta="PKG-INFO")
    elif layout == "zip first":
        entry = str(tmp_path / "bundle.zip")
        with zipfile.ZipFile(entry, "w") as z:
            z.writestr("numpy-0.0.2.dist-info/METADATA",
                       "Metadata-Version: 2.1\nName: numpy\nVersion: 0.0.2\n")
    elif layout == "egg first":
        entry = str(tmp_path / "numpy-0.0.3.egg")
        dist_info(Path(entry), "EGG-INFO", "numpy", "0.0.3", meta="PKG-INFO")
    elif layout == "version not in the name":
        dist_info(ahead, "numpy-1.0_1.dist-info", "numpy", "1.0-1")
    else:
        dist_info(ahead, "NumPy-0.0.5.dist-info", "NumPy", "0.0.5")
    monkeypatch.setattr(sys, "path", [entry, *sys.path])
    assert version("numpy") == AHEAD[layout]  # the premise: importlib reads that one
    assert installed_version("numpy") == AHEAD[layout]
