"""No pointer to a file or module the repository lacks: every Markdown file and every
docstring in ``src/prep`` and ``tests`` is scanned for repository paths (``docs/x.md``,
``src/prep/....py``, ``tests/....py``, ``spec/...``, ...) and for ``prep.x.y`` names, and the
Markdown files' backticked room names (``run.committed.RunState``) too; each one that does
not resolve is reported with its file and line."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "prep"

# A path inside the repository, from one of its top-level folders (or the old `spec/`).
_PATH = re.compile(
    r"(?<![\w./-])((?:docs|src/prep|tests|spec|benchmarks|scripts|examples)/[\w./-]*)"
)
# What ends a path worth checking: a folder's slash or a file's extension (not a dotted
# Python name such as `tests/golden_corpus.golden_texts`, nor a placeholder `src/NAME`).
_FILE = re.compile(r"(/|\.(?:md|py|pyi|c|h|sh|json|toml|txt|ya?ml|parquet|cfg|ini))$")
# A path that stands for any (`benchmarks/X.py`, `docs/x.md`, `src/prep/....py`).
_PLACEHOLDER = re.compile(r"(^|/)(\w|\.\.\.?)(\.\w+)?(/|$)")
# A relative link in Markdown: `[text](operations.md#a-section)`.
_LINK = re.compile(r"\]\((?![a-z]+:)([^)#\s]+)")
# A dotted name under the package, as code and docstrings spell it.
_DOTTED = re.compile(r"(?<![\w.])prep(?:\.\w+)+")
# A backticked dotted name whose first part may be a room (`outputs.resolve_output`).
_TICKED = re.compile(r"`([a-z_]\w*(?:\.\w+)+)")
# A Markdown file named bare (`manifest.md step 2`): some file of the repository must have
# that name.
_BARE = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
# A Sphinx role with a name relative to the docstring's package (`:mod:`.model``).
_RELATIVE = re.compile(r":\w+:`~?(\.[\w.]+)`")
_NOT_NAMES = (".py", ".md", ".json", ".c", ".so", ".txt", ".bin", ".idx", ".sh", ".toml")


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return sorted({*(ROOT / p for p in listed), *ROOT.glob("*.md"), *ROOT.glob("docs/*.md")})


@functools.cache
def _markdown_names() -> frozenset[str]:
    return frozenset(p.name for p in markdown_files())


def docstrings(path: Path) -> list[tuple[int, str]]:
    """Each docstring of the module ``path`` with the line it starts on."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                value = body[0].value.value
                if isinstance(value, str):
                    found.append((body[0].lineno, value))
    return found


def _module_file(parts: list[str]) -> Path | None:
    base = PACKAGE.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _defines(path: Path, name: str) -> bool:
    """Whether the module ``path`` binds ``name`` at its top level (a def, a class, an
    assignment, an import, or a name it loads on first use from a table of strings)."""
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and any(
                    (a.asname or a.name) == name for a in inner.names
                ):
                    return True
    return False


def _member(path: Path, cls: str, name: str) -> bool | None:
    """Whether class ``cls`` of ``path`` has ``name``: a method, a class attribute or field,
    or an attribute its methods set on ``self``. None when that cannot be told here:
    ``cls`` is no class of ``path``, or it has bases that may define ``name``."""
    for node in _tree(path).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    members.add(item.name)
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    members |= {t.id for t in targets if isinstance(t, ast.Name)}
            members |= {
                n.attr for n in ast.walk(node)
                if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name) and n.value.id == "self"
            }
            if name in members:
                return True
            bases = {ast.unparse(b) for b in node.bases} - {"Protocol", "object"}
            return None if bases else False
    return None


