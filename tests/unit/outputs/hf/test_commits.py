"""Commits to a Hub repository: split within the Hub's recommended commit size, named on their
parent (another writer's commit meanwhile is refused, never interleaved), and a retried commit
whose answer was lost taken as done (fakehub.py's commit endpoint and its LOST fault)."""

from __future__ import annotations

import pytest
from hub.fakehub import LOST, FakeHub
from huggingface_hub import CommitOperationAdd

from prep.errors import OutputError
from prep.hub.calls import HubOptions
from prep.outputs.hf import commits
from prep.outputs.hf.commits import Committing, _chunks
from prep.outputs.hf.siblings import Siblings

from .conftest import REPO, TOKEN


def _writer(options: HubOptions) -> Committing:
    return Committing(REPO, "main", writer=True, token=TOKEN, options=options)


def _add(name: str, size: int = 1) -> CommitOperationAdd:
    return CommitOperationAdd(name, b"x" * size)


def test_chunks_keep_every_commit_within_the_file_and_byte_limits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commits, "COMMIT_FILES", 3)
    monkeypatch.setattr(commits, "COMMIT_BYTES", 10)
    ops = [_add(f"f{i}", 4) for i in range(7)]
    chunks = _chunks(list(ops), extra=2)
    # 4-byte files, at most 10 bytes and 3 files a commit: two of them fit, a third would not.
    assert [[op.path_in_repo for op in c] for c in chunks] == [
        ["f0", "f1"], ["f2", "f3"], ["f4", "f5"]]
    # the rest (f6) and the 2 extra files make the last commit: 3 files
    assert sum(map(len, chunks)) == 6


def test_pending_files_go_up_in_several_commits_the_given_one_last(
        hub: FakeHub, options: HubOptions, repo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commits, "COMMIT_FILES", 4)
    w = _writer(options)
    for i in range(9):
        w.add(_add(f"d/{i}.txt"))
    w.commit([CommitOperationAdd("d/_MANIFEST.json", b"{}")], "prep: publish",
             marker=("d/_MANIFEST.json", b"{}"))
    history = hub.history(REPO)
    sizes = [len(hub.repos[("dataset", REPO)].commits[c]) for c in history]
    assert sizes == [1, 5, 9, 11]  # .gitattributes, then +4, +4, and the rest with the manifest
    assert [c for c in history if "d/_MANIFEST.json" in hub.repos[("dataset", REPO)].commits[c]
            ] == history[-1:]
    assert w.commits == history[1:]


def test_a_commit_on_a_moved_branch_is_refused_and_its_files_kept_pending(
        hub: FakeHub, options: HubOptions, repo: str) -> None:
    w = _writer(options)
    w.at()  # the branch head, seen: the parent of the first commit
    moved = hub.commit("dataset", REPO, {".gitattributes": b"*\n", "other.txt": b"theirs"})
    w.add(_add("mine.txt"))
    with pytest.raises(OutputError) as e:
        w.commit([CommitOperationAdd("ck.json", b"1")], "prep: ck", marker=("ck.json", b"1"))
    msg = str(e.value)
    assert f"its head is {moved[:12]}" in msg and "another writer committed" in msg
    assert "--resume" in msg
    assert hub.head_files(REPO)["other.txt"] == b"theirs"  # nothing overwritten
    assert w.pending_names() == {"mine.txt"}  # the next commit (after a resume) takes it


def test_a_lost_answer_is_retried_and_recognised_as_done(hub: FakeHub, options: HubOptions,
                                                         repo: str) -> None:
    w = _writer(options)
    hub.fail("/commit/", LOST, times=1)
    w.commit([CommitOperationAdd("ck.json", b"seq 1")], "prep: ck", marker=("ck.json", b"seq 1"))
    history = hub.history(REPO)
    assert len(history) == 2 and w.commits == history[1:]  # one commit, not two
    assert len(hub.requests("POST", "/commit/")) == 2  # the lost one and its retry


def test_a_parts_commit_after_a_siblings_is_made_again_on_the_head(
        hub: FakeHub, options: HubOptions, repo: str) -> None:
    """Sibling part 1 commits between part 0's reads of the branch: part 0's commit (HTTP
    412) is made again on the head, keeping the sibling's files; a change of its own folder
    then stops it as any other writer's does."""
    w = Committing(REPO, "main", writer=True, token=TOKEN, options=options,
                   siblings=Siblings.of("m.parts/0-of-2"))
    w.commit([CommitOperationAdd("m.parts/0-of-2.incomplete/ck.json", b"1")], "prep: ck")
    theirs = {"m.parts/1-of-2.incomplete/ck.json": b"theirs"}
    sibling = hub.commit("dataset", REPO, {**hub.head_files(REPO), **theirs})
    w.commit([CommitOperationAdd("m.parts/0-of-2.incomplete/ck.json", b"2")], "prep: ck")
    head = hub.head_files(REPO)
    assert head["m.parts/0-of-2.incomplete/ck.json"] == b"2"
    assert head["m.parts/1-of-2.incomplete/ck.json"] == b"theirs"
    assert hub.history(REPO)[-2:] == [sibling, w.commits[-1]]

    hub.commit("dataset", REPO, {**head, "m.parts/0-of-2.incomplete/ck.json": b"forged"})
    with pytest.raises(OutputError, match=r"\(m.parts/0-of-2.incomplete changed, which no "):
        w.commit([CommitOperationAdd("m.parts/0-of-2.incomplete/ck.json", b"3")], "prep: ck")
    assert hub.head_files(REPO)["m.parts/0-of-2.incomplete/ck.json"] == b"forged"
