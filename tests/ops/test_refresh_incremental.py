"""Incremental ``--refresh``: a corpus that grew at its end is continued, not rebuilt, and
ends byte-identical to a from-scratch build; any other change is a full rebuild that says
why (in the log and in ``_PROVENANCE.json``) and ends byte-identical too."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import bpe_tokenizer, numbered_docs
from harness import (
    World,
    build,
    dir_bytes,
    edit_same_size,
    leftovers,
    make_world,
    manifest,
    needs_strace,
    opened_under,
    ops_corpus,
    provenance,
    run_opening,
    tree,
    write_plain,
)

from prep.formats import mmidx

N_FILES, PER_FILE = 11, 200
# Small shards, so both splits have sealed shards to link and a last shard to extend.
EXTRA = ("--max-file-tokens", "2000", "--val-fraction", "0.1")


@pytest.fixture(scope="module")
def eleven(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("eleven"), ops_corpus(N_FILES, PER_FILE))


@pytest.fixture
def w(eleven: World, tmp_path: Path) -> World:
    return eleven.copy(tmp_path)


def append_file(w: World, name: str = "part-00011.parquet", n: int = PER_FILE) -> Path:
    return write_plain(w.source / name, numbered_docs(n, start=w.corpus.n_docs))


def from_scratch(w: World, *extra: object) -> dict[str, bytes]:
    """A from-scratch build of the current inputs, beside the dataset under test."""
    return build(w, w.root / "scratch" / "out", *EXTRA, *extra)


def refresh(cli, w: World, out: Path, *extra: object) -> Any:
    r = cli("prepare", *w.args(out, "--refresh", *EXTRA, *extra))
    assert r.code == 0, r.err
    return r


@needs_strace
def test_appended_file_is_continued_byte_identical_to_a_full_build(cli, w: World) -> None:
    out = w.root / "out"
    old = build(w, out, *EXTRA)
    old_tree = tree(out)
    m_old = manifest(out)
    assert m_old["version"] == "v5"
    assert all(t["n_files"] >= 2 for t in m_old["totals"].values()), m_old["totals"]
    append_file(w)

    (code, err), opened = run_opening(w.args(out, "--refresh", *EXTRA), w.root / "a.strace")

    assert code == 0, err
    assert "refreshing incrementally: reusing 11 of 12 source files" in err, err
    # Only the new file is read: the published ones are trusted by their fingerprints.
    assert opened_under(w.source, opened) == ["part-00011.parquet"]
    assert dir_bytes(out) == from_scratch(w)
    previous = out.with_name("out.previous")
    assert tree(previous) == old_tree and dir_bytes(previous) == old
    # Sealed shards are the old files themselves (hard links); the old last shards are not.
    for f in m_old["files"]:
        same = (out / f["name"]).stat().st_ino == (previous / f["name"]).stat().st_ino
        last = f["name"] == max(g["name"] for g in m_old["files"] if g["split"] == f["split"])
        assert same is not last, f["name"]
    note = provenance(out)["refresh"]
    assert note["incremental"] is True and note["fallback"] is None
    assert (note["reused_files"], note["read_files"]) == (11, 1)
    assert (note["reused_rows"], note["read_rows"]) == (N_FILES * PER_FILE, PER_FILE)
    assert note["reused_shards"] == sum(t["n_files"] - 1 for t in m_old["totals"].values())
    assert note["seconds_saved_estimate"] > 0
    assert note["changes"] == ["part-00011.parquet: added"]
    assert leftovers(out) == set()
    r = cli("verify", out)
    assert r.code == 0, r.err

    # The next night: another file, continued from the continued version.
    append_file(w, "part-00012.parquet", 50)
    r = refresh(cli, w, out)
    assert "reusing 12 of 13 source files" in r.err, r.err
    assert dir_bytes(out) == build(w, w.root / "scratch2" / "out", *EXTRA)


def _v4_manifest(w: World, out: Path) -> str:
    """A dataset published by a prep before v5: no fingerprint to trust."""
    path = out / "_MANIFEST.json"
    m = json.loads(path.read_text())
    m["version"] = "v4"
    for f in m["source"]["files"]:
        del f["fingerprint"]
    path.write_text(json.dumps(m, indent=2, ensure_ascii=False) + "\n")
    return ""


def _files_replaced_by_copies(w: World, out: Path) -> str:
    """Every published file replaced by a copy of itself, as a restore from a backup does:
    the same bytes and mtimes, new inodes and ctimes."""
    for p in sorted(w.source.glob("*.parquet")):
        shutil.copy2(p, p.with_suffix(".copy"))
        os.replace(p.with_suffix(".copy"), p)
    return "11 source files read again and found unchanged (its fingerprint moved"


@needs_strace
@pytest.mark.parametrize("case", ["v4 manifest", "files replaced by copies"])
def test_published_files_not_vouched_for_are_read_then_continued(w: World, case: str) -> None:
    out = w.root / "out"
    build(w, out, *EXTRA)
    said = {"v4 manifest": _v4_manifest, "files replaced by copies": _files_replaced_by_copies
            }[case](w, out)
    append_file(w)

    (code, err), opened = run_opening(w.args(out, "--refresh", *EXTRA), w.root / "a.strace")

    assert code == 0, err
    assert said in err
    assert "refreshing incrementally: reusing 11 of 12 source files" in err, err
    assert opened_under(w.source, opened) == [f"part-{i:05d}.parquet" for i in range(12)]
    # The new version records the files' fingerprints as they are now (the same manifest as
    # a build from scratch of the same files in place), so the next refresh reads nothing.
    assert dir_bytes(out) == from_scratch(w)
    (code, err), opened = run_opening(w.args(out, "--refresh", *EXTRA), w.root / "b.strace")
    assert code == 0, err
    assert "is up to date" in err
    assert opened_under(w.source, opened) == []


def _changed_file(w: World, out: Path) -> str:
    edit_same_size(w, 4)
    return "part-00004.parquet changed (its SHA-256 differs)"


def _removed_file(w: World, out: Path) -> str:
    w.path(6).unlink()
    return "part-00006.parquet was removed"


def _inserted_file(w: World, out: Path) -> str:
    write_plain(w.source / "part-00003a.parquet", numbered_docs(30, start=90_000))
    return "part-00003a.parquet was inserted before the end of the published files"


def _grown_file(w: World, out: Path) -> str:
    write_plain(w.path(10), [*w.files[10], "one more row at the end of the last file"])
    return "part-00010.parquet changed (size"


def _new_tokenizer(w: World, out: Path) -> str:
    shutil.rmtree(w.tokenizer)
    bpe_tokenizer(w.tokenizer, numbered_docs(800, start=5000), vocab_size=280)
    return "the tokenizer or recipe changed (tokenizer.json changed"


def _v2_manifest(w: World, out: Path) -> str:
    # A dataset published before v3: its prefix digest was one running SHA-256.
    path = out / "_MANIFEST.json"
    path.write_text(path.read_text().replace('"version": "v5"', '"version": "v2"', 1))
    return "the published manifest is v2, whose prefix digest cannot be continued"


def _v3_manifest(w: World, out: Path) -> str:
    # A dataset published before v4: its chain linked each row's bytes, not their digest.
    path = out / "_MANIFEST.json"
    path.write_text(path.read_text().replace('"version": "v5"', '"version": "v3"', 1))
    return "the published manifest is v3, whose prefix digest cannot be continued (v4 and v5 can)"


def _package_version(w: World, out: Path) -> str:
    path = out / "_PROVENANCE.json"
    prov = json.loads(path.read_text())
    prov["packages"]["numpy"] = "0.0.1"
    path.write_text(json.dumps(prov))
    return "package versions that decide the output changed (numpy 0.0.1 -> "


def _damaged_shard(w: World, out: Path) -> str:
    victim = out / "train-00001.bin"  # sealed: it would be reused
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    return "a published shard cannot be reused"


FALLBACKS: dict[str, Callable[[World, Path], str]] = {
    "file changed": _changed_file,
    "file removed": _removed_file,
    "file inserted before the end": _inserted_file,
    "last file grew": _grown_file,
    "new tokenizer": _new_tokenizer,
    "v2 manifest": _v2_manifest,
    "v3 manifest": _v3_manifest,
    "output package version": _package_version,
    "damaged published shard": _damaged_shard,
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_fallback_is_a_full_rebuild_that_says_why(cli, w: World, case: str) -> None:
    out = w.root / "out"
    build(w, out, *EXTRA)
    reason = FALLBACKS[case](w, out)
    old_tree = tree(out)
    append_file(w)

    r = refresh(cli, w, out)

    assert f"full rebuild: {reason}" in r.err, r.err
    assert "refreshing incrementally" not in r.err
    assert dir_bytes(out) == from_scratch(w)
    assert tree(out.with_name("out.previous")) == old_tree
    note = provenance(out)["refresh"]
    assert note["incremental"] is False and reason in note["fallback"]
    assert note["reused_rows"] == 0 and note["read_rows"] == manifest(out)["source"]["rows_visited"]


RECIPES = {
    "recipe changed": ((), ("--max-file-tokens", "3000"),
                       "the tokenizer or recipe changed (recipe max_file_tokens: 2000 -> 3000"),
    "file shuffle": (("--shuffle-files",), ("--shuffle-files",), "--shuffle-files or"),
    "document shuffle": (("--shuffle-buffer", "50"), ("--shuffle-buffer", "50"), "--shuffle-"),
    "document budget reached": (("--max-documents", "1000"), ("--max-documents", "1000"),
                                "--max-documents stopped the published run"),
    "token budget reached": (("--train-tokens", "20000"), ("--train-tokens", "20000"),
                             "--train-tokens stopped the published run"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RECIPES))
def test_recipe_fallbacks_are_full_rebuilds(cli, w: World, case: str) -> None:
    before, after, reason = RECIPES[case]
    out = w.root / "out"
    build(w, out, *EXTRA, *before)
    append_file(w)

    r = cli("prepare", *w.args(out, "--refresh", *EXTRA, *after))

    assert r.code == 0, r.err
    assert f"full rebuild: {reason}" in r.err, r.err
    assert dir_bytes(out) == from_scratch(w, *after)
    assert provenance(out)["refresh"]["incremental"] is False


@pytest.mark.parametrize(("budget", "value"), [("--max-documents", 50_000),
                                               ("--train-tokens", 10**9)])
def test_a_budget_never_reached_is_continued(cli, w: World, budget: str, value: int) -> None:
    out = w.root / "out"
    build(w, out, *EXTRA, budget, value)
    append_file(w)
    r = cli("prepare", *w.args(out, "--refresh", *EXTRA, budget, value))
    assert r.code == 0, r.err
    assert "refreshing incrementally" in r.err, r.err
    assert dir_bytes(out) == from_scratch(w, budget, value)


def test_budget_reached_inside_the_new_file_is_continued(cli, w: World) -> None:
    out = w.root / "out"
    limit = N_FILES * PER_FILE + 17  # the stream stops 17 rows into the new file
    build(w, out, *EXTRA, "--max-documents", limit)
    append_file(w)
    r = cli("prepare", *w.args(out, "--refresh", *EXTRA, "--max-documents", limit))
    assert r.code == 0, r.err
    assert "refreshing incrementally" in r.err, r.err
    assert manifest(out)["source"]["rows_visited"] == limit
    assert dir_bytes(out) == from_scratch(w, "--max-documents", limit)


def test_old_last_shard_is_copied_not_linked(cli, w: World) -> None:
    # Extending the old last shard in place would change DIR.previous: the copy is private.
    out = w.root / "out"
    build(w, out, *EXTRA)
    last = max(f["name"] for f in manifest(out)["files"] if f["split"] == "train")
    before = (out / last).read_bytes()
    append_file(w)
    refresh(cli, w, out)
    assert (out.with_name("out.previous") / last).read_bytes() == before
    assert os.stat(out / last).st_ino != os.stat(out.with_name("out.previous") / last).st_ino
    assert (out / last).read_bytes() != before  # it was extended


def test_a_v2_dataset_still_verifies(cli, w: World) -> None:
    out = w.root / "out"
    build(w, out, *EXTRA)
    _v2_manifest(w, out)
    r = cli("verify", out)
    assert r.code == 0, r.err
    r = cli("inspect", out)
    assert r.code == 0, r.err


@pytest.mark.parametrize("fmt", ["datatrove", "megatron", "llmc-llama3", "npy", "olmo", "raw"])
def test_every_format_is_continued_byte_identical(cli, w: World, fmt: str) -> None:
    # The last shard is reopened through the format (Megatron's .idx gives its documents).
    out = w.root / "out"
    build(w, out, *EXTRA, "--format", fmt)
    old_tree = tree(out)
    append_file(w)
    r = refresh(cli, w, out, "--format", fmt)
    assert "refreshing incrementally" in r.err, r.err
    assert tree(out.with_name("out.previous")) == old_tree  # companions linked, not written
    scratch = w.root / "scratch" / "out"
    assert dir_bytes(out) == from_scratch(w, "--format", fmt)
    mine, theirs = tree(out), tree(scratch)  # companions (.idx) too, and split folders
    assert {n: v for n, v in mine.items() if n != "_PROVENANCE.json"} == {
        n: v for n, v in theirs.items() if n != "_PROVENANCE.json"}  # provenance differs


def _move_a_token_between_documents(idx: Path) -> None:
    """Rewrite a Megatron ``.idx`` consistently (pointers follow lengths, same totals) with
    one id moved from its last document to the one before: only its SHA-256 tells."""
    raw = idx.read_bytes()
    parsed = mmidx.parse(raw)
    lengths = [int(n) for n in parsed.lengths]
    assert len(lengths) >= 2 and mmidx.pack(lengths, parsed.dtype.name) == raw
    lengths[-2], lengths[-1] = lengths[-2] + 1, lengths[-1] - 1
    idx.write_bytes(mmidx.pack(lengths, parsed.dtype.name))


@pytest.mark.parametrize("which", ["sealed", "last"])
def test_a_tampered_companion_is_not_reused(cli, w: World, which: str) -> None:
    # A sealed shard's .idx is hard-linked and the last one's copied: each is checked
    # against the manifest's SHA-256 like the .bin, or the new version would carry it.
    out = w.root / "out"
    build(w, out, *EXTRA, "--format", "megatron")
    train = sorted(f["name"] for f in manifest(out)["files"] if f["split"] == "train")
    shard = train[0] if which == "sealed" else train[-1]
    idx = out / shard.replace(".bin", ".idx")
    _move_a_token_between_documents(idx)
    old_tree = tree(out)
    append_file(w)

    r = refresh(cli, w, out, "--format", "megatron")

    assert f"full rebuild: a published shard cannot be reused: {idx}: SHA-256" in r.err, r.err
    assert dir_bytes(out) == from_scratch(w, "--format", "megatron")
    assert tree(out.with_name("out.previous")) == old_tree
    assert provenance(out)["refresh"]["incremental"] is False
