"""The format protocol's shared pieces: the shard naming every format uses and the id
checks ``verify`` runs on a published shard, against ids built here."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from prep.formats import base
from prep.formats.base import ids_problems, shard_stem, starts_at_separators, stem_pattern
from prep.state.manifest import Manifest, ManifestSource


def manifest(sep: int | None = 0, position: str = "prepend", vocab: int = 10) -> Manifest:
    source = ManifestSource("parquet", "/d", None, "text", None, (), 0, 0, None)
    return Manifest(dataset="d", tokenizer_id="t", tokenizer_sha256="a" * 64, vocab_size=vocab,
                    doc_sep_id=sep, sep_position=position, format="raw", dtype="uint16",
                    bin_version=None, max_file_tokens=100, corpus_manifest_sha256="b" * 64,
                    source=source, recipe={}, val_bytes_per_token=None, totals={}, files=())


def test_shard_names_have_five_digits() -> None:
    assert shard_stem("train", 3) == "train-00003"
    assert shard_stem("val", 123_456) == "val-123456"


@pytest.mark.parametrize(("name", "parsed"), [
    ("train-00003.bin", ("train", "00003")), ("val-99999.bin", ("val", "99999")),
    ("train-0003.bin", None), ("train-000003.bin", None), ("test-00003.bin", None),
    ("train-00003.binx", None), ("train-00003xbin", None), ("xtrain-00003.bin", None)])
def test_the_stem_pattern_matches_only_shard_names(name: str, parsed: tuple[str, str] | None
                                                   ) -> None:
    m = stem_pattern(".bin").match(name)
    assert (m.groups() if m else None) == parsed


def test_well_formed_ids_have_no_problem() -> None:
    ids = np.array([0, 5, 6, 0, 9], dtype=np.uint16)
    assert ids_problems("s.bin", ids, 2, manifest()) == []
    assert ids_problems("s.bin", np.array([5, 0, 6, 0], np.uint16), 2,
                        manifest(position="append")) == []
    assert ids_problems("s.bin", np.zeros(0, np.uint16), 0, manifest()) == []
    assert ids_problems("s.bin", np.array([3, 9], np.uint16), 5, manifest(sep=None)) == []


def test_every_problem_is_named() -> None:
    ids = np.array([5, 12, 0], dtype=np.uint16)
    assert ids_problems("s.bin", ids, 2, manifest()) == [
        "s.bin: id 12 is outside the vocabulary (10)",
        "s.bin: 1 separators for 2 documents",
        "s.bin: does not start with the separator 0",
    ]
    assert ids_problems("s.bin", np.array([0, 4], np.uint16), 1, manifest(position="append")) == [
        "s.bin: does not end with the separator 0"]


def test_ids_are_scanned_in_chunks_without_missing_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_SCAN_CHUNK", 4)
    ids = np.array([0, 1, 2, 3, 0, 1, 2, 3, 0, 11_000], dtype=np.uint16)
    assert ids_problems("s.bin", ids, 4, dataclasses.replace(manifest(), vocab_size=11_000)) == [
        "s.bin: id 11,000 is outside the vocabulary (11,000)",
        "s.bin: 3 separators for 4 documents",
    ]


def test_a_fixed_shard_is_checked_at_its_first_document() -> None:
    """--pack fixed: a shard may start inside a document (first_doc_at ids before its first
    start) and, with append, end inside one whose separator is in the next shard."""
    ids = np.array([7, 8, 0, 5, 0, 6], dtype=np.uint16)  # ends a document, two start at 2, 4
    assert ids_problems("s.bin", ids, 2, manifest(), first_doc_at=2) == []
    assert ids_problems("s.bin", ids, 2, manifest(), first_doc_at=3) == [
        "s.bin: its first document (first_doc_at 3) does not start with the separator 0"]
    tail = np.array([7, 0, 5, 0, 6], dtype=np.uint16)  # append: 7 ends one; 5 one; 6 runs on
    assert ids_problems("s.bin", tail, 2, manifest(position="append"), first_doc_at=2) == []
    assert ids_problems("s.bin", tail, 2, manifest(position="append"), first_doc_at=1) == [
        "s.bin: the document before (first_doc_at 1) does not end with the separator 0"]
    assert ids_problems("s.bin", np.array([4, 4], np.uint16), 0, manifest(),
                        first_doc_at=2) == []  # the middle of a long document


def test_documents_start_at_prepended_separators_or_after_appended_ones() -> None:
    def starts(at: list[int], n: int, append: bool, begins: bool) -> list[int]:
        return starts_at_separators(np.asarray(at, dtype=np.int64), n, append, begins).tolist()

    assert starts([0, 3], 6, False, False) == [0, 3]  # prepend: at each separator
    assert starts([2, 5], 6, True, False) == [3]  # append: after each but the file's last id
    assert starts([2, 5], 6, True, True) == [0, 3]  # and at 0 after a file that ended one
    assert starts([], 4, True, False) == []  # inside one document
