"""``prep train-tokenizer``'s recipe: its checks with their whole messages, the JSON round
trip with its version, and the differences a resume reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prep.errors import IntegrityError, UsageError
from prep.tokenizer.settings import RECIPE_FIELDS, RECIPE_VERSION, TrainRecipe


def usage(**kw: Any) -> str:
    with pytest.raises(UsageError) as e:
        TrainRecipe(**{"source": "/data", **kw})
    return str(e.value)


@pytest.mark.parametrize(("kw", "message"), [
    ({"method": "wordpiece"}, "--method 'wordpiece': choose bpe or byte"),
    ({"method": "byte", "vocab_size": 300},
     "--vocab-size was given with --method byte, whose vocabulary is the corpus's distinct "
     "bytes; drop --vocab-size"),
    ({"method": "byte", "min_pair_frequency": 3},
     "--min-pair-frequency applies to --method bpe only; drop it"),
    ({"vocab_size": 255}, "--vocab-size 255 must be in 256..4,294,967,295 (2**32-1): it "
     "counts every id, the 256 bytes, one per merge and one per --special-token (0 given)"),
    ({"vocab_size": 2**32}, "--vocab-size 4,294,967,296 must be in 256..4,294,967,295 "
     "(2**32-1): it counts every id, the 256 bytes, one per merge and one per "
     "--special-token (0 given)"),
    ({"vocab_size": 257, "special_tokens": ("<a>", "<b>")}, "--vocab-size 257 must be in "
     "258..4,294,967,295 (2**32-1): it counts every id, the 256 bytes, one per merge and one "
     "per --special-token (2 given)"),
    ({"pre_tokenizer": "gpt3"}, "--pre-tokenizer 'gpt3': choose one of none, gpt2, gpt4, o200k"),
    ({"method": "byte", "pre_tokenizer": "gpt2"},
     "--pre-tokenizer applies to --method bpe only; drop it"),
    ({"min_pair_frequency": 0}, "--min-pair-frequency 0 must be >= 1"),
    ({"special_tokens": ("<a>", "<a>")}, "--special-token values must be distinct and not empty"),
    ({"special_tokens": ("",)}, "--special-token values must be distinct and not empty"),
    ({"val_fraction": 1.0}, "--val-fraction 1.0 must be in [0, 1)"),
    ({"max_documents": 0}, "--max-documents 0 must be >= 1"),
    ({"train_bytes": -1}, "--train-bytes -1 must be >= 1"),
])
def test_each_check_names_its_flag(kw: dict[str, Any], message: str) -> None:
    assert usage(**kw) == message


def test_the_edges_are_accepted_and_the_target_defaults_to_512() -> None:
    assert TrainRecipe("/d").target == 512
    assert TrainRecipe("/d", vocab_size=256).target == 256
    assert TrainRecipe("/d", vocab_size=2**32 - 1).target == 2**32 - 1
    two = TrainRecipe("/d", vocab_size=258, special_tokens=("<a>", "<b>"))
    assert (two.size, two.target) == (258, 256)  # the special tokens count in --vocab-size
    assert TrainRecipe("/d", method="byte").vocab_size is None


def test_special_tokens_given_as_a_list_become_a_tuple() -> None:
    r = TrainRecipe("/d", special_tokens=["<|end|>", "<pad>"])  # type: ignore[arg-type]
    assert r.special_tokens == ("<|end|>", "<pad>")
    assert hash(r) == hash(TrainRecipe("/d", special_tokens=("<|end|>", "<pad>")))


def test_to_json_carries_the_version_and_round_trips_through_json_text() -> None:
    r = TrainRecipe("/d", vocab_size=1_000, special_tokens=("<|end|>",), split_column="s",
                    max_documents=5)
    d = json.loads(json.dumps(r.to_json()))
    assert d["version"] == RECIPE_VERSION == 1
    # without pre-tokenization the recipe keeps the bytes it had before the option existed
    assert set(d) == RECIPE_FIELDS - {"pre_tokenizer"} | {"version"}
    assert d["special_tokens"] == ["<|end|>"]
    assert TrainRecipe.from_json(d) == r
    g = TrainRecipe("/d", pre_tokenizer="gpt2")
    assert g.to_json()["pre_tokenizer"] == "gpt2" and TrainRecipe.from_json(g.to_json()) == g


@pytest.mark.parametrize("version", [None, 2, "1"])
def test_another_version_is_refused(version: object) -> None:
    d = TrainRecipe("/d").to_json() | {"version": version}
    with pytest.raises(IntegrityError) as e:
        TrainRecipe.from_json(d)
    assert str(e.value) == f"training recipe of version {version!r}; this prep reads 1"


def test_differences_name_what_was_given_otherwise_in_sorted_order() -> None:
    r = TrainRecipe("/d", vocab_size=1_000, seed=3)
    given = {"vocab_size": 2_000, "seed": 3, "text_column": "body", "workers": 4}
    assert r.differences(given) == ["text_column: 'body', not 'text'",
                                    "vocab_size: 2000, not 1000"]
    assert r.differences({}) == []
