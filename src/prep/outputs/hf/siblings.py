"""Sibling parts on one branch: which moves of the branch a part's commit may be built on.

The parts of a dataset (``PATH.parts/I-of-N``, :mod:`prep.partition`) are N writers of one
branch, often at the same time (``--parts N --executor ray``, or ``--part I/N`` on several
machines). Every commit names its parent (``parent_commit``), so a part's commit after a
sibling's is refused with HTTP 412. The part then compares the branch at its parent with the
head (:func:`foreign_change`), folder by folder along the folders' ids (git's tree ids: a
folder whose id is the same holds the same files, and is not listed further). When every
change is in a sibling's entry of ``PATH.parts/`` (``J-of-M``, ``J-of-M.incomplete``, the
``--parts`` driver's check file), the part's own files are as it left them and nothing else
in the repository moved: it commits again on the head, which keeps the sibling's commit.
Any other change (in its own folders, the merged dataset, any other file) stops the part as
an unexpected commit stops every run (:func:`prep.outputs.hf.commits.conflict_error`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prep.outputs.local import SHARED_CHECK
from prep.partition import PART_DIR, part_at

# (commit, folder) -> {path: id} of the folder's entries, not recursive (an absent folder:
# empty): a file's git blob id, a folder's tree id
Listing = Callable[[str, str], dict[str, str]]

@dataclass(frozen=True)
class Siblings:
    """The part at ``root/name`` of a repository (``root``: ``PATH.parts``)."""

    root: str
    name: str

    @classmethod
    def of(cls, path: str) -> Siblings | None:
        """The part whose dataset is at ``path`` of the repository; None for a dataset that
        is no part (it shares its branch with no sibling)."""
        part = part_at(path)
        return None if part is None else cls(part[0], path.rstrip("/").rpartition("/")[2])

    def is_sibling(self, entry: str) -> bool:
        """Whether ``entry`` (a path in the repository) is another part's or the driver's."""
        head, _, name = entry.rpartition("/")
        if head != self.root or name in (self.name, f"{self.name}.incomplete"):
            return False
        return name == SHARED_CHECK or PART_DIR.fullmatch(name) is not None

    def foreign_change(self, listing: Listing, before: str, after: str) -> str | None:
        """The first path that changed from commit ``before`` to ``after`` and is no
        sibling's (see the module docstring), or None when only siblings changed."""
        parts = self.root.split("/")
        folders = ["", *("/".join(parts[:i]) for i in range(1, len(parts) + 1))]
        for folder, inside in zip(folders, [*folders[1:], None], strict=True):
            old, new = listing(before, folder), listing(after, folder)
            changed = sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))
            for path in changed:
                if inside is None:
                    if not self.is_sibling(path):
                        return path
                elif path != inside:
                    return path
            if inside is not None and inside not in changed:
                return None  # nothing below it moved, and nothing beside it did
        return None
