"""``--refresh`` for cron: up to date without reading Parquet, rebuild and swap on any
change, ``DIR.previous`` keeps the version it replaced, readers never see ``DIR`` missing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from conftest import REPO, bpe_tokenizer, dir_bytes, numbered_docs
from harness import (
    World,
    build,
    bump_mtime,
    edit_same_size,
    gate,
    grow_file,
    leftovers,
    manifest,
    needs_strace,
    no_traceback,
    opened_under,
    provenance,
    release,
    run_opening,
    spawn,
    tree,
    wait_for,
    write_plain,
)


@pytest.fixture
def w(small_world: World, tmp_path: Path) -> World:
    return small_world.copy(tmp_path)


@pytest.fixture
def out(w: World) -> Path:
    """A published first version of ``w``."""
    out = w.root / "out"
    build(w, out)
    return out


@needs_strace
def test_up_to_date_reads_no_source_file_and_loads_no_tokenizer(w: World, out: Path,
                                                                 tmp_path: Path) -> None:
    before = tree(out)
    (code, err), opened = run_opening(w.args(out, "--refresh"), tmp_path / "a.strace")
    assert code == 0, err
    assert "is up to date" in err
    assert opened_under(w.source, opened) == []  # listed (stat) only
    library = Path(tokenizers.__file__).parent  # the tokenizers package: never imported
    assert opened_under(library, opened) == [], "the tokenizers library was loaded"
    assert str(w.tokenizer.resolve() / "tokenizer.json") in opened  # its SHA-256 is compared
    assert tree(out) == before
    assert leftovers(out) == set()

    # A file whose mtime moved is read and hashed, and still up to date; so is every file
    # with --rehash.
    bump_mtime(w.path(1))
    (code, err), opened = run_opening(w.args(out, "--refresh"), tmp_path / "b.strace")
    assert code == 0, err
    assert "is up to date" in err
    assert opened_under(w.source, opened) == ["part-00001.parquet"]
    assert "1 source file read again and found unchanged (its fingerprint moved" in err
    (code, err), opened = run_opening(w.args(out, "--refresh", "--rehash"),
                                      tmp_path / "c.strace")
    assert code == 0, err
    assert "is up to date" in err
    assert opened_under(w.source, opened) == [p.name for p in sorted(w.source.iterdir())]
    assert tree(out) == before


def test_run_options_typed_out_are_not_a_change(cli, w: World, out: Path) -> None:
    before = tree(out)
    r = cli("prepare", *w.args(out, "--refresh", "--batch-size", 7, "--threads", 1,
                               "--checkpoint-interval", 5, "--max-file-tokens", 100_000_000,
                               "--val-fraction", 0.01, "--seed", 1337, "--log-interval", 1))
    assert r.code == 0, r.err
    assert "is up to date" in r.err
    assert tree(out) == before
    r = cli("prepare", *w.args(out, "--rehash"))
    assert r.code == 2, r.err
    assert "--rehash only changes what --refresh reads" in r.err


def test_same_size_rewrite_with_its_mtime_restored_is_seen(cli, w: World, out: Path) -> None:
    """The fingerprint holds the ctime, which no user can set back: a file rewritten in
    place with its size and mtime kept is read, and its bytes decide."""
    before = tree(out)
    victim = w.path(2)
    st = victim.stat()
    # No longer Parquet, nor any kind a file's first bytes name (a random first byte could be
    # JSON Lines' '{' or gzip's 1f): same size, mtime restored.
    victim.write_bytes(b"\x00" + os.urandom(st.st_size - 1))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (victim.stat().st_size, victim.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)

    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 1, r.err
    assert "part-00002.parquet: content changed" in r.err
    assert "part-00002.parquet: not a readable Parquet file" in r.err
    assert tree(out) == before
    assert not out.with_name("out.previous").exists()


def test_changed_content_swaps_in_new_version_and_keeps_the_old(cli, w: World, out: Path
                                                                ) -> None:
    v1 = tree(out)
    v1_corpus = manifest(out)["corpus_manifest_sha256"]
    edit_same_size(w, 1)

    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    assert "part-00001.parquet: content changed" in r.err
    assert r.err.splitlines()[-1].startswith(f"published {out}: train ")
    assert tree(out.with_name("out.previous")) == v1
    assert dir_bytes(out) == build(w, w.root / "ref-v2")
    note = provenance(out)["refresh"]
    assert note["previous_corpus_manifest_sha256"] == v1_corpus
    assert note["changes"] == ["part-00001.parquet: content changed"]
    assert note["incremental"] is False
    assert note["fallback"] == "part-00001.parquet changed (its SHA-256 differs)"
    assert note["read_rows"] == manifest(out)["source"]["rows_visited"]
    assert leftovers(out) == set()

    # A second refresh replaces DIR.previous with what DIR held just before it.
    v2 = tree(out)
    edit_same_size(w, 3, doc=17)
    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    assert tree(out.with_name("out.previous")) == v2
    assert provenance(out)["refresh"]["changes"] == ["part-00003.parquet: content changed"]
    assert dir_bytes(out) == build(w, w.root / "ref-v3")

    # And the new version's recorded mtimes make the next refresh a no-op.
    v3 = tree(out)
    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    assert "is up to date" in r.err
    assert tree(out) == v3
    assert tree(out.with_name("out.previous")) == v2


def _retrain_tokenizer(w: World) -> list[str]:
    bpe_tokenizer(w.tokenizer, numbered_docs(500), vocab_size=280)
    return []


def _add_file(w: World) -> list[str]:
    write_plain(w.source / "part-00004.parquet", numbered_docs(50, start=5000))
    return []


def _remove_file(w: World) -> list[str]:
    (w.source / "part-00003.parquet").unlink()
    return []


def _grow_file(w: World) -> list[str]:
    grow_file(w, 0)
    return []


CHANGES = {
    "max-file-tokens": (lambda w: ["--max-file-tokens", "4000"],
                        "recipe max_file_tokens: 100000000 -> 4000"),
    "seed": (lambda w: ["--seed", "7"], "recipe seed: 1337 -> 7"),
    "separator": (lambda w: ["--doc-sep-id", "1"], "separator 0 -> 1"),
    "tokenizer": (_retrain_tokenizer, "tokenizer.json changed"),
    "file added": (_add_file, "part-00004.parquet: added"),
    "file removed": (_remove_file, "part-00003.parquet: removed"),
    "file resized": (_grow_file, "part-00000.parquet: size "),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_changed_recipe_tokenizer_or_file_list_rebuilds(cli, w: World, out: Path,
                                                        change: str) -> None:
    apply, expected = CHANGES[change]
    v1 = tree(out)
    extra = apply(w)

    r = cli("prepare", *w.args(out, "--refresh", *extra))
    assert r.code == 0, r.err
    assert expected in r.err, r.err
    assert any(expected in c for c in provenance(out)["refresh"]["changes"])
    assert tree(out.with_name("out.previous")) == v1
    assert dir_bytes(out) == build(w, w.root / "ref", *extra)
    assert leftovers(out) == set()


READER = r"""
import hashlib, json, os, sys
from pathlib import Path
path, stop, ready, result = sys.argv[1:5]
sequence, counts, n = [], {}, 0
while True:
    halt = os.path.exists(stop)  # read once more after the stop request
    try:
        with open(path, "rb") as f:
            state = hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        state = "missing"
    n += 1
    counts[state] = counts.get(state, 0) + 1
    if not sequence or sequence[-1] != state:
        sequence.append(state)
    if n == 200:
        Path(ready).touch()
    if halt:
        break
