"""``tests/unit/`` mirrors ``src/prep/``: every module with logic (a function or a class)
has a test module of its own at the mirrored path, ``src/prep/a/b.py`` at
``tests/unit/a/test_b.py`` (a package's ``__init__.py`` at ``tests/unit/a/test_a.py``,
``prep/__init__.py`` at ``test_prep.py`` in tests/unit), and every test module there mirrors a
module, so a renamed module takes its tests with it.

:data:`MISSING` is the gap today, listed so that it shows and can only shrink: a module
added without tests fails here, and so does a listed module that has gained its test
module (take it off the list) or is gone."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "prep"
UNIT = ROOT / "tests" / "unit"

# Modules with logic and no unit test module yet (most are covered, through other modules,
# by tests/e2e, tests/ops, tests/faults, tests/hub or tests/s3, which run whole commands).
# Take a module off when it gains tests/unit/<path>/test_<name>.py; never add one.
MISSING = frozenset({
    "__init__.py", "__main__.py", "api.py",
    "buckets/copies.py", "buckets/objects.py",
    "cli/commands.py", "cli/train.py",
    "encoders/engine.py", "encoders/hf.py", "encoders/vocab_bytes.py",
    "executors/local.py", "executors/ray_tasks.py",
    "formats/idfile.py",
    "hub/calls.py", "hub/files.py", "hub/offline.py",
    "merge/__init__.py",
    "outputs/__init__.py", "outputs/local.py", "outputs/mount.py", "outputs/bucket/layout.py",
    "outputs/bucket/mirror.py", "outputs/bucket/run.py", "outputs/bucket/store.py",
    "procs/launch.py",
    "readers/inspector.py", "readers/verify.py",
    "run/committed.py", "run/freshness.py", "run/increment.py", "run/inputs.py", "run/loop.py",
    "run/start.py", "run/work/tasks.py",
    "sources/__init__.py", "sources/base.py", "sources/bucket.py", "sources/hub.py",
    "sources/parquet.py",
    "tokenizer/bpe.py", "tokenizer/training.py",
})

# Test modules in tests/unit that test the repository, not one module of src/prep.
NOT_A_MODULE = frozenset({"test_architecture.py", "test_benchmarks_import.py",
                          "test_tests_mirror_src.py", "test_docs_links.py",
                          "test_exit_table.py", "test_docs_words.py"})


def mirrored(module: Path) -> Path:
    """Where ``module`` (a path under src/prep) has its unit tests."""
    rel = module.relative_to(SRC)
    dirs, name = rel.parts[:-1], rel.stem
    if name == "__init__":
        name = dirs[-1] if dirs else "prep"
    return UNIT.joinpath(*dirs, f"test_{name.strip('_')}.py")


def has_logic(module: Path) -> bool:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               for n in ast.walk(tree))


def modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_mirrored_path_of_a_module() -> None:
    assert mirrored(SRC / "formats" / "llmc.py") == UNIT / "formats" / "test_llmc.py"
    assert mirrored(SRC / "merge" / "__init__.py") == UNIT / "merge" / "test_merge.py"
    assert mirrored(SRC / "__init__.py") == UNIT / "test_prep.py"
    assert mirrored(SRC / "__main__.py") == UNIT / "test_main.py"
    assert mirrored(SRC / "run" / "work" / "cuts.py") == UNIT / "run" / "work" / "test_cuts.py"


def test_every_module_with_logic_has_its_mirrored_test_module() -> None:
    lacking = sorted(str(m.relative_to(SRC)) for m in modules()
                     if has_logic(m) and not mirrored(m).exists()
                     and str(m.relative_to(SRC)) not in MISSING)
    assert not lacking, (f"no unit test module for {lacking}: add tests/unit/<path>/test_<name>.py "
                         "beside the others (MISSING only shrinks)")


def test_the_missing_list_only_names_modules_still_without_tests() -> None:
    by_name = {str(m.relative_to(SRC)): m for m in modules()}
    gone = sorted(name for name in MISSING if name not in by_name)
    assert not gone, f"MISSING names modules that are gone: {gone}; take them off"
    tested = sorted(name for name in MISSING if mirrored(by_name[name]).exists())
    assert not tested, f"MISSING names modules that have their test module now: {tested}"
    no_logic = sorted(name for name in MISSING if not has_logic(by_name[name]))
    assert not no_logic, f"MISSING names modules without logic: {no_logic}"


def test_every_unit_test_module_mirrors_a_module() -> None:
    expected = {mirrored(m) for m in modules()}
    stray = sorted(str(t.relative_to(UNIT)) for t in UNIT.rglob("test_*.py")
                   if t not in expected and str(t.relative_to(UNIT)) not in NOT_A_MODULE)
    assert not stray, (f"{stray} mirror no module of src/prep: move each to the path of the "
                       "module it tests (git mv), or list it in NOT_A_MODULE")
