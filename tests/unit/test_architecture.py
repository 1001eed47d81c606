"""docs/architecture.md's room table, read from the document and held against the code: every
room and module is in the table and every one in the table exists, each room imports only
the rooms its row lists (imports inside functions count), every room a row lists stands
above it in the table (nothing imports upward), no import cycle between modules, and the
size limits. Change the table and the code together."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"
TABLE_HEADING = "## The rooms and what each may import"
BASE = {"errors"}  # every room may raise prep's errors
TOP_LEVEL_LIMIT = 12


@dataclass(frozen=True)
class Row:
    room: str  # "run" for `run/`, "errors" for `errors.py`, "__init__" for the package's own
    modules: frozenset[str]  # "resume.restore" for `resume/restore`, "resume" for `resume/`
    allowed: frozenset[str]
    position: int


def parse_table(text: str) -> dict[str, Row]:
    """The rows of the room table: `` `name/` `` or `` `name.py` ``, its modules, and the
    rooms it may import (backticked names, or —)."""
    if TABLE_HEADING not in text:
        raise AssertionError(f"docs/architecture.md has no {TABLE_HEADING!r} section")
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    rows: dict[str, Row] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or not cells[0].startswith("`"):
            continue
        named = re.fullmatch(r"`([A-Za-z0-9_]+)(/|\.py)`", cells[0])
        if named is None:
            raise AssertionError(f"room cell {cells[0]!r} is neither `name/` nor `name.py`")
        name, kind = named.groups()
        modules = frozenset(
            m.rstrip("/").replace("/", ".") for m in re.findall(r"`([^`]+)`", cells[1])
        )
        if kind == ".py" and modules:
            raise AssertionError(f"{name}.py is a module: it lists no modules of its own")
        if name in rows:
            raise AssertionError(f"room {name} has two rows")
        allowed = frozenset(re.findall(r"`([A-Za-z0-9_]+)`", cells[3]))
        rows[name] = Row(name, modules, allowed, len(rows))
    return rows


def code_modules() -> dict[str, Path]:
    """``prep.run.resume.restore`` -> its file, for every module of the package."""
    out = {}
    for p in sorted((SRC / "prep").rglob("*.py")):
        rel = p.relative_to(SRC).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p
    return out


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def in_room(module: str) -> str | None:
    """A module's name inside its package room (``resume.restore``, or ``resume`` for the
    subpackage's ``__init__``); None for a room's own ``__init__`` or a top-level module."""
    parts = module.split(".")[2:]
    return ".".join(parts) if parts else None


def imports(path: Path) -> set[str]:
    """Every ``prep`` module named by an import anywhere in the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found.update(n for n in names if n == "prep" or n.startswith("prep."))
    return found


def resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def room_violations(rows: dict[str, Row], mods: dict[str, Path]) -> list[str]:
    """Every way the code and the table disagree, one line each."""
    found = []
    code_rooms: dict[str, set[str]] = {}
    for m in mods:
        inner = code_rooms.setdefault(room(m), set())
        if (name := in_room(m)) is not None:
            inner.add(name)
    for name in sorted(set(code_rooms) - set(rows)):
        found.append(f"room {name} is in the code but not in the table")
    for name in sorted(set(rows) - set(code_rooms)):
        found.append(f"room {name} is in the table but not in the code")
    for name in sorted(set(rows) & set(code_rooms)):
        for m in sorted(code_rooms[name] - rows[name].modules):
            found.append(f"module {name}.{m} is in the code but not in the table")
        for m in sorted(rows[name].modules - code_rooms[name]):
            found.append(f"module {name}.{m} is in the table but not in the code")
    for row in rows.values():
        for other in sorted(row.allowed):
            if other not in rows:
                found.append(f"{row.room} may import {other}, which has no row")
            elif rows[other].position >= row.position:
                found.append(f"{row.room} may import {other}, which stands below it")
    for m, p in mods.items():
        mine = room(m)
        if mine not in rows:
            continue
        used = {room(t) for n in imports(p) if (t := resolve(n, mods))}
        for other in sorted(used - rows[mine].allowed - BASE - {mine}):
            found.append(f"{m} imports room {other}, which {mine}'s row does not allow")
    return found


def test_the_table_and_the_code_agree() -> None:
    problems = room_violations(parse_table(DOC.read_text()), code_modules())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("| `globs.py` |", "| `globz.py` |", "room globs is in the code"),
        ("`arena`, `copiers`", "`copiers`", "module procs.arena is in the code"),
        ("`chain/`, `order`", "`chain/`, `flow`, `order`", "stream.flow is in the table"),
        ("| `fsio`, `hub`, `state` |", "| `hub`, `state` |", "imports room fsio"),
        ("| `partition` |", "| `partition`, `run` |", "recipe may import run, which stands below"),
    ],
)
def test_a_changed_table_fails(old: str, new: str, expected: str) -> None:
    """The check is not vacuous: each edit of the document is caught, by name."""
    text = DOC.read_text()
    assert old in text, "the mutation no longer applies to the document"
    problems = room_violations(parse_table(text.replace(old, new, 1)), code_modules())
    assert any(expected in p for p in problems), problems


def test_a_changed_import_fails(tmp_path: Path) -> None:
    """An import the table does not allow, added to a copy of a module, is caught."""
    mods = code_modules()
    bad = tmp_path / "split.py"
    bad.write_text(mods["prep.split"].read_text() + "\nfrom prep.run import lifecycle\n")
    problems = room_violations(parse_table(DOC.read_text()), {**mods, "prep.split": bad})
    assert "prep.split imports room run, which split's row does not allow" in problems


def test_no_import_cycle_between_modules() -> None:
    mods = code_modules()
    graph = {
        m: {
            t
            for n in imports(p)
            if (t := resolve(n, mods)) and t != m and mods[t].name != "__init__.py"
        }
        for m, p in mods.items()
    }
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycle = [*path[path.index(t) :], t] if t in path else [m, t]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


def test_size_limits() -> None:
    too_big = []
    for m, p in code_modules().items():
        text = p.read_text()
        if len(text.splitlines()) > 400:
            too_big.append(f"module {m}")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                limit = 200 if isinstance(node, ast.ClassDef) else 80
                if length > limit:
                    too_big.append(f"{m}.{node.name}: {length} lines > {limit}")
    assert not too_big, too_big


def test_few_modules_at_the_top() -> None:
    top = [p.stem for p in (SRC / "prep").glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert len(top) <= TOP_LEVEL_LIMIT, sorted(top)