Path(result).write_text(json.dumps({"reads": n, "sequence": sequence, "counts": counts}))
"""


def test_reader_sees_old_or_new_manifest_never_none_during_the_swap(
    w: World, out: Path, tmp_path: Path
) -> None:
    old = hashlib.sha256((out / "_MANIFEST.json").read_bytes()).hexdigest()
    edit_same_size(w, 2)
    ready, stop, result = tmp_path / "ready", tmp_path / "stop", tmp_path / "result.json"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(out / "_MANIFEST.json"), str(stop), str(ready),
         str(result)], cwd=REPO,
    )
    try:
        refresh = None
        wait_for(ready.exists, "the reader to start reading")
        # The refresh is parked just before and just after the exchange while the reader
        # keeps reading, so it reads across both sides of the swap.
        g1, g2 = tmp_path / "g1", tmp_path / "g2"
        g1.mkdir()
        g2.mkdir()
        refresh = spawn(w.args(out, "--refresh"), tmp_path / "refresh.log", [
            gate("prep.outputs.local.exchange", g1, when="before"),
            gate("prep.outputs.local.exchange", g2, when="after"),
        ])
        wait_for((g1 / "reached").exists, "the refresh to reach the swap", refresh)
        release(g1)
        wait_for((g2 / "reached").exists, "the exchange", refresh)
        release(g2)
        code, err = refresh.finish()
        assert code == 0, err
    finally:
        stop.touch()
        reader.wait(60)
    new = hashlib.sha256((out / "_MANIFEST.json").read_bytes()).hexdigest()
    seen = json.loads(result.read_text())
    assert new != old
    assert seen["sequence"] == [old, new], seen["counts"]
    assert "missing" not in seen["counts"]


# A checkpoint after every batch on any machine (0.001 s skipped some on a fast one, and
# a gate at the Nth checkpoint then came late or never).
FAST = ["--batch-size", "64", "--checkpoint-interval", "0.000001"]


def kill_refresh_mid_build(w: World, out: Path, tmp_path: Path, nth: int) -> int:
    """Start a refresh, SIGKILL it after its ``nth`` checkpoint; DIR stays untouched
    throughout. Returns the rows its staging directory committed."""
    v1 = tree(out)
    g = tmp_path / "g1"
    g.mkdir()
    first = spawn(w.args(out, "--refresh", *FAST), tmp_path / "first.log",
                  [gate("prep.run.committed.RunState.checkpoint", g, nth=nth)])
    wait_for((g / "reached").exists, "the refresh to be mid-build", first)
    assert tree(out) == v1, "DIR changed during the refresh build"
    first.popen.send_signal(signal.SIGKILL)
    assert first.finish()[0] == -signal.SIGKILL
    assert tree(out) == v1, "DIR changed by the killed refresh"
    staging = out.with_name("out.incomplete")
    rows: int = json.loads((staging / "checkpoint.json").read_text())["progress"]["rows_visited"]
    assert rows > 0
    return rows


def test_refresh_killed_mid_build_resumes_and_old_version_stays_untouched(
    w: World, out: Path, tmp_path: Path
) -> None:
    v1 = tree(out)
    _grow_file(w)
    committed = kill_refresh_mid_build(w, out, tmp_path, nth=6)

    g = tmp_path / "g2"
    g.mkdir()
    rerun = spawn(w.args(out, "--refresh", "--resume", *FAST), tmp_path / "rerun.log",
                  [gate("prep.run.committed.RunState.checkpoint", g, nth=3)])
    wait_for((g / "reached").exists, "the rerun to be mid-build", rerun)
    assert tree(out) == v1, "DIR changed while the rerun was building"
    release(g)
    code, err = rerun.finish()
    assert code == 0, err
    no_traceback(err)
    assert "continuing the refresh" in err
    assert f"at row {committed:,}" in err, err
    assert tree(out.with_name("out.previous")) == v1
    assert dir_bytes(out) == build(w, w.root / "ref")
    prov = provenance(out)
    assert prov["resumes"] == 1
    assert [c.split(":")[0] for c in prov["refresh"]["changes"]] == ["part-00000.parquet"]
    assert leftovers(out) == set()


def interrupted_then_changed_again(cli, w: World, out: Path, tmp_path: Path) -> Any:
    """A refresh killed after it read part-00000, which then changes again (the next
    night's data): continuing it must refuse and change nothing."""
    v1 = tree(out)
    grow_file(w, 1)
    kill_refresh_mid_build(w, out, tmp_path, nth=8)  # 512 rows: past part-00000
    staging = out.with_name("out.incomplete")
    staged = tree(staging)
    edit_same_size(w, 0)
    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 1, r.err
    assert "part-00000.parquet changed since the run started" in r.err, r.err
    assert tree(out) == v1
    assert tree(staging) == staged, "staging must be left byte-for-byte intact"
    return r


def test_refresh_interrupted_then_source_changed_again_refuses_until_staging_is_dropped(
    cli, w: World, out: Path, tmp_path: Path
) -> None:
    v1 = tree(out)
    interrupted_then_changed_again(cli, w, out, tmp_path)
    shutil.rmtree(out.with_name("out.incomplete"))
    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    changes = provenance(out)["refresh"]["changes"]
    assert changes[0] == "part-00000.parquet: content changed", changes
    assert changes[1].startswith("part-00001.parquet: size "), changes
    assert len(changes) == 2, changes
    assert tree(out.with_name("out.previous")) == v1
    assert dir_bytes(out) == build(w, w.root / "ref")


def test_refresh_interrupted_then_source_changed_again_says_to_delete_staging(
    cli, w: World, out: Path, tmp_path: Path
) -> None:
    """The message must say how to fix it for *this* command: the published DIR is intact
    and the unfinished refresh in DIR.incomplete is what to delete. "start a new run (new
    --out)" would move the nightly dataset to another path."""
    r = interrupted_then_changed_again(cli, w, out, tmp_path)
    error = r.err[r.err.index("prep: error:"):]
    assert str(out.with_name("out.incomplete")) in error and "delete" in error.lower(), error


def test_refresh_of_a_missing_dir_publishes_it(cli, w: World) -> None:
    out = w.root / "out"
    r = cli("prepare", *w.args(out, "--refresh"))
    assert r.code == 0, r.err
    assert dir_bytes(out) == build(w, w.root / "ref")
    assert not out.with_name("out.previous").exists()
