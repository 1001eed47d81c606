"""``prep merge``'s plan as a pure function of part manifests built here: shards renumbered
in part order (a part's empty ``-00000`` left out), counts summed, the corpus hash and
the listing hash recomputed with hashlib from docs/format.md's canonical JSON, and the
whole message of each refusal."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest

from prep.errors import IntegrityError
from prep.formats import get_format
from prep.merge.plan import Link, PartManifest, plan_merge
from prep.recipe import Recipe
from prep.state.identity import FileIdentity
from prep.state.manifest import Manifest, ManifestFile, ManifestSource, SplitSummary
from prep.state.parts import PartOf
from prep.state.shards import Companion

SHA = "e" * 64
# sizes 100 | 100, 1, 1: the partition rule cuts two parts at the half of the bytes
FILES = (FileIdentity("a.parquet", 100, "1" * 64), FileIdentity("b.parquet", 100, "2" * 64),
         FileIdentity("c.parquet", 1, "3" * 64), FileIdentity("d.parquet", 1, "4" * 64))
CUT = ((0, 1), (1, 4))


def canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


LISTING = hashlib.sha256(canonical({"kind": "parquet", "revision": None, "files": [
    {"path": f.path, "size": f.size} for f in FILES]})).hexdigest()


def part(index: int, shards: list[ManifestFile], val: tuple[int, int, float | None] = (0, 0, None),
         count: int = 2, **over: Any) -> PartManifest:
    lo, hi = CUT[index]
    source = ManifestSource("parquet", "/data", None, "text", None, FILES[lo:hi], 10 + index,
                            index, str(index) * 64)
    train = [s for s in shards if s.split == "train"]
    m = Manifest(
        dataset="ds", tokenizer_id="bytes", tokenizer_sha256=SHA, vocab_size=256, doc_sep_id=0,
        sep_position="prepend", format="llmc", dtype="auto", bin_version=1, max_file_tokens=1000,
        corpus_manifest_sha256=SHA, source=source,
        recipe=Recipe(source="/data", tokenizer="byte").manifest_recipe(),
        val_bytes_per_token=val[2],
        totals={"train": SplitSummary(sum(s.n_tokens for s in train),
                                      sum(s.n_docs for s in train), len(train)),
                "val": SplitSummary(val[0], val[1], 1)},
        files=tuple(shards), part=PartOf(index, count, LISTING))
    return PartManifest(f"{index}-of-{count}", dataclasses.replace(m, **over), f"{index}" * 64)


def shard(name: str, n: int, docs: int = 1, companions: tuple[Companion, ...] = ()
          ) -> ManifestFile:
    sha = hashlib.sha256(name.encode()).hexdigest()
    return ManifestFile(name, name.split("-")[0], n, docs, sha, companions)


def two_parts() -> list[PartManifest]:
    p0 = part(0, [shard("train-00000.bin", 50, 2), shard("train-00001.bin", 7),
                  shard("val-00000.bin", 0, 0)])
    p1 = part(1, [shard("train-00000.bin", 30, 3), shard("val-00000.bin", 5, 1)],
              val=(5, 1, 1.25))
    return [p0, p1]


def refusal(parts: list[PartManifest]) -> str:
    with pytest.raises(IntegrityError) as e:
        plan_merge(parts, get_format("llmc"))
    return str(e.value)


def test_shards_are_renumbered_in_part_order_and_an_empty_first_shard_left_out() -> None:
    plan = plan_merge(two_parts(), get_format("llmc"))
    assert plan.links == (
        Link("0-of-2", "train-00000.bin", "train-00000.bin"),
        Link("0-of-2", "train-00001.bin", "train-00001.bin"),
        Link("1-of-2", "train-00000.bin", "train-00002.bin"),
        Link("1-of-2", "val-00000.bin", "val-00000.bin"),
    )
    m = plan.manifest
    assert [(f.name, f.n_tokens) for f in m.files] == [
        ("train-00000.bin", 50), ("train-00001.bin", 7), ("train-00002.bin", 30),
        ("val-00000.bin", 5)]
    assert m.files[2].sha256 == hashlib.sha256(b"train-00000.bin").hexdigest()  # part 1's
    assert m.totals == {"train": SplitSummary(87, 6, 3), "val": SplitSummary(5, 1, 1)}
    assert (m.part, m.source.prefix_sha256) == (None, None)
    assert m.source.files == FILES
    assert (m.source.rows_visited, m.source.empty_rows_skipped) == (21, 1)
    files = [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in FILES]
    assert m.corpus_manifest_sha256 == hashlib.sha256(canonical(
        {"kind": "parquet", "revision": None, "files": files})).hexdigest()
    assert m.parts is not None
    assert [(p.name, p.first_source_file, p.n_source_files, p.files) for p in m.parts] == [
        ("0-of-2", 0, 1, {"train-00000.bin": "train-00000.bin",
                          "train-00001.bin": "train-00001.bin"}),
        ("1-of-2", 1, 3, {"train-00000.bin": "train-00002.bin",
                          "val-00000.bin": "val-00000.bin"})]


def test_a_split_empty_in_every_part_keeps_one_empty_shard() -> None:
    p0 = part(0, [shard("train-00000.bin", 5), shard("val-00000.bin", 0, 0)])
    p1 = part(1, [shard("train-00000.bin", 6), shard("val-00000.bin", 0, 0)])
    plan = plan_merge([p0, p1], get_format("llmc"))
    assert [f.name for f in plan.manifest.files if f.split == "val"] == ["val-00000.bin"]
    assert Link("0-of-2", "val-00000.bin", "val-00000.bin") in plan.links
    assert plan.manifest.totals["val"] == SplitSummary(0, 0, 1)
    assert plan.manifest.val_bytes_per_token is None


def test_val_bytes_per_token_is_the_division_over_the_union() -> None:
    # part 0: 10 val tokens in 2 documents (8 of text at 2.0 bytes); part 1: 22 in 2 (20 at 1.5)
    p0 = part(0, [shard("train-00000.bin", 5), shard("val-00000.bin", 10, 2)], val=(10, 2, 2.0))
    p1 = part(1, [shard("train-00000.bin", 6), shard("val-00000.bin", 22, 2)], val=(22, 2, 1.5))
    assert plan_merge([p0, p1], get_format("llmc")).manifest.val_bytes_per_token == 46 / 28


def test_a_megatron_shards_index_moves_with_it_and_keeps_its_hash() -> None:
    idx = Companion("train-00000.idx", "9" * 64)
    p0 = part(0, [shard("train-00000.bin", 5, companions=(idx,))], format="megatron")
    p1 = part(1, [shard("train-00000.bin", 6, companions=(idx,))], format="megatron")
    plan = plan_merge([p0, p1], get_format("megatron"))
    assert Link("1-of-2", "train-00000.idx", "train-00001.idx") in plan.links
    assert plan.manifest.files[1].companions == (Companion("train-00001.idx", "9" * 64),)


def test_no_parts() -> None:
    assert refusal([]) == "no parts to merge"


def test_a_part_out_of_place_names_its_rebuild() -> None:
    p0, p1 = two_parts()
    assert refusal([p1, p0]) == ("1-of-2 is not part 0 of 2 (its manifest says 1/2); rebuild it "
                                 "with prep prepare --part 0/2")
    alone = dataclasses.replace(p0, manifest=dataclasses.replace(p0.manifest, part=None))
    assert refusal([alone, p1]) == ("0-of-2 is not part 0 of 2 (its manifest says no part); "
                                    "rebuild it with prep prepare --part 0/2")


def test_parts_of_different_runs_are_named_with_each_difference() -> None:
    p0, p1 = two_parts()
    recipe = {**p1.manifest.recipe, "seed": 2}
    other = dataclasses.replace(p1, manifest=dataclasses.replace(p1.manifest, recipe=recipe,
                                                                 dataset="other"))
    assert refusal([p0, other]) == (
        "1-of-2 and 0-of-2 are not parts of the same run: dataset: 'ds' vs 'other'; "
        "recipe.seed: 1337 vs 2. Rebuild 1-of-2 with the options of the others")


def test_more_than_six_differences_are_counted() -> None:
    p0, p1 = two_parts()
    recipe = {k: f"x{k}" for k in p1.manifest.recipe}
    other = dataclasses.replace(p1, manifest=dataclasses.replace(p1.manifest, recipe=recipe))
    message = refusal([p0, other])
    assert message.count(" vs ") == 6
    assert message.endswith(f"; and {len(recipe) - 6} more. Rebuild 1-of-2 with the options of "
                            "the others")


def test_a_part_built_from_another_listing_is_refused() -> None:
    p0, p1 = two_parts()
    files = (FILES[1], dataclasses.replace(FILES[2], size=2), FILES[3])
    moved = dataclasses.replace(p1, manifest=dataclasses.replace(
        p1.manifest, source=dataclasses.replace(p1.manifest.source, files=files)))
    assert refusal([p0, moved]) == (
        f"the parts' source files together are not the listing they were cut from "
        f"({LISTING[:12]}…): a part was built from another listing; rebuild the parts whose "
        "source differs")


def test_a_part_whose_range_is_not_the_rules_is_refused() -> None:
    # the same listing, cut after b.parquet instead of after a.parquet
    p0, p1 = two_parts()
    s0 = dataclasses.replace(p0.manifest.source, files=FILES[:2])
    s1 = dataclasses.replace(p1.manifest.source, files=FILES[2:])
    parts = [dataclasses.replace(p0, manifest=dataclasses.replace(p0.manifest, source=s0)),
             dataclasses.replace(p1, manifest=dataclasses.replace(p1.manifest, source=s1))]
    assert refusal(parts) == ("0-of-2 read 2 source files but the partition rule gives it 1; "
                              "rebuild it with prep prepare --part 0/2")


def test_fixed_parts_link_the_kept_shards_and_the_files_written_anew() -> None:
    """--pack fixed: each split's first ``kept`` shards are renamed, then the files the
    re-cut wrote follow them, linked from DIR.parts/recut; the plan needs them."""
    parts = [dataclasses.replace(p, manifest=dataclasses.replace(
        p.manifest, recipe={**p.manifest.recipe, "pack": "fixed"})) for p in two_parts()]
    new = dataclasses.replace(shard("train-00001.bin", 37, 4), first_doc_at=5)
    plan = plan_merge(parts, get_format("llmc"), {"train": (1, (new,)), "val": (1, ())})
    assert [(e.name, e.n_tokens, e.first_doc_at) for e in plan.manifest.files] == [
        ("train-00000.bin", 50, None), ("train-00001.bin", 37, 5), ("val-00000.bin", 5, None)]
    assert ("recut", "train-00001.bin", "train-00001.bin") in [
        (link.part, link.name, link.new_name) for link in plan.links]
    with pytest.raises(ValueError, match="re-cut"):
        plan_merge(parts, get_format("llmc"))
