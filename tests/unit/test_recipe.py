"""The recipe and the run options: the manifest's ``recipe`` object in the order
docs/format.md gives, type and range checks with their whole messages, and round trips
through a checkpoint's JSON."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prep.errors import IntegrityError, UsageError
from prep.recipe import (
    DEFAULTS,
    RECIPE_FIELDS,
    REQUIRED,
    Recipe,
    RunOptions,
    check_types,
    validate,
)

# docs/format.md: "`recipe` as `val_fraction` (or `split_column`), `seed`, `shuffle_files`,
# `shuffle_buffer`, `max_documents`, `train_tokens` (null when unused), `sep_position`,
# `max_file_tokens`, `format`, `dtype`"
DOC_ORDER = ["seed", "shuffle_files", "shuffle_buffer", "max_documents", "train_tokens",
             "sep_position", "max_file_tokens", "format", "dtype"]


def usage(**settings: Any) -> str:
    with pytest.raises(UsageError) as e:
        Recipe(**{"source": "data/", "tokenizer": "byte", **settings})
    return str(e.value)


def test_the_manifest_recipe_keeps_the_documented_order_and_values() -> None:
    r = Recipe(source="data/", tokenizer="byte", val_fraction=0.25, seed=7, max_documents=9)
    m = r.manifest_recipe()
    assert list(m) == ["val_fraction", *DOC_ORDER]
    assert m == {"val_fraction": 0.25, "seed": 7, "shuffle_files": False, "shuffle_buffer": 0,
                 "max_documents": 9, "train_tokens": None, "sep_position": "prepend",
                 "max_file_tokens": 100_000_000, "format": "llmc", "dtype": "auto"}


def test_a_split_column_takes_the_place_of_val_fraction() -> None:
    m = Recipe(source="s", tokenizer="byte", split_column="which").manifest_recipe()
    assert list(m) == ["split_column", *DOC_ORDER]
    assert m["split_column"] == "which"


def test_an_integer_val_fraction_is_written_as_a_float() -> None:
    r = Recipe(source="s", tokenizer="byte", val_fraction=0)
    assert isinstance(r.val_fraction, float)
    assert json.dumps(r.manifest_recipe()["val_fraction"]) == "0.0"


def test_defaults_and_required_fields_are_those_of_the_dataclass() -> None:
    fields = {f.name: f for f in dataclasses.fields(Recipe)}
    assert set(fields) == RECIPE_FIELDS
    assert REQUIRED == ("source", "tokenizer")
    assert all(fields[n].default is dataclasses.MISSING for n in REQUIRED)
    assert set(DEFAULTS) == RECIPE_FIELDS - set(REQUIRED)
    assert DEFAULTS["seed"] == 1337 and DEFAULTS["val_fraction"] == 0.01


@given(seed=st.integers(0, 2**32 - 1), val=st.floats(0, 0.999), shuffle=st.booleans(),
       buffer=st.integers(0, 10**6), max_file=st.integers(1, 2**31 - 1),
       sep=st.none() | st.integers(0, 10**6), dataset=st.none() | st.text(max_size=8))
def test_to_json_from_json_round_trips_through_json_text(
        seed: int, val: float, shuffle: bool, buffer: int, max_file: int, sep: int | None,
        dataset: str | None) -> None:
    r = Recipe(source="s", tokenizer="t", seed=seed, val_fraction=val, shuffle_files=shuffle,
               shuffle_buffer=buffer, max_file_tokens=max_file, doc_sep_id=sep, dataset=dataset)
    assert Recipe.from_json(json.loads(json.dumps(r.to_json()))) == r


def test_a_checkpoint_recipe_with_an_unknown_setting_is_refused() -> None:
    data = Recipe(source="s", tokenizer="t").to_json() | {"zeta": 1, "alpha": 2}
    with pytest.raises(IntegrityError) as e:
        Recipe.from_json(data)
    assert str(e.value) == "checkpoint recipe has unknown settings ['alpha', 'zeta']"


@pytest.mark.parametrize(("settings", "message"), [
    ({"seed": "7"}, "seed holds str '7', expected an integer"),
    ({"seed": True}, "seed holds bool True, expected an integer"),
    ({"val_fraction": "0.1"}, "val_fraction holds str '0.1', expected a number"),
    ({"val_fraction": False}, "val_fraction holds bool False, expected a number"),
    ({"shuffle_files": 1}, "shuffle_files holds int 1, expected True or False"),
    ({"split_column": 3}, "split_column holds int 3, expected a string or None"),
    ({"max_documents": 2.0}, "max_documents holds float 2.0, expected an integer or None"),
    ({"source": None}, "source holds NoneType None, expected a string"),
])
def test_a_setting_of_the_wrong_type_is_named(settings: dict[str, Any], message: str) -> None:
    assert usage(**settings) == message


def test_a_long_wrong_value_is_cut_to_forty_characters() -> None:
    with pytest.raises(UsageError) as e:
        check_types({"format": ["x" * 100]})
    assert str(e.value) == f"format holds list {str(['x' * 100])[:40]}, expected a string"


@pytest.mark.parametrize(("settings", "message"), [
    ({"val_fraction": 1.0}, "--val-fraction 1.0 must be in [0, 1): 0 <= F < 1"),
    ({"val_fraction": -0.5}, "--val-fraction -0.5 must be in [0, 1): 0 <= F < 1"),
    ({"seed": 2**32}, "--seed 4294967296 must be in 0..2**32-1"),
    ({"seed": -1}, "--seed -1 must be in 0..2**32-1"),
    ({"shuffle_buffer": -1}, "--shuffle-buffer -1 must be >= 0"),
    ({"max_documents": 0}, "--max-documents 0 must be > 0"),
    ({"train_tokens": -3}, "--train-tokens -3 must be > 0"),
    ({"max_file_tokens": 0}, "--max-file-tokens 0 must be in 1..2**31-1"),
    ({"max_file_tokens": 2**31}, "--max-file-tokens 2147483648 must be in 1..2**31-1"),
    ({"sep_position": "middle"}, "--sep-position must be prepend or append, not 'middle'"),
    ({"doc_sep_id": -1}, "--doc-sep-id -1 must be >= 0"),
    ({"doc_sep_id": 0, "no_doc_sep": True},
     "--doc-sep-id and --no-doc-sep contradict each other; give one"),
    ({"text_column": ""}, "--text-column must not be empty"),
    ({"split_column": "text"},
     "--split-column 'text' must name a column of its own, holding 'train' or 'val' on each "
     "row (not the text column 'text'); or drop --split-column to split by content hash"),
    ({"pack": "tight"}, "--pack must be whole or fixed, not 'tight'"),
    ({"part": "1/2", "train_tokens": 5},
     "--train-tokens is a global budget, which cannot be honoured across independent parts: "
     "drop --train-tokens with --part, or run the whole source in one run"),
])
def test_an_out_of_range_setting_is_refused_with_its_flag(settings: dict[str, Any],
                                                          message: str) -> None:
    assert usage(**settings) == message


def test_the_edges_of_each_range_are_accepted() -> None:
    r = Recipe(source="s", tokenizer="t", val_fraction=0.0, seed=2**32 - 1,
               max_file_tokens=2**31 - 1, doc_sep_id=0, part="1/2")
    assert (r.seed, r.max_file_tokens, r.part) == (2**32 - 1, 2**31 - 1, "1/2")


def test_validate_accepts_settings_without_source_and_tokenizer() -> None:
    validate({"seed": 3})  # a resume's typed options, before the checkpoint completes them
    with pytest.raises(UsageError) as e:
        validate({"shuffle_buffer": -2})
    assert str(e.value) == "--shuffle-buffer -2 must be >= 0"


@pytest.mark.parametrize(("options", "message"), [
    ({"batch_size": 0}, "--batch-size 0 must be > 0"),
    ({"threads": 0}, "--threads 0 must be > 0"),
    ({"workers": -1}, "--workers -1 must be > 0"),
    ({"recycle_workers": 0}, "--recycle-workers 0 must be > 0"),
    ({"worker_memory": 0}, "--worker-memory 0 must be > 0"),
    ({"checkpoint_interval": 0.0}, "--checkpoint-interval 0.0 must be > 0"),
    ({"log_interval": float("nan")}, "--log-interval nan must be > 0"),
    ({"wait_lock": -1.0}, "--wait-lock -1.0 must be >= 0"),
    ({"wait_lock": float("nan")}, "--wait-lock nan must be >= 0"),
])
def test_run_options_refuse_out_of_range_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as e:
        RunOptions(out="o", **options)
    assert str(e.value) == message


def test_run_options_compare_without_their_argv() -> None:
    a = RunOptions(out="o", argv=("prep", "--token", "***"))
    assert a == RunOptions(out="o", argv=None)
    assert "argv" not in repr(a)
    assert a != RunOptions(out="o", workers=2)


def test_pack_is_in_the_manifest_recipe_only_when_fixed() -> None:
    """A whole manifest keeps the bytes it always had: no pack key (absent means whole)."""
    whole = Recipe(source="s", tokenizer="t").manifest_recipe()
    fixed = Recipe(source="s", tokenizer="t", pack="fixed").manifest_recipe()
    assert "pack" not in whole and list(fixed) == [*whole, "pack"] and fixed["pack"] == "fixed"
    old = {k: v for k, v in Recipe(source="s", tokenizer="t").to_json().items() if k != "pack"}
    assert Recipe.from_json(old).pack == "whole"  # a checkpoint written before --pack
