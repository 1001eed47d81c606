"""Fixtures for the Hub tests: a loopback Hub (fakehub.py) per test, the corpus on it, and
the same corpus prepared from a local directory as the reference."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from prep.hub.calls import HubOptions

from .fakehub import FakeHub
from .helpers import COMMON, CORPUS, DATASET, EXTRAS, GIT_FILE, prepare, write_local
from .publish import local_reference


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as server:
        yield server


@pytest.fixture
def corpus_commit(hub: FakeHub) -> str:
    """``acme/corpus`` with CORPUS (one file in git, the others LFS) on ``main``."""
    return hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,))


@pytest.fixture
def options(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubOptions:
    """In-process: the loopback Hub, a fresh cache, three tries without waiting."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return HubOptions(endpoint=hub.url, cache_dir=tmp_path / "hf-cache", attempts=3, base_delay=0.0)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CORPUS read from a local directory: what every Hub run of it must reproduce."""
    root = tmp_path_factory.mktemp("reference")
    src = write_local(root / "src", {**CORPUS, **EXTRAS})
    out = root / "out"
    r = prepare(["--source", src, "--out", out, *COMMON])
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="session")
def sample_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample prepared into a local directory as the Hub publishes it (tests/hub/publish.py's
    arguments): the bytes every publish of it must hold."""
    return local_reference(tmp_path_factory.mktemp("sample-reference"))
