"""Encoders (docs/format.md step 7; README: --tokenizer, --doc-sep-id): the byte tokenizer, Hugging
Face tokenizer.json files, vocabulary size and the separator's origin."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, GPT2_DIR, bpe_tokenizer, numbered_docs, word_level_tokenizer
from hypothesis import given, settings
from hypothesis import strategies as st

from prep.encoders import HFEncoder, load_encoder
from prep.errors import InputError, UsageError

EOT = "<|endoftext|>"


def load(spec: str | Path, *, sep: int | None = None, no_sep: bool = False,
         tid: str | None = None) -> Any:
    return load_encoder(str(spec), doc_sep_id=sep, no_doc_sep=no_sep, tokenizer_id=tid)


def encode(enc: Any, texts: list[str]) -> list[list[int]]:
    return [a.tolist() for a in enc.encode_batch(texts, [t.encode() for t in texts])]


@pytest.fixture(scope="module")
def gpt2() -> HFEncoder:
    enc = load(GPT2_DIR)
    assert isinstance(enc, HFEncoder)
    return enc


@pytest.fixture(scope="module")
def tiktoken_gpt2() -> Any:
    from golden_corpus import tiktoken_gpt2

    return tiktoken_gpt2(FIXTURES)


# -- byte tokenizer ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Hi", "é", "日本語", "a\x00b", "🙂👍🏽", EOT])
def test_byte_encoder_ids_are_utf8_bytes(text: str) -> None:
    assert encode(load("byte"), [text]) == [list(text.encode("utf-8"))]


def test_byte_encoder_identity() -> None:
    ident = load("byte").identity
    assert ident.vocab_size == 256
    assert ident.tokenizer_id == "bytes"
    assert ident.sha256 == hashlib.sha256(b"").hexdigest()
    assert ident.doc_sep_id is None  # the byte tokenizer has no separator of its own


def test_byte_encoder_accepts_a_typed_separator() -> None:
    assert load("byte", sep=0).identity.doc_sep_id == 0
    assert load("byte", sep=255).identity.doc_sep_id == 255


def test_byte_encoder_rejects_separator_outside_256() -> None:
    with pytest.raises(InputError) as info:  # exit 1: seen with the tokenizer opened
        load("byte", sep=256)
    assert not isinstance(info.value, UsageError)
    msg = str(info.value)
    assert "--doc-sep-id 256 is outside the vocabulary of byte (size 256)" in msg
    assert "--no-doc-sep" in msg


def test_tokenizer_id_override() -> None:
    assert load("byte", tid="mine").identity.tokenizer_id == "mine"
    assert load(GPT2_DIR, tid="openai-gpt2").identity.tokenizer_id == "openai-gpt2"


def test_tokenizer_id_defaults_to_the_directory_name(tmp_path: Path) -> None:
    d = word_level_tokenizer(tmp_path / "my-tok", {"[UNK]": 0, "a": 1})
    assert load(d, no_sep=True).identity.tokenizer_id == "my-tok"
    assert load(d / "tokenizer.json", no_sep=True).identity.tokenizer_id == "my-tok"
    assert load(d / "tokenizer.json", no_sep=True).identity.sha256 == hashlib.sha256(
        (d / "tokenizer.json").read_bytes()
    ).hexdigest()


# -- GPT-2 ------------------------------------------------------------------------------------


def test_gpt2_identity(gpt2: HFEncoder) -> None:
    ident = gpt2.identity
    assert ident.vocab_size == 50257
    assert ident.doc_sep_id == 50256  # from generation_config.json beside tokenizer.json
    assert ident.tokenizer_id == "gpt2"  # the directory's name
    raw = (GPT2_DIR / "tokenizer.json").read_bytes()
    assert ident.sha256 == hashlib.sha256(raw).hexdigest()


def test_gpt2_anchors(gpt2: HFEncoder) -> None:
    assert encode(gpt2, ["Hello world", "Hi"]) == [[15496, 995], [17250]]


@pytest.mark.parametrize(
    "text", [EOT, f"a{EOT}b", f"end of page.{EOT}", f"{EOT}{EOT}", "<|endoftext|", "<|fim|>"]
)
def test_special_token_text_is_ordinary_text(
    gpt2: HFEncoder, tiktoken_gpt2: Any, text: str
) -> None:
    (ids,) = encode(gpt2, [text])
    assert 50256 not in ids
    assert ids == tiktoken_gpt2.encode_ordinary(text)


def test_special_token_text_by_hand(gpt2: HFEncoder) -> None:
    # "<|endoftext|>" as GPT-2 BPE of ordinary text: "<", "|", "end", "of", "text", "|", ">"
    assert encode(gpt2, [EOT]) == [[27, 91, 437, 1659, 5239, 91, 29]]


def test_batch_equals_one_by_one_gpt2(gpt2: HFEncoder, tiktoken_gpt2: Any) -> None:
    from golden_corpus import golden_texts

    texts = [*golden_texts()[:60], EOT, "  leading", "trailing  ", "x"]
    batched = encode(gpt2, texts)
    singles = [encode(gpt2, [t])[0] for t in texts]
    assert batched == singles
    assert batched == [tiktoken_gpt2.encode_ordinary(t) for t in texts]


def test_empty_batch(gpt2: HFEncoder) -> None:
    assert gpt2.encode_batch([], []) == []


# -- vocabulary size --------------------------------------------------------------------------


def add_tokens(directory: Path, special: list[str], normal: tuple[str, ...] = ()) -> None:
    from tokenizers import AddedToken, Tokenizer

    path = directory / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.add_special_tokens([AddedToken(s, special=True) for s in special])
    if normal:
        tok.add_tokens([AddedToken(s) for s in normal])
    tok.save(str(path))


def test_vocab_size_is_max_id_plus_one_with_a_gap(tmp_path: Path) -> None:
    d = word_level_tokenizer(tmp_path / "gap", {"[UNK]": 0, "hello": 1, "world": 7})
    enc = load(d, no_sep=True)
    assert enc.identity.vocab_size == 8  # 3 entries, but ids reach 7


def test_vocab_size_counts_added_tokens(tmp_path: Path) -> None:
    d = word_level_tokenizer(tmp_path / "add", {"[UNK]": 0, "hello": 1, "world": 2})
    add_tokens(d, ["<eos>"], ("zzz",))
    added = {t["content"]: t["id"] for t in json.loads((d / "tokenizer.json").read_text())[
        "added_tokens"]}
    assert added == {"<eos>": 3, "zzz": 4}
    assert load(d, no_sep=True).identity.vocab_size == 5


def test_vocab_size_with_high_id_special_token(tmp_path: Path) -> None:
    d = word_level_tokenizer(
        tmp_path / "high", {"[UNK]": 0, "hello": 1, "world": 5, "<eos>": 70000}, eos=70000
    )
    add_tokens(d, ["<eos>"])
    enc = load(d)
    assert enc.identity.vocab_size == 70001
    assert enc.identity.doc_sep_id == 70000
    assert encode(enc, ["hello world"]) == [[1, 5]]


def test_word_level_encoding(tmp_path: Path) -> None:
    d = word_level_tokenizer(tmp_path / "w", {"[UNK]": 0, "hello": 1, "world": 7})
    assert encode(load(d, no_sep=True), ["hello world hello", "other"]) == [[1, 7, 1], [0]]


# -- the separator ----------------------------------------------------------------------------


VOCAB = {"[UNK]": 0, "a": 1, "b": 2, "c": 3, "<eos>": 4}
REFUSED = -1  # no separator configured and none chosen: an error


def with_config(tmp_path: Path, config: object | None) -> Path:
    d = word_level_tokenizer(tmp_path / "tok", VOCAB)
    if config is not None:
        (d / "generation_config.json").write_text(json.dumps(config))
    return d


@pytest.mark.parametrize(
    ("config", "typed", "no_sep", "expected"),
    [
        (None, None, False, REFUSED),  # neither: a choice to make, not "no separator"
        ({"bos_token_id": 1}, None, False, REFUSED),  # config without eos
        ({"eos_token_id": 4}, None, False, 4),  # config int
        ({"eos_token_id": [3, 4]}, None, False, 3),  # config list: its first entry
        ({"eos_token_id": []}, None, False, REFUSED),
        ({"eos_token_id": None}, None, False, REFUSED),
        (None, None, True, None),  # --no-doc-sep says "none" explicitly
        ({"eos_token_id": 4}, 2, False, 2),  # typed wins over the config
        (None, 0, False, 0),
        ({"eos_token_id": 4}, None, True, None),  # --no-doc-sep wins over the config
    ],
)
def test_separator_origin(
    tmp_path: Path, config: object, typed: int | None, no_sep: bool, expected: int | None
) -> None:
    d = with_config(tmp_path, config)
    if expected == REFUSED:
        with pytest.raises(InputError) as info:
            load(d, sep=typed, no_sep=no_sep)
        assert "Pass --doc-sep-id N" in str(info.value)
        assert "or --no-doc-sep" in str(info.value)
        return
    assert load(d, sep=typed, no_sep=no_sep).identity.doc_sep_id == expected


def test_typed_separator_outside_vocab_is_input_error(tmp_path: Path) -> None:
    d = with_config(tmp_path, {"eos_token_id": 4})
    with pytest.raises(InputError) as info:  # not a usage error: the tokenizer was opened
        load(d, sep=5)
    assert not isinstance(info.value, UsageError)
    msg = str(info.value)
    assert f"--doc-sep-id 5 is outside the vocabulary of {d} (size 5)" in msg
    assert "choose an id below 5 or pass --no-doc-sep" in msg


def test_config_separator_outside_vocab_is_input_error(tmp_path: Path) -> None:
    d = with_config(tmp_path, {"eos_token_id": 50256})
    with pytest.raises(InputError) as info:
        load(d)
    assert not isinstance(info.value, UsageError)
    msg = str(info.value)
    assert "generation_config.json" in msg
    assert f"the end-of-text id 50,256 is outside the vocabulary of {d} (size 5)" in msg
    assert "--doc-sep-id or --no-doc-sep" in msg
    # and --no-doc-sep gets past it
    assert load(d, no_sep=True).identity.doc_sep_id is None


@pytest.mark.parametrize("eos", ["4", 4.0, True, {"id": 4}])
def test_config_separator_not_an_integer(tmp_path: Path, eos: object) -> None:
    d = with_config(tmp_path, {"eos_token_id": eos})
    with pytest.raises(InputError) as info:
        load(d)
    assert f"eos_token_id {eos!r} is not an integer" in str(info.value)
    assert str(d / "generation_config.json") in str(info.value)


def test_unreadable_generation_config(tmp_path: Path) -> None:
    d = with_config(tmp_path, None)
    (d / "generation_config.json").write_text("{oops")
    with pytest.raises(InputError) as info:
        load(d)
    assert f"{d / 'generation_config.json'}: unreadable generation_config.json" in str(info.value)
    assert "--doc-sep-id" in str(info.value)


# -- unreadable tokenizers --------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe\x00garbage", b"{not json", b'{"version": "1.0"}', b"[]", b""],
)
def test_garbage_tokenizer_json_is_input_error_with_path(tmp_path: Path, content: bytes) -> None:
    d = tmp_path / "bad"
    d.mkdir()
    (d / "tokenizer.json").write_bytes(content)
    for spec in (d, d / "tokenizer.json"):
        with pytest.raises(InputError) as info:
            load(spec)
        msg = str(info.value)
        assert msg.startswith(f"{d / 'tokenizer.json'}: not a readable Hugging Face tokenizer.json")
        assert "`byte`" in msg


def test_missing_tokenizer_path(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load(tmp_path / "absent")
    assert f"--tokenizer {tmp_path / 'absent'}: no such file or directory" in str(info.value)


def test_directory_without_tokenizer_json(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load(tmp_path)
    assert f"--tokenizer {tmp_path}: the directory holds no tokenizer.json" in str(info.value)


# -- batching ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> HFEncoder:
    texts = [*numbered_docs(200), "héllo wörld", "日本語のテキスト", "emoji 🙂 here"]
    d = bpe_tokenizer(tmp_path_factory.mktemp("bpe"), texts, vocab_size=400)
    enc = load(d)
    assert isinstance(enc, HFEncoder)
    return enc


def test_bpe_separator_from_its_config(bpe: HFEncoder) -> None:
    assert bpe.identity.doc_sep_id == bpe.tokenizer.token_to_id(EOT)
    (ids,) = encode(bpe, [EOT])
    assert bpe.identity.doc_sep_id not in ids


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=12))
def test_batch_equals_one_by_one_bpe(bpe: HFEncoder, texts: list[str]) -> None:
    batched = encode(bpe, texts)
    singles = [bpe.tokenizer.encode(t, add_special_tokens=False).ids for t in texts]
    assert batched == singles
    assert len(batched) == len(texts)

