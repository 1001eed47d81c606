"""What a manifest records about partitioned runs (``prep.state.parts``), with the keys
docs/format.md "Partitioned runs" names: a part's ``index``, ``count`` and
``listing_sha256``; a merged part's name, manifest digest, range of ``source.files``,
counts, prefix digest and file map."""

from __future__ import annotations

import json

from prep.state.parts import MergedPart, PartOf

SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64


def test_a_part_records_its_place_under_the_documented_keys() -> None:
    part = PartOf(index=1, count=3, listing_sha256=SHA_A)
    assert part.to_json() == {"index": 1, "count": 3, "listing_sha256": SHA_A}
    assert PartOf.from_json(json.loads(json.dumps(part.to_json()))) == part


def test_a_merged_part_records_the_documented_keys() -> None:
    merged = MergedPart(name="2-of-3", manifest_sha256=SHA_B, first_source_file=1,
                        n_source_files=2, rows_visited=1000, empty_rows_skipped=7,
                        prefix_sha256=SHA_C,
                        files={"train-00000.bin": "train-00001.bin",
                               "train-00000.idx": "train-00001.idx"})
    d = json.loads(json.dumps(merged.to_json()))
    assert d == {"name": "2-of-3", "manifest_sha256": SHA_B, "first_source_file": 1,
                 "n_source_files": 2, "rows_visited": 1000, "empty_rows_skipped": 7,
                 "prefix_sha256": SHA_C,
                 "files": {"train-00000.bin": "train-00001.bin",
                           "train-00000.idx": "train-00001.idx"}}
    assert MergedPart.from_json(d) == merged


def test_a_part_without_a_prefix_digest_and_the_file_map_copied() -> None:
    files = {"val-00000.bin": "val-00003.bin"}
    merged = MergedPart("1-of-1", SHA_A, 0, 1, 0, 0, None, files)
    d = merged.to_json()
    assert d["prefix_sha256"] is None
    d["files"]["val-00000.bin"] = "changed"
    assert merged.files == {"val-00000.bin": "val-00003.bin"}  # to_json hands out a copy
    assert MergedPart.from_json(merged.to_json()).prefix_sha256 is None
