"""The loopback Hub (tests/hub/fakehub.py) for the Hub output's unit tests, reached in this
process through ``HubOptions(endpoint=...)``, with Xet off (the server speaks plain LFS)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub.fakehub import FakeHub
from huggingface_hub import constants

from prep.hub.calls import HubOptions

REPO = "acme/tokens"
TOKEN = "hf_" + "u" * 34


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with FakeHub() as server:
        yield server


@pytest.fixture
def options(hub: FakeHub, tmp_path: Path) -> HubOptions:
    return HubOptions(endpoint=hub.url, cache_dir=tmp_path / "hf-cache", attempts=3,
                      base_delay=0.0)


@pytest.fixture
def repo(hub: FakeHub) -> str:
    """``acme/tokens`` as the Hub creates it: one commit holding ``.gitattributes``."""
    hub.commit("dataset", REPO, {".gitattributes": b"*.bin filter=lfs\n"},
               git_files=(".gitattributes",))
    return REPO
