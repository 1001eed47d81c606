"""The rooms of docs/architecture.md, checked against the code: which room may import which
(counting imports inside functions), no import cycle between modules, and the size limits.
The table here is the document's table; change both together."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

BASE = {"errors"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "partition": set(),
    "recipe": {"partition"},
    "fsio": set(),
    "globs": set(),
    "split": set(),
    "readahead": set(),
    "threadcpu": set(),
    "progress": set(),
    "argtypes": set(),
    "launch": {"startup"},
    "arena": set(),
    "cores": set(),
    "copyout": {"arena", "fsio", "launch"},
    "workers": {"arena", "copyout", "cores", "launch", "readahead"},
    "redact": set(),
    "options": {"argtypes"},
    "startup": set(),
    "console": {"progress", "state"},
    "state": {"fsio", "recipe", "split"},
    "hub": {"fsio", "globs"},
    "buckets": {"globs"},
    "sources": {"buckets", "fsio", "globs", "hub", "state"},
    "encoders": {"fsio", "hub", "state"},
    "formats": {"fsio", "state"},
    "hashchain": set(),
    "stream": {"hashchain", "partition", "recipe", "sources", "split"},
    "writer": {"formats", "split", "state"},
    "outputs": {"buckets", "formats", "fsio", "partition", "state"},
    "run": {
        "copyout", "encoders", "formats", "fsio", "outputs", "partition", "progress", "readahead",
        "recipe", "sources", "split", "state", "stream", "threadcpu", "workers", "writer",
    },
    "refresh": {"encoders", "outputs", "recipe", "sources", "state"},
    "verify": {"formats", "outputs", "split", "state"},
    "inspector": {"formats", "fsio", "outputs", "state"},
    "tokenstream": {"formats", "fsio", "outputs", "state"},
    "merge": {"formats", "fsio", "outputs", "partition", "state", "verify"},
    "executors": {"merge", "outputs", "partition"},
    "pipeline": {
        "formats", "fsio", "outputs", "progress", "recipe", "refresh", "run",
        "sources", "state", "verify",
    },
    "api": {
        "argtypes", "encoders", "outputs", "partition", "pipeline", "progress", "recipe",
        "redact", "sources", "state",
    },
    "cli": {
        "", "api", "argtypes", "console", "encoders", "executors", "formats", "inspector",
        "merge", "options", "outputs", "partition", "pipeline", "progress", "recipe", "redact",
        "startup", "state", "tokenizer", "verify",
    },
    "tokenizer": {
        "", "api", "encoders", "formats", "fsio", "options", "outputs", "progress", "recipe",
        "sources", "state",
    },
    "__main__": {"cli", "startup"},
    "": {"api", "formats", "recipe", "state", "tokenizer", "tokenstream"},  # the public API
}  # fmt: skip


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted((SRC / "prep").rglob("*.py")):
        rel = p.relative_to(SRC).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p
    return out


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


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def resolve(name: str, mods: dict[str, Path]) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def test_every_room_is_in_the_table() -> None:
    assert {room(m) for m in modules()} == set(ALLOWED)


@pytest.mark.parametrize("module", sorted(modules()))
def test_imports_stay_inside_the_allowed_rooms(module: str) -> None:
    mods = modules()
    mine = room(module)
    used = {room(t) for n in imports(mods[module]) if (t := resolve(n, mods))}
    extra = used - ALLOWED[mine] - BASE - {mine}
    assert not extra, f"{module} imports rooms {sorted(extra)} that {mine!r} may not"


def test_hub_knows_nothing_of_sources_or_encoders() -> None:
    assert not ALLOWED["hub"] & {"sources", "encoders"}


def test_no_import_cycle_between_modules() -> None:
    mods = modules()
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
    for m, p in modules().items():
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
