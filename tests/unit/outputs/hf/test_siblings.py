"""Which moves of a branch a part builds on: the changes between two commits, found folder by
folder along the folders' ids, over a listing made from whole trees (each folder's id the
hash of the files below it, as git's tree id behaves)."""

from __future__ import annotations

import hashlib

import pytest

from prep.outputs.hf.siblings import Listing, Siblings

Tree = dict[str, bytes]


def _listing(commits: dict[str, Tree], asked: list[tuple[str, str]]) -> Listing:
    def listing(commit: str, folder: str) -> dict[str, str]:
        asked.append((commit, folder))
        head = f"{folder}/" if folder else ""
        out: dict[str, str] = {}
        for path in commits[commit]:
            if not path.startswith(head):
                continue
            first = head + path[len(head):].split("/")[0]
            below = sorted(p for p in commits[commit] if p == first or p.startswith(first + "/"))
            out[first] = hashlib.sha1(b"".join(
                p.encode() + commits[commit][p] for p in below)).hexdigest()
        return out

    return listing


BASE: Tree = {".gitattributes": b"*", "m.parts/0-of-2.incomplete/cp": b"1",
              "m.parts/1-of-2.incomplete/cp": b"1", "other/x": b"x"}


@pytest.mark.parametrize(("change", "foreign"), [
    ({"m.parts/1-of-2.incomplete/cp": b"2"}, None),  # a sibling's checkpoint
    ({"m.parts/1-of-2/train-00000.bin": b"t"}, None),  # a sibling's shard
    ({"m.parts/.shared-fs-check": b"token"}, None),  # the driver's check file
    ({"m.parts/0-of-2.incomplete/cp": b"2"}, "m.parts/0-of-2.incomplete"),  # its own
    ({"m.parts/0-of-2/_MANIFEST.json": b"{}"}, "m.parts/0-of-2"),
    ({"m/_MANIFEST.json": b"{}"}, "m"),  # the merged dataset
    ({"NOTES.md": b"n"}, "NOTES.md"),  # anything else
    ({"m.parts/notes.txt": b"n"}, "m.parts/notes.txt"),
])
def test_only_a_sibling_parts_changes_are_built_on(change: Tree, foreign: str | None) -> None:
    part = Siblings("m.parts", "0-of-2")
    assert Siblings.of("m.parts/0-of-2") == part
    asked: list[tuple[str, str]] = []
    commits = {"a": BASE, "b": {**BASE, **change}}
    assert part.foreign_change(_listing(commits, asked), "a", "b") == foreign


def test_unchanged_folders_are_not_listed_and_a_root_dataset_has_parts_too() -> None:
    asked: list[tuple[str, str]] = []
    commits = {"a": BASE, "b": {**BASE, ".parts/1-of-2.incomplete/cp": b"1"}}
    part = Siblings.of(".parts/0-of-2")
    assert part is not None
    assert part.foreign_change(_listing(commits, asked), "a", "b") is None
    assert {f for _, f in asked} == {"", ".parts"}  # not other/, not m.parts/
    other = Siblings("m.parts", "0-of-2")  # a dataset at m: the root's parts are not its
    assert other.foreign_change(_listing(commits, asked), "a", "b") == ".parts"


@pytest.mark.parametrize("path", ["", "m", "m.parts", "m.parts/x", "a/m.parts/0-of-2/x"])
def test_a_dataset_that_is_no_part_has_no_siblings(path: str) -> None:
    assert Siblings.of(path) is None
