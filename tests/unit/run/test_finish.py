"""The finish step (``prep.run.finish``): the manifest's ``source`` block is a plain
function of the identity, the read order and the counts; finishing seals every shard,
writes provenance then the manifest, and lists each shard with the hash of its bytes on
disk (computed here with hashlib); an empty train split is refused and staging removed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from run_helpers import FMT, commit, setup, started, tree

from prep.errors import InputError
from prep.recipe import Recipe
from prep.run.finish import finish, manifest_source
from prep.run.loop import execute
from prep.run.telemetry import Measurements
from prep.state.identity import FileIdentity, SourceIdentity
from prep.state.manifest import MANIFEST_NAME, PROVENANCE_NAME, read_manifest
from prep.stream.order import Cursor


def never() -> bool:
    return False


def test_manifest_source_is_the_identity_in_read_order() -> None:
    files = (FileIdentity("a.parquet", 1, "a" * 64), FileIdentity("b.parquet", 2, "b" * 64))
    ident = SourceIdentity("parquet", "data/", "/r", "/cwd", None, files)
    cursor = Cursor()
    for text in (b"x", b"", b"yz"):
        cursor.visit(text)
    cursor.empty_rows_skipped = 1
    got = manifest_source(
        Recipe(source="data/", tokenizer="byte", split_column="s"),
        ident,
        ["b.parquet", "a.parquet"],
        cursor,
        "d" * 64,
    )
    assert got.to_json() == {
        "kind": "parquet",
        "uri": "data/",
        "revision": None,
        "text_column": "text",
        "split_column": "s",
        "files": [files[1].to_json(), files[0].to_json()],
        "rows_visited": 3,
        "empty_rows_skipped": 1,
        "prefix_sha256": "d" * 64,
    }


def test_finish_seals_and_writes_the_manifest_last(tmp_path: Path) -> None:
    s = setup(tmp_path)
    s.opts = replace(s.opts, argv=["prepare", "--x"])  # the command line, as api records it
    state, stream = started(s)
    manifest = execute(state, stream, never)
    staging = s.paths.staging
    assert (staging / MANIFEST_NAME).read_bytes() == manifest.to_bytes()
    assert read_manifest(staging) == manifest
    shards = {n: b for n, b in tree(staging).items() if FMT.owns_file(n)}
    assert {f.name for f in manifest.files} == set(shards)
    for f in manifest.files:
        assert f.sha256 == hashlib.sha256(shards[f.name]).hexdigest()
        assert FMT.describe(staging / f.name, None)[1].size == f.n_tokens  # sealed: n in header
    assert manifest.source.rows_visited == 240
    prov = json.loads((staging / PROVENANCE_NAME).read_bytes())
    assert prov["argv"] == ["prepare", "--x"] and prov["resumes"] == 0
    assert (staging / PROVENANCE_NAME).stat().st_mtime_ns <= (
        staging / MANIFEST_NAME
    ).stat().st_mtime_ns


def test_an_empty_train_split_is_refused_and_staging_removed(tmp_path: Path) -> None:
    s = setup(tmp_path, texts=["  ", "\n", "", "\t"] * 10)
    state, stream = started(s)
    commit(state, stream, 3)  # all 40 rows: empty
    state.finished = True
    state.checkpoint()
    with pytest.raises(
        InputError,
        match=r"^the train split is empty after 40 rows \(40 empty\)"
        r": nothing to publish\. Check the source, --text-column",
    ):
        finish(state, Measurements())
    assert not s.paths.staging.exists()
