"""Code from the project's Markdown documents, so tests run what the documents show."""

from __future__ import annotations

import re
from pathlib import Path


def code_block(document: Path, heading: str, language: str) -> str:
    """The first fenced ``language`` block of the section under the heading ``heading``
    (before the next heading of the same or a higher level)."""
    text = document.read_text(encoding="utf-8")
    m = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.M)
    assert m, f"{document}: no heading {heading!r}"
    section = text[m.end():]
    block = re.search(rf"^```{re.escape(language)}\n(.*?)^```$", section, re.M | re.S)
    assert block, f"{document}: no ```{language} block under {heading!r}"
    later = re.search(rf"^#{{1,{len(m[1])}}} ", section[:block.start()], re.M)
    assert later is None, f"{document}: no ```{language} block in section {heading!r}"
    return block[1]
