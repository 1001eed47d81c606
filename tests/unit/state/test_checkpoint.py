"""``checkpoint.json``: round trips, and refusal of unknown formats and corrupt files."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from prep.errors import IntegrityError
from prep.recipe import Recipe
from prep.state import checkpoint as ckpt
from prep.state.checkpoint import Checkpoint, Progress, RunFacts, StreamBase
from prep.state.identity import FileIdentity, SourceIdentity, TokenizerIdentity
from prep.state.shards import FileRecord, OpenFile, SplitState


def sample() -> Checkpoint:
    recipe = Recipe(source="data/", tokenizer="byte", val_fraction=0.25, seed=7, shuffle_buffer=3,
                    max_file_tokens=1000, doc_sep_id=0, dataset="dé")
    train = SplitState(
        sealed=(FileRecord("train-00000.bin", 990, 12, "a" * 64),),
        open=OpenFile("train-00001.bin", 40, 1, "b" * 64, (30, 10)),
        n_tokens=1030, n_docs=13, text_bytes=1017, text_tokens=1017,
    )
    val = SplitState.empty("val-00000.bin")
    return Checkpoint(
        recipe=recipe,
        source=SourceIdentity("parquet", "data/", "/r", "/cwd", None,
                              (FileIdentity("ü.parquet", 5, None),)),
        tokenizer=TokenizerIdentity("byte", "bytes", "e3" * 32, 256, 0),
        versions={"tokenizers": "0.23.3", "numpy": "2.0"},
        progress=Progress(rows_visited=20, docs_written=13, empty_rows_skipped=7,
                          prefix_sha256="c" * 64, finished=False),
        splits={"train": train, "val": val},
        run=RunFacts(started_at=1.5, resumes=2, active_seconds=3.25, source_mtimes={"ü": 9}),
        written_at=12.0,
    )


def test_to_json_from_json_round_trip() -> None:
    cp = sample()
    assert Checkpoint.from_json(cp.to_json()) == cp
    # and through real JSON text
    assert Checkpoint.from_json(json.loads(json.dumps(cp.to_json()))) == cp


def test_to_json_records_the_format_version() -> None:
    d = sample().to_json()
    assert d["format"] == 5
    assert d["splits"]["train"]["open"]["ids_chain"] == "b" * 64
    assert d["splits"]["train"]["open"]["segments"] == [30, 10]
    assert d["recipe"]["max_file_tokens"] == 1000


def test_save_load_round_trip(tmp_path: Path) -> None:
    cp = sample()
    ckpt.save(tmp_path, cp)
    path = tmp_path / "checkpoint.json"
    assert json.loads(path.read_text(encoding="utf-8"))["recipe"]["dataset"] == "dé"
    assert ckpt.load(tmp_path) == cp
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.json"]  # no temp file left


def test_save_replaces_the_previous_checkpoint(tmp_path: Path) -> None:
    from dataclasses import replace

    cp = sample()
    ckpt.save(tmp_path, cp)
    later = replace(cp, progress=replace(cp.progress, rows_visited=99))
    ckpt.save(tmp_path, later)
    assert ckpt.load(tmp_path).progress.rows_visited == 99


# 2 and 3 are staging directories of a prep before manifest v4, whose prefix digest was
# another hash: refused as another version's, not replayed into a "source changed"; 4's
# open shards record one running hash of their ids, not the chain of their segments.
@pytest.mark.parametrize("fmt", [4, 3, 2, 1, 0, "5", None])
def test_unknown_format_is_rejected(tmp_path: Path, fmt: object) -> None:
    d = sample().to_json()
    d["format"] = fmt
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    msg = str(info.value)
    assert f"checkpoint format {fmt!r} is not the supported 5" in msg
    assert "another version of prep" in msg
    assert "delete the staging directory" in msg


def test_missing_format_is_rejected() -> None:
    d = sample().to_json()
    del d["format"]
    with pytest.raises(IntegrityError, match="checkpoint format None is not the supported 5"):
        Checkpoint.from_json(d)


def test_non_object_is_rejected() -> None:
    with pytest.raises(IntegrityError, match="checkpoint format None"):
        Checkpoint.from_json([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content",
    [b'{"format": 1, "recipe": ', b"\x00\x00\x00\x00", b"", b"not json at all"],
)
def test_corrupt_json_is_rejected(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "checkpoint.json").write_bytes(content)
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    msg = str(info.value)
    assert f"{tmp_path / 'checkpoint.json'} is corrupt" in msg
    assert f"Delete {tmp_path} to start over" in msg


def test_missing_key_is_corrupt(tmp_path: Path) -> None:
    d = sample().to_json()
    del d["progress"]
    d["digest"] = ckpt.content_digest(d)  # a consistent file of the wrong shape
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    assert "checkpoint.json: progress: is missing" in str(info.value)


def test_unknown_recipe_setting_is_rejected(tmp_path: Path) -> None:
    d = sample().to_json()
    d["recipe"]["fancy_option"] = 1
    d["digest"] = ckpt.content_digest(d)
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    assert "checkpoint recipe has unknown settings ['fancy_option']" in str(info.value)


def test_missing_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    assert f"{tmp_path / 'checkpoint.json'} is missing" in str(info.value)
    assert "A power loss" in str(info.value) and "without --resume" in str(info.value)
    assert f"Delete {tmp_path} to start over" in str(info.value)


def test_recipe_json_round_trip() -> None:
    r = Recipe(source="s", tokenizer="byte", split_column="split", shuffle_files=True,
               train_tokens=5,
               sep_position="append", no_doc_sep=True)
    assert Recipe.from_json(r.to_json()) == r


def test_progress_and_run_facts_round_trip() -> None:
    p = Progress(1, 2, 3, "d" * 64, True)
    assert Progress.from_json(p.to_json()) == p
    f = RunFacts(started_at=2.0, resumes=1, active_seconds=0.5, source_mtimes={"a": 1})
    assert RunFacts.from_json(f.to_json()) == f


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [("source", 5, "integer 5"), ("progress", None, "null None"), ("run", [], "list []"),
     ("recipe", [], "list []"), ("versions", [], "list []"), ("splits", [], "list []"),
     ("versions", "x", "string 'x'")],
)
def test_wrong_shape_names_the_field(tmp_path: Path, key: str, value: object, shown: str
                                     ) -> None:
    d = sample().to_json()
    d[key] = value
    d["digest"] = ckpt.content_digest(d)  # consistent, but of the wrong shape
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    msg = str(info.value)
    assert f"checkpoint.json: {key}: holds {shown}, expected an object" in msg, msg
    assert "digest recomputed" in msg and f"delete {tmp_path} to start over" in msg, msg


def _set(d: dict[str, Any], path: str, value: object) -> None:
    *parents, last = path.split(".")
    for key in parents:
        d = d[int(key)] if isinstance(d, list) else d[key]
    d[last] = value


# A re-signed checkpoint with one field of the wrong JSON type, and what the refusal says.
# int("12"), bool("false") and str(5) used to accept the first three; the forged
# split_column reached pyarrow and failed there with a bare TypeError.
WRONG_TYPES = [
    ("progress.rows_visited", "20",
     "progress.rows_visited: holds string '20', expected an integer"),
    ("progress.finished", "false",
     "progress.finished: holds string 'false', expected true or false"),
    ("splits.train.n_tokens", 1030.5,
     "splits.train.n_tokens: holds number 1030.5, expected an integer"),
    ("splits.train.n_docs", True, "splits.train.n_docs: holds boolean True, expected an integer"),
    ("splits.train.sealed.0.n_docs", -1,
     "splits.train.sealed[0].n_docs: holds -1, expected at least 0"),
    ("splits.train.sealed.0.sha256", "xyz",
     "splits.train.sealed[0].sha256: holds string 'xyz', expected a SHA-256"),
    ("splits.train.open.doc_lengths", [1, "2"],
     "splits.train.open.doc_lengths[1]: holds string '2'"),
    ("splits.train.open.segments", [30, 11],
     "splits.train.open.segments: do not add up to its 40 ids"),
    ("splits.train.open.segments", [40, 0],
     "splits.train.open.segments: do not add up to its 40 ids in non-empty segments"),
    ("splits.train.open.ids_chain", "b" * 63,
     "splits.train.open.ids_chain: holds string"),
    ("recipe.split_column", 5, "recipe: split_column holds int 5, expected a string or None"),
    ("recipe.split_column", ["split"], "recipe: split_column holds list ['split'], expected"),
    ("recipe.max_documents", "1",
     "recipe: max_documents holds str '1', expected an integer or None"),
    ("recipe.shuffle_files", 1, "recipe: shuffle_files holds int 1, expected True or False"),
    ("recipe.max_file_tokens", 0, "recipe: --max-file-tokens 0 must be in 1..2**31-1"),
    ("recipe.source", None, "recipe.source: holds null None, expected a string"),
    ("tokenizer.vocab_size", "256",
     "tokenizer.vocab_size: holds string '256', expected an integer"),
    ("source.files.0.size", 5.0, "source.files[0].size: holds number 5.0, expected an integer"),
    ("run.source_mtimes.ü", "9", "run.source_mtimes.ü: holds string '9', expected an integer"),
    ("versions.numpy", 2, "versions.numpy: holds integer 2, expected a string"),
]


@pytest.mark.parametrize(("path", "value", "expected"), WRONG_TYPES,
                         ids=[f"{p}={v!r}" for p, v, _ in WRONG_TYPES])
def test_a_field_of_the_wrong_type_is_refused_by_name(
    tmp_path: Path, path: str, value: object, expected: str
) -> None:
    d = sample().to_json()
    _set(d, path, value)
    d["digest"] = ckpt.content_digest(d)  # re-signed, as a forger would
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    assert expected in str(info.value), str(info.value)
    assert not isinstance(info.value.__cause__, TypeError)


def test_splits_other_than_train_and_val_are_refused(tmp_path: Path) -> None:
    d = sample().to_json()
    d["splits"]["test"] = d["splits"].pop("val")
    d["digest"] = ckpt.content_digest(d)
    (tmp_path / "checkpoint.json").write_text(json.dumps(d))
    with pytest.raises(IntegrityError, match=r"splits: holds \['test', 'train'\], expected"):
        ckpt.load(tmp_path)


def test_stream_base_round_trips_and_old_checkpoints_have_none() -> None:
    base = StreamBase(files=11, rows_visited=2200, empty_rows_skipped=3, prefix_sha256="ab" * 32)
    cp = replace(sample(), progress=replace(sample().progress, base=base))
    assert Checkpoint.from_json(json.loads(json.dumps(cp.to_json()))) == cp
    # A checkpoint written before incremental refreshes has no "base": a plain run.
    d = sample().to_json()
    del d["progress"]["base"]
    assert Checkpoint.from_json(d).progress.base is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["progress"].update(rows_visited=d["progress"]["rows_visited"] + 1),
        lambda d: d["recipe"].update(val_fraction=0.5),
        lambda d: d.pop("digest"),
        lambda d: d.update(digest="0" * 64),
    ],
    ids=["a-count", "the-recipe", "no-digest", "another-digest"],
)
def test_any_edit_breaks_the_digest(tmp_path: Path, edit: Any) -> None:
    ckpt.save(tmp_path, sample())
    path = tmp_path / "checkpoint.json"
    d = json.loads(path.read_text(encoding="utf-8"))
    edit(d)
    path.write_text(json.dumps(d, indent=1))
    with pytest.raises(IntegrityError) as info:
        ckpt.load(tmp_path)
    msg = str(info.value)
    assert f"{path} was modified or corrupted" in msg
    assert f"delete {tmp_path} to start over" in msg


def test_the_digest_is_sha256_of_the_canonical_content(tmp_path: Path) -> None:
    """An independent computation: sorted keys, no spaces, UTF-8, without the digest."""
    import hashlib

    ckpt.save(tmp_path, sample())
    d = json.loads((tmp_path / "checkpoint.json").read_text(encoding="utf-8"))
    digest = d.pop("digest")
    canon = json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert digest == hashlib.sha256(canon.encode("utf-8")).hexdigest()
    # reformatting the file (indent, key order) keeps it valid: the digest is of content
    d["digest"] = digest
    (tmp_path / "checkpoint.json").write_text(json.dumps(dict(reversed(d.items()))))
    assert ckpt.load(tmp_path) == sample()
