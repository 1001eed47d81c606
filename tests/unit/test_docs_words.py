"""docs/ is written for users: no commit hash (the git log keeps the history) and no word
about the machines' other users (figures say which machine, not who else was on it)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
# A commit hash as the acceptance's grep sees it: 7 to 40 hex digits holding a letter and a
# digit (a number such as the magic 20240520, or the word "abababab", is no hash).
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
OTHERS = re.compile(r"occupants?|neighbou?rs?|tenants?|shared machines?|other engineers|"
                    r"other agents|other users on the machine|other work beside", re.I)


def hashes(text: str) -> list[str]:
    return [m for m in HEX.findall(text) if re.search(r"[a-f]", m) and re.search(r"\d", m)]


def test_the_checks_find_what_they_look_for() -> None:
    assert hashes("fixed in 1fa6fd9, magic 20240520, abababab") == ["1fa6fd9"]
    assert OTHERS.search("load from a noisy neighbour")


def test_no_commit_hash_and_no_word_about_other_users_in_docs() -> None:
    for doc in sorted(DOCS.rglob("*.md")):
        text = doc.read_text(encoding="utf-8")
        assert not hashes(text), f"{doc.name}: commit hashes {hashes(text)}"
        said = OTHERS.search(text)
        assert said is None, f"{doc.name}: {said[0]!r} (about the machines' other users)"