def module_name_problem(dotted: str) -> str | None:
    """Why ``prep.a.b.c`` names nothing, or None: the longest prefix that is a module of
    the package must exist, and the next part must be defined in it (and, for a class, the
    part after that a member of it)."""
    parts = dotted.split(".")[1:]
    for cut in range(len(parts), -1, -1):
        path = _module_file(parts[:cut])
        if path is not None:
            break
    rest = parts[cut:]
    module = ".".join(["prep", *parts[:cut]])
    if not rest:
        return None
    if not _defines(path, rest[0]):
        return f"no module {module}.{rest[0]}, and {module} defines no {rest[0]!r}"
    if len(rest) > 1 and _member(path, rest[0], rest[1]) is False:
        return f"{module}.{rest[0]} has no member {rest[1]!r}"
    return None


@functools.cache
def _rooms() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py")} | {
        p.parent.name for p in PACKAGE.glob("*/__init__.py")
    }


def path_problem(reference: str, base: Path) -> str | None:
    """Why ``reference`` (relative to ``base``) names nothing in the repository, or None."""
    target = reference.rstrip(".")
    if not _FILE.search(target) or _PLACEHOLDER.search(target) or (base / target).exists():
        return None
    return f"{target} does not exist"


def problems_in(text: str, source: Path, first_line: int, ticked: bool) -> list[str]:
    out = []
    rooms = _rooms()
    for offset, line in enumerate(text.splitlines()):
        where = f"{source.relative_to(ROOT)}:{first_line + offset}"
        for m in _PATH.finditer(line):
            why = path_problem(m[1], ROOT)
            if why:
                out.append(f"{where}: {why}")
        for m in _BARE.finditer(line):
            if m[1] not in _markdown_names():
                out.append(f"{where}: {m[1]} is no Markdown file of the repository")
        for m in _LINK.finditer(line) if ticked else ():
            if not (source.parent / m[1]).exists():
                out.append(f"{where}: {m[1]} does not exist")
        names = [m[0] for m in _DOTTED.finditer(line)]
        if source.is_relative_to(PACKAGE):
            package = ".".join(source.relative_to(SRC).parent.parts)
            names += [package + m[1] for m in _RELATIVE.finditer(line)]
        if ticked:
            names += [
                f"prep.{m[1]}" for m in _TICKED.finditer(line)
                if m[1].split(".")[0] in rooms and not m[1].endswith(_NOT_NAMES)
            ]
        for name in names:
            why = module_name_problem(name.rstrip("."))
            if why:
                out.append(f"{where}: {name}: {why}")
    return out


def dangling() -> list[str]:
    out = []
    for md in markdown_files():
        out += problems_in(md.read_text(encoding="utf-8"), md, 1, ticked=True)
    for py in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "tests").rglob("*.py")]):
        if py == Path(__file__).resolve():
            continue  # its examples dangle on purpose
        for line, doc in docstrings(py):
            out += problems_in(doc, py, line, ticked=False)
    return out


def test_no_reference_dangles() -> None:
    found = dangling()
    assert not found, "references to what the repository lacks:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see `spec/stream.md`", "spec/stream.md does not exist"),
        ("in docs/nowhere.md", "docs/nowhere.md does not exist"),
        ("as design.md says", "design.md is no Markdown file of the repository"),
        ("tests/unit/test_nothing.py holds it", "tests/unit/test_nothing.py does not exist"),
        ("`prep.run.state.RunState`", "no module prep.run.state"),
        ("`run.committed.Nothing`", "prep.run.committed defines no 'Nothing'"),
        ("`run.committed.RunState.nothing`", "RunState has no member 'nothing'"),
    ],
)
def test_a_dangling_reference_is_reported_with_its_line(text: str, expected: str) -> None:
    md = ROOT / "docs" / "architecture.md"
    found = problems_in(f"fine\n{text}\n", md, 1, ticked=True)
    assert len(found) == 1 and found[0].startswith("docs/architecture.md:2: ")
    assert expected in found[0]


def test_what_exists_is_not_reported() -> None:
    md = ROOT / "README.md"
    text = (
        "docs/format.md, src/prep/run/committed.py, `prep.state.changes.trusted`,"
        " `run.committed.RunState.checkpoint`, `prep.TokenStream`, `outputs.resolve_output`"
    )
    assert problems_in(text, md, 1, ticked=True) == []
