"""docs/operations.md's table of every exit path, held to the tests: each row names a test
that exists (file and function), and each code the README gives has a row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "operations.md"
HEADING = "### Every exit path"


def rows() -> list[tuple[str, str, str]]:
    section = DOC.read_text(encoding="utf-8").split(HEADING, 1)[1].split("\n#", 1)[0]
    found = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            found.append((cells[0], cells[1], cells[2].strip("`")))
    return found


def test_every_row_names_a_test_that_exists() -> None:
    table = rows()
    assert len(table) >= 20, table
    for code, path, test in table:
        file, _, name = test.partition("::")
        source = ROOT / file
        assert source.is_file(), f"exit {code} ({path}): no {file}"
        assert re.search(rf"^def {re.escape(name)}\(", source.read_text(encoding="utf-8"),
                         re.M), f"exit {code} ({path}): {file} has no test {name}"


def test_every_exit_code_has_rows() -> None:
    assert {code for code, _, _ in rows()} == {"0", "1", "2", "75", "130"}
