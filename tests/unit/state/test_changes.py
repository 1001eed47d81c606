"""What changed between two identities: each difference in one line, worded whole, and the
one rule that decides when a source file is trusted without being read."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from prep.recipe import Recipe
from prep.state import changes as c
from prep.state.identity import (
    FileIdentity,
    SourceIdentity,
    TokenizerFingerprint,
    TokenizerIdentity,
)
from prep.state.manifest import Manifest, ManifestSource

A, B = "a" * 64, "b" * 64


def manifest(**over: Any) -> Manifest:
    recipe = Recipe(source="/data", tokenizer="byte", seed=5).manifest_recipe()
    source = ManifestSource("parquet", "/data", None, "text", None, (), 10, 0, None)
    m = Manifest(dataset="ds", tokenizer_id="bytes", tokenizer_sha256=A, vocab_size=256,
                 doc_sep_id=7, sep_position="prepend", format="llmc", dtype="auto",
                 bin_version=1, max_file_tokens=100_000_000, corpus_manifest_sha256=B,
                 source=source, recipe=recipe, val_bytes_per_token=None, totals={}, files=())
    return dataclasses.replace(m, **over)


def source(*files: FileIdentity, revision: str | None = None) -> SourceIdentity:
    return SourceIdentity("parquet", "/data", "/data", "", revision, files)


def test_flag_spells_a_field_as_its_option() -> None:
    assert c.flag("max_file_tokens") == "--max-file-tokens"
    assert c.flag("seed") == "--seed"


def test_recipe_conflicts_name_each_differing_option_in_sorted_order() -> None:
    saved = Recipe(source="/data", tokenizer="byte", seed=5)
    typed = {"seed": 6, "tokenizer": "byte", "format": "raw"}
    assert c.recipe_conflicts(saved, typed) == [
        "--format: typed 'raw', the run was started with 'llmc'",
        "--seed: typed 6, the run was started with 5",
    ]
    assert c.recipe_conflicts(saved, {"seed": 5}) == []


def test_manifest_conflicts_word_the_tokenizer_by_its_sha256() -> None:
    typed = {"tokenizer": "gpt2", "seed": 5, "source": "/data"}
    assert c.manifest_conflicts(manifest(), typed, "/data", B) == [
        f"--tokenizer: typed 'gpt2', SHA-256 {B[:12]}…; the dataset was built with a "
        f"tokenizer whose SHA-256 is {A[:12]}…"]
    assert c.manifest_conflicts(manifest(), typed, "/data", A) == []


def test_manifest_conflicts_of_recipe_columns_and_separator() -> None:
    typed = {"seed": 9, "text_column": "body", "no_doc_sep": True, "source": "/other",
             "val_fraction": 0.01}
    assert c.manifest_conflicts(manifest(), typed, "/data", None) == [
        "--no-doc-sep: typed True, the dataset was built with separator 7",
        "--seed: typed 9, the dataset was built with 5",
        "--source: typed '/other', the dataset was built with '/data'",
        "--text-column: typed 'body', the dataset was built with 'text'",
    ]
    # --no-doc-sep agrees with a dataset built without a separator
    assert c.manifest_conflicts(manifest(doc_sep_id=None), {"no_doc_sep": True}, "/d", None) == []
    assert c.manifest_conflicts(manifest(), {"no_doc_sep": False}, "/d", None) == []


def test_listing_changes_name_removed_added_resized_files_and_the_revision() -> None:
    saved = source(FileIdentity("a.parquet", 10, None), FileIdentity("b.parquet", 1_000, None),
                   FileIdentity("c.parquet", 5, None), revision="r1")
    now = source(FileIdentity("b.parquet", 12_345, None), FileIdentity("c.parquet", 5, A),
                 FileIdentity("d.parquet", 1, None), revision="r2")
    assert c.listing_changes(saved, now) == [
        "a.parquet: removed",
        "b.parquet: size 1,000 -> 12,345 bytes",
        "d.parquet: added",
        "revision r1 -> r2",
    ]
    assert c.listing_changes(saved, saved) == []


@pytest.mark.parametrize(("was", "now", "same_mtime", "trusted"), [
    (FileIdentity("a", 5, A, (("etag", "x"),)), FileIdentity("a", 5, None, (("etag", "x"),)),
     False, True),
    (FileIdentity("a", 5, A, (("etag", "x"),)), FileIdentity("a", 5, None, (("etag", "y"),)),
     True, False),  # a fingerprint decides alone: the mtime is not asked
    (FileIdentity("a", 5, A, (("etag", "x"),)), FileIdentity("a", 6, None, (("etag", "x"),)),
     False, False),
    (FileIdentity("a", 5, A, (("etag", "x"),)), FileIdentity("b", 5, None, (("etag", "x"),)),
     False, False),
    (FileIdentity("a", 5, A), FileIdentity("a", 5, None), False, False),
    (FileIdentity("a", 5, A), FileIdentity("a", 5, None), True, True),
    (FileIdentity("a", 5, A), FileIdentity("a", 4, None), True, False),
])
def test_trusted(was: FileIdentity, now: FileIdentity, same_mtime: bool, trusted: bool) -> None:
    assert c.trusted(was, now, same_mtime) is trusted


def tok(sha: str = A, vocab: int = 256, sep: int | None = 0, origin: str | None = None
        ) -> TokenizerIdentity:
    return TokenizerIdentity("dir/tok", "t", sha, vocab, sep, doc_sep_from=origin)


def test_tokenizer_change_names_the_file_to_restore() -> None:
    assert c.tokenizer_change("dir/tok", tok(), tok()) is None
    assert c.tokenizer_change("dir/tok", tok(), tok(sha=B)) == (
        f"the tokenizer.json of dir/tok changed since the run started (SHA-256 {A[:12]}… is "
        f"now {B[:12]}…); restore it")
    assert c.tokenizer_change("x/tokenizer.json", tok(), tok(vocab=300)).startswith(
        "x/tokenizer.json changed since the run started")
    assert c.tokenizer_change(
        "dir/tok", tok(sep=50_256, origin="dir/tok/generation_config.json"),
        tok(sep=None, origin=None)) == (
        "the document separator changed since the run started: it was 50,256 (from "
        "dir/tok/generation_config.json), it is now none; restore "
        "dir/tok/generation_config.json")
    assert c.tokenizer_change("dir/tok", tok(sep=1, origin="--doc-sep-id"), tok(sep=2)) == (
        "the document separator changed since the run started: it was 1 (from --doc-sep-id), "
        "it is now 2; restore the config files beside dir/tok")


def test_version_changes_only_of_packages_that_change_the_output() -> None:
    saved = {"tokenizers": "0.20", "numpy": "2.0", "pyarrow": "15"}
    now = {"tokenizers": "0.21", "numpy": "2.0", "pyarrow": "16"}
    assert c.version_changes(saved, now) == ["tokenizers 0.20 -> 0.21"]
    assert c.version_changes({}, {"numpy": "2.0"}) == ["numpy None -> 2.0"]
    assert set(c.output_versions()) <= set(c.OUTPUT_PACKAGES)
    assert "numpy" in c.output_versions()


def test_recipe_changes_list_settings_columns_and_the_dataset_name() -> None:
    recipe = Recipe(source="/data", tokenizer="byte", seed=6, split_column="which",
                    text_column="body")
    assert c.recipe_changes(manifest(), recipe, "other") == [
        "recipe seed: 5 -> 6",
        "recipe split_column: None -> 'which'",
        "recipe val_fraction: 0.01 -> None",
        "text_column: 'text' -> 'body'",
        "split_column: None -> 'which'",
        "dataset name: 'ds' -> 'other'",
    ]
    assert c.recipe_changes(manifest(), Recipe(source="/x", tokenizer="t", seed=5), "ds") == []


def test_fingerprint_changes() -> None:
    assert c.fingerprint_changes(manifest(), TokenizerFingerprint("bytes", A, 7)) == []
    assert c.fingerprint_changes(manifest(), TokenizerFingerprint("gpt2", B, None)) == [
        "tokenizer.json changed", "separator 7 -> None", "tokenizer id bytes -> gpt2"]
