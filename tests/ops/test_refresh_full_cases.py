"""``--refresh`` of datasets an incremental refresh cannot continue: one published by a
prep before manifest v3 (a real one, ``tests/fixtures/v2_dataset``), one merged from
``--part`` runs (it records no single prefix digest), and ``--refresh`` of one part (refused).
Each still verifies, and a refresh rebuilds it in full, says why, and ends byte-identical to
a from-scratch build."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import FIXTURES, numbered_docs
from harness import World, build, dir_bytes, make_world, ops_corpus, provenance, tree, write_plain

V2 = FIXTURES / "v2_dataset"
V2_RECIPE = ("--tokenizer", "byte", "--max-file-tokens", "400", "--val-fraction", "0.2",
             "--dataset", "v2fixture")


def test_a_v2_dataset_verifies_and_refreshes_in_full(cli, tmp_path: Path) -> None:
    source = Path(shutil.copytree(V2 / "source", tmp_path / "source"))
    out = Path(shutil.copytree(V2 / "dataset", tmp_path / "out"))
    old_tree = tree(out)
    r = cli("verify", out)
    assert r.code == 0, r.err
    write_plain(source / "part-00003.parquet", numbered_docs(20, start=60))

    r = cli("prepare", "--source", source, "--out", out, *V2_RECIPE, "--refresh")

    assert r.code == 0, r.err
    reason = "the published manifest is v2, whose prefix digest cannot be continued (v4 and v5 can)"
    assert f"full rebuild: {reason}" in r.err, r.err
    scratch = tmp_path / "scratch"
    r = cli("prepare", "--source", source, "--out", scratch, *V2_RECIPE, "--quiet")
    assert r.code == 0, r.err
    assert dir_bytes(out) == dir_bytes(scratch)
    assert tree(out.with_name("out.previous")) == old_tree
    note = provenance(out)["refresh"]
    assert (note["incremental"], note["fallback"]) == (False, reason)
    assert (note["read_files"], note["read_rows"]) == (4, 80)


def _merged(cli, w: World, out: Path) -> None:  # type: ignore[no-untyped-def]
    for i in range(2):
        r = cli("prepare", *w.args(out, "--part", f"{i}/2"))
        assert r.code == 0, r.err
    r = cli("merge", out)
    assert r.code == 0, r.err


def test_a_merged_dataset_refreshes_in_full(cli, tmp_path: Path) -> None:
    w = make_world(tmp_path, ops_corpus(4, 100))
    out = tmp_path / "out"
    _merged(cli, w, out)
    old_tree = tree(out)
    write_plain(w.source / "part-00004.parquet", numbered_docs(100, start=400))

    r = cli("prepare", *w.args(out, "--refresh"))

    assert r.code == 0, r.err
    reason = "the published dataset has no prefix digest (merged from parts)"
    assert f"full rebuild: {reason}" in r.err, r.err
    assert dir_bytes(out) == build(w, tmp_path / "scratch")
    assert tree(out.with_name("out.previous")) == old_tree
    assert provenance(out)["refresh"]["fallback"] == reason


def test_refresh_of_one_part_is_refused(cli, tmp_path: Path) -> None:
    w = make_world(tmp_path, ops_corpus(4, 100))
    out = tmp_path / "out"
    _merged(cli, w, out)
    before = {p: tree(p) for p in tmp_path.iterdir() if p.name.startswith("out")}
    write_plain(w.source / "part-00004.parquet", numbered_docs(100, start=400))

    r = cli("prepare", *w.args(out, "--refresh", "--part", "0/2"))

    assert r.code == 2, r.err
    assert "--refresh does not apply to one part; refresh the merged dataset" in r.err
    assert "Traceback" not in r.err
    assert {p: tree(p) for p in tmp_path.iterdir() if p.name.startswith("out")} == before
