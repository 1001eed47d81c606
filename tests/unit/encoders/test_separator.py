"""Where the document separator comes from, in the documented order (``--no-doc-sep``,
``--doc-sep-id``, generation_config.json, tokenizer_config.json), read from real config
files, with the whole message of every refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prep.encoders.separator import (
    Separator,
    choose_separator,
    eos_from_generation_config,
    eos_from_tokenizer_config,
)
from prep.errors import InputError

VOCAB = {"</s>": 5, "<eos>": 9}


def to_id(token: str) -> int | None:
    return VOCAB.get(token)


def write(directory: Path, name: str, content: object) -> Path:
    path = directory / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def choose(tmp_path: Path, **kw: object) -> Separator:
    args: dict[str, object] = {"typed": None, "no_sep": False, "vocab_size": 100,
                               "directory": tmp_path, "token_to_id": to_id, **kw}
    return choose_separator("tok", **args)  # type: ignore[arg-type]


def test_the_flags_come_before_the_files(tmp_path: Path) -> None:
    write(tmp_path, "generation_config.json", {"eos_token_id": 7})
    assert choose(tmp_path, no_sep=True) == Separator(None, "--no-doc-sep")
    assert choose(tmp_path, typed=3) == Separator(3, "--doc-sep-id")
    assert choose(tmp_path) == Separator(7, str(tmp_path / "generation_config.json"))


def test_generation_config_before_tokenizer_config_and_its_list_form(tmp_path: Path) -> None:
    write(tmp_path, "tokenizer_config.json", {"eos_token": "</s>"})
    assert choose(tmp_path) == Separator(5, str(tmp_path / "tokenizer_config.json"))
    write(tmp_path, "generation_config.json", {"eos_token_id": [8, 2]})
    assert choose(tmp_path) == Separator(8, str(tmp_path / "generation_config.json"))
    write(tmp_path, "generation_config.json", {"eos_token_id": []})
    assert choose(tmp_path).id == 5  # an empty list names nothing: the next file decides


def test_an_added_token_object_is_mapped_to_its_id(tmp_path: Path) -> None:
    write(tmp_path, "tokenizer_config.json", {"eos_token": {"content": "<eos>", "lstrip": False}})
    assert eos_from_tokenizer_config(tmp_path, to_id) == 9


def test_the_byte_tokenizer_has_no_separator_unless_typed() -> None:
    assert choose_separator("byte", typed=None, no_sep=False, vocab_size=256) == Separator(
        None, None)
    assert choose_separator("byte", typed=10, no_sep=False, vocab_size=256) == Separator(
        10, "--doc-sep-id")


def test_a_typed_id_outside_the_vocabulary_is_an_input_error(tmp_path: Path) -> None:
    # InputError (exit 1), not a usage error (2): seeing it needed the tokenizer opened.
    with pytest.raises(InputError) as e:
        choose(tmp_path, typed=1_000, vocab_size=1_000)
    assert str(e.value) == ("--doc-sep-id 1,000 is outside the vocabulary of tok (size 1,000); "
                            "choose an id below 1,000 or pass --no-doc-sep")
    assert choose(tmp_path, typed=1_000, vocab_size=None).id == 1_000  # a cheap fingerprint


def test_a_tokenizer_without_a_separator_is_refused_unless_not_required(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        choose(tmp_path)
    assert str(e.value) == (
        f"--tokenizer tok: no document separator is configured (no eos_token_id in "
        f"{tmp_path / 'generation_config.json'}, no eos_token in "
        f"{tmp_path / 'tokenizer_config.json'}); documents would be concatenated with nothing "
        "between them. Pass --doc-sep-id N (the tokenizer's end-of-text id) or --no-doc-sep "
        "to mean exactly that")
    assert choose(tmp_path, required=False) == Separator(None, None)


def test_a_configured_id_outside_the_vocabulary_names_its_file(tmp_path: Path) -> None:
    cfg = write(tmp_path, "generation_config.json", {"eos_token_id": 50_256})
    with pytest.raises(InputError) as e:
        choose(tmp_path, vocab_size=256)
    assert str(e.value) == (f"{cfg}: the end-of-text id 50,256 is outside the vocabulary of tok "
                            "(size 256); fix it, or give --doc-sep-id or --no-doc-sep")


@pytest.mark.parametrize(("value", "shown"), [("7", "'7'"), (True, "True"), (1.5, "1.5")])
def test_an_eos_token_id_that_is_not_an_integer(tmp_path: Path, value: object, shown: str
                                                ) -> None:
    cfg = write(tmp_path, "generation_config.json", {"eos_token_id": value})
    with pytest.raises(InputError) as e:
        eos_from_generation_config(tmp_path)
    assert str(e.value) == (f"{cfg}: eos_token_id {shown} is not an integer; fix it or give "
                            "--doc-sep-id")


def test_an_unreadable_config_names_the_file_and_the_flags(tmp_path: Path) -> None:
    cfg = write(tmp_path, "generation_config.json", "{not json")
    with pytest.raises(InputError) as e:
        eos_from_generation_config(tmp_path)
    try:
        json.loads("{not json")
    except ValueError as why:
        cause = str(why)
    assert str(e.value) == (f"{cfg}: unreadable generation_config.json ({cause}); fix it, or "
                            "give --doc-sep-id N or --no-doc-sep")
    assert e.value.path == str(cfg)


def test_an_eos_token_the_vocabulary_lacks(tmp_path: Path) -> None:
    cfg = write(tmp_path, "tokenizer_config.json", {"eos_token": "<end>"})
    with pytest.raises(InputError) as e:
        eos_from_tokenizer_config(tmp_path, to_id)
    assert str(e.value) == (f"{cfg}: eos_token '<end>' is not a token of the tokenizer beside "
                            "it; fix it, or give --doc-sep-id N or --no-doc-sep")


def test_a_config_that_is_not_an_object_configures_nothing(tmp_path: Path) -> None:
    write(tmp_path, "generation_config.json", "[50256]")
    write(tmp_path, "tokenizer_config.json", '"</s>"')
    assert eos_from_generation_config(tmp_path) is None
    assert eos_from_tokenizer_config(tmp_path, to_id) is None
