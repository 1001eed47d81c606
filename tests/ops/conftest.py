"""Fixtures shared by the operations tests."""

from __future__ import annotations

import pytest
from harness import World, make_world, ops_corpus


@pytest.fixture(scope="session")
def small_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    """4 files x 300 documents: quick builds for the refresh and swap tests."""
    return make_world(tmp_path_factory.mktemp("small"), ops_corpus(4, 300))
