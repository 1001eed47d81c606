"""A Hub repository as a writer or a reader sees it: a missing repository refused unless
``--create-repo``, a missing branch created, a token without write access refused with how to
fix it (and never shown), a reader pinned to the commit it first resolved."""

from __future__ import annotations

import pytest
from hub.fakehub import FakeHub
from huggingface_hub import CommitOperationAdd

from prep.errors import InputError, OutputError
from prep.hub.calls import HubOptions
from prep.outputs.hf.commits import Committing
from prep.outputs.hf.repo import HubRepo

from .conftest import REPO, TOKEN


def test_a_missing_repository_is_refused_with_how_to_create_it(hub: FakeHub,
                                                               options: HubOptions) -> None:
    w = HubRepo(REPO, "main", writer=True, token=TOKEN, options=options)
    assert w.head() is None and w.exists is False
    with pytest.raises(OutputError) as e:
        w.ensure_repo(create=False)
    msg = str(e.value)
    assert "--out hf://datasets/acme/tokens: the Hub has no dataset repository" in msg
    assert "--create-repo" in msg and "nothing was written" in msg
    assert ("dataset", REPO) not in hub.repos


def test_create_repo_and_a_missing_branch(hub: FakeHub, options: HubOptions) -> None:
    HubRepo(REPO, "main", writer=True, token=TOKEN, options=options).ensure_repo(create=True)
    assert set(hub.head_files(REPO)) == {".gitattributes"}
    w = HubRepo(REPO, "v2", writer=True, token=TOKEN, options=options)
    w.ensure_repo(create=False)
    assert w.parent == hub.repos[("dataset", REPO)].refs["v2"] == hub.history(REPO)[-1]


def test_a_token_without_write_access_is_refused_clearly(hub: FakeHub, options: HubOptions,
                                                         repo: str) -> None:
    hub.repos[("dataset", REPO)].writers = {"hf_" + "z" * 34}
    w = Committing(REPO, "main", writer=True, token=TOKEN, options=options)
    with pytest.raises(OutputError) as e:
        w.commit([CommitOperationAdd("x.json", b"{}")], "prep: x")
    msg = str(e.value)
    assert "refused to let this token write to hf://datasets/acme/tokens (HTTP 403)" in msg
    assert "write access" in msg and "HF_TOKEN" in msg
    assert TOKEN not in msg


def test_a_private_repository_read_without_a_token(hub: FakeHub, options: HubOptions) -> None:
    hub.commit("dataset", REPO, {"a": b"1"}, token="hf_" + "p" * 34)
    r = HubRepo(REPO, "main", writer=False, token=None, options=options)
    with pytest.raises(InputError) as e:
        r.at()
    msg = str(e.value)
    assert "hf://datasets/acme/tokens@main: the Hub has no dataset repository acme/tokens" in msg
    assert "if it is private or gated, pass a token with --token or set HF_TOKEN" in msg


def test_a_reader_stays_at_the_commit_it_resolved(hub: FakeHub, options: HubOptions,
                                                  repo: str) -> None:
    r = HubRepo(REPO, "main", writer=False, token=None, options=options)
    first = r.at()
    hub.commit("dataset", REPO, {"b": b"2"})
    assert r.at() == first != hub.repos[("dataset", REPO)].refs["main"]
