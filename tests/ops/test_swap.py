"""Guarantee 8: a refresh SIGKILLed anywhere in its swap leaves ``DIR`` holding the old or the
new complete version, and the next ``--refresh`` finishes the swap forward: ``DIR`` new,
``DIR.previous`` the old, no journal, and never the old version swapped back in."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import dir_bytes
from harness import (
    World,
    build,
    edit_same_size,
    grow_file,
    leftovers,
    no_traceback,
    provenance,
    spawn,
    tree,
)


def kill(target: str, when: str = "after", **more: Any) -> dict[str, Any]:
    return {"target": target, "action": "kill", "when": when, **more}


# name: (hooks, an older DIR.previous exists, state after the kill: DIR, DIR.incomplete,
# DIR.previous, journal present)
CASES: dict[str, tuple[list[dict[str, Any]], bool, tuple[str, str, str, bool]]] = {
    "while writing the journal": (
        [kill("prep.fsio.os.replace", "before", arg_contains="swap.json")],
        False, ("old", "new", "missing", False)),
    "journal written, before the exchange": (
        [kill("prep.outputs.local.exchange", "before")],
        False, ("old", "new", "missing", True)),
    "right after the exchange": (
        [kill("prep.outputs.local.exchange")],
        False, ("new", "old", "missing", True)),
    "older DIR.previous deleted, old version not yet moved": (
        [kill("prep.outputs.local.rename_noreplace", "before")],
        True, ("new", "old", "missing", True)),
    "old version moved aside, journal not yet removed": (
        [kill("prep.outputs.local.LocalDir._retire")],
        False, ("new", "missing", "old", True)),
    "no exchange: between the two renames": (
        [{"target": "prep.outputs.local.exchange", "action": "return", "value": False},
         kill("prep.outputs.local.rename_noreplace")],
        False, ("missing", "new", "old", True)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sigkill_during_the_swap_then_refresh_finishes_it_forward(
    cli, small_world: World, tmp_path: Path, case: str
) -> None:
    hooks, older_previous, after_kill = CASES[case]
    w = small_world.copy(tmp_path)
    out = w.root / "out"
    build(w, out)
    if older_previous:
        edit_same_size(w, 0)
        r = cli("prepare", *w.args(out, "--refresh"))
        assert r.code == 0, r.err
        assert out.with_name("out.previous").is_dir()
    old = tree(out)
    size = (w.source / "part-00002.parquet").stat().st_size
    grown = grow_file(w, 2).stat().st_size
    new = build(w, w.root / "ref")

    def holds(d: Path) -> str:
        if not d.exists():
            return "missing"
        if tree(d) == old:
            return "old"
        return "new" if dir_bytes(d) == new else "something else"

    staging, previous = out.with_name("out.incomplete"), out.with_name("out.previous")
    journal = out.with_name("out.swap.json")
    code, err = spawn(w.args(out, "--refresh"), tmp_path / "killed.log", hooks).finish()
    assert code == -signal.SIGKILL, err
    assert (holds(out), holds(staging), holds(previous), journal.exists()) == after_kill

    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    no_traceback(r.err)
    assert dir_bytes(out) == new, "DIR does not hold the new version"
    assert tree(previous) == old, "DIR.previous does not hold the old version"
    assert not journal.exists()
    assert not staging.exists()
    assert provenance(out)["refresh"]["changes"] == [
        f"part-00002.parquet: size {size:,} -> {grown:,} bytes"
    ]
    stray = {n for n in leftovers(out) if not n.startswith(".out.swap.json.")}
    assert stray == set()

    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    assert "is up to date" in r.err
    assert dir_bytes(out) == new
    assert tree(previous) == old
