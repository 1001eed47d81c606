"""``prep.Tokenizer``: the spec's worked examples, the option rules, the byte strategy,
state round trips, and the written files read back by Hugging Face ``tokenizers`` (the
reference for ids: tests/bpe_reference.py, written from the spec)."""

from __future__ import annotations

import json

import bpe_reference as ref
import pytest
from tokenizers import Tokenizer as HFTokenizer

import prep
from prep.encoders import vocab_bytes
from prep.tokenizer import files
from prep.tokenizer.model import Tokenizer


@pytest.mark.parametrize(
    ("corpus", "options", "learned", "encoding"),
    [
        ("abababab", {"vocabulary_size": 257}, [b"ab"], [256, 256, 256, 256]),
        ("aaa", {"minimum_pair_frequency": 2}, [b"aa"], [256, 97]),
        ("aaa", {"minimum_pair_frequency": 3}, [], [97, 97, 97]),
    ],
)
def test_worked_examples(corpus, options, learned, encoding) -> None:
    with Tokenizer(corpus, **options) as tok:
        assert list(tok.vocabulary[256:]) == learned
        assert tok.encode(corpus) == encoding
        assert tok.decode(encoding) == corpus


def test_aaa_merges_with_count_two() -> None:
    assert Tokenizer.__module__ == "prep.tokenizer.model"
    assert [m[2] for m in ref.train([b"aaa"], 512, 2)] == [2]
    assert prep.Tokenizer("aaa").merges == ((97, 97),)


def test_byte_strategy_worked_example() -> None:
    tok = prep.Tokenizer("cab\n", method="byte")
    assert tok.vocabulary == (b"\n", b"a", b"b", b"c")
    assert tok.encode("cab\n") == [3, 1, 2, 0]
    assert tok.vocab_size == 4 and tok.method == "byte"
    assert prep.Tokenizer(["b\n", "ca"], method="byte").vocabulary == tok.vocabulary


def test_byte_strategy_refuses_an_absent_byte_naming_it() -> None:
    tok = prep.Tokenizer("cab", method="byte")
    with pytest.raises(ValueError, match=r"byte 0x64 at position 2 "):
        tok.encode("abd")
    with pytest.raises(ValueError, match=r"byte 0x00 at position 0 "):
        tok.encode_bytes(b"\x00")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "wordpiece"}, r"method 'wordpiece': choose 'bpe' or 'byte'"),
        ({"method": "byte", "vocabulary_size": 512}, r"vocabulary_size=512 was given"),
        ({"method": "byte", "minimum_pair_frequency": 3}, r"minimum_pair_frequency=3"),
        ({"vocabulary_size": 255}, r"256 <= vocabulary_size <= 2\*\*32-1"),
        ({"vocabulary_size": 2**32}, r"256 <= vocabulary_size <= 2\*\*32-1"),
        ({"vocabulary_size": True}, r"vocabulary_size=True"),
        ({"minimum_pair_frequency": 0}, r"minimum_pair_frequency=0: an integer >= 1"),
        ({"minimum_pair_frequency": 1.5}, r"minimum_pair_frequency=1.5"),
    ],
)
def test_option_errors_say_what_and_what_is_allowed(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        prep.Tokenizer("abc", **kwargs)


def test_byte_mode_accepts_the_default_frequency() -> None:
    assert prep.Tokenizer("ab", method="byte", minimum_pair_frequency=2).vocab_size == 2


def test_any_bytes_round_trip() -> None:
    data = [b"\x00\x00\xff\xfe\x00\x00", b"\xc3(\x00\x00"]
    tok = prep.Tokenizer(data, vocabulary_size=300, minimum_pair_frequency=1)
    merges = [(a, b) for a, b in tok.merges]
    for doc in [*data, b"\x80\x81\x00\x00\x00"]:
        ids = tok.encode_bytes(doc)
        assert ids == ref.encode(doc, merges)
        assert tok.decode_bytes(ids) == doc
    with pytest.raises(ValueError, match=r"id 9999: ids are integers in 0\.\."):
        tok.decode_bytes([9999])


@pytest.mark.parametrize("method", ["bpe", "byte"])
def test_state_round_trip_keeps_every_id(method) -> None:
    text = "the cat sat on the mat; the cat ate"
    tok = prep.Tokenizer(text, method=method)
    state = json.loads(json.dumps(tok.state()))
    again = prep.Tokenizer.from_state(state)
    assert again.vocabulary == tok.vocabulary and again.encode(text) == tok.encode(text)


@pytest.mark.parametrize(
    "state",
    [{"version": 2, "method": "bpe", "merges": []}, {"version": 1, "method": "bpe",
     "merges": [[256, 97]]}, {"version": 1, "method": "byte", "bytes": [2, 1]}],
)
def test_bad_states_are_refused(state) -> None:
    with pytest.raises(ValueError):
        prep.Tokenizer.from_state(state)


def test_hugging_face_gives_the_reference_ids(tmp_path) -> None:
    """The written tokenizer.json, loaded by ``tokenizers``: held-out text, bytes never seen
    in training, and the special token's text, which stays ordinary text."""
    docs = ["hello world, hello there", "naïve café ☕ — the the the", "aaaa\x00\x00 tab\t"]
    tok = prep.Tokenizer(docs, vocabulary_size=330, minimum_pair_frequency=1)
    merges = [(a, b) for a, b in tok.merges]
    path = tmp_path / files.TOKENIZER_FILE
    path.write_bytes(files.tokenizer_json(merges, ["<|endoftext|>"]))
    hf = HFTokenizer.from_file(str(path))
    hf.encode_special_tokens = True
    held_out = ["hello café", "ZZZ ☃ \x7f\x01 world", "<|endoftext|> hello", ""]
    for text in docs + held_out:
        want = ref.encode(text.encode("utf-8"), merges)
        assert hf.encode(text, add_special_tokens=False).ids == want
        assert tok.encode(text) == want
        assert hf.decode(want) == text
    assert hf.token_to_id("<|endoftext|>") == tok.vocab_size
    assert prep.Tokenizer.load(tmp_path).merges == tok.merges


def test_load_reads_a_byte_directory(tmp_path) -> None:
    (tmp_path / vocab_bytes.BYTE_FILE).write_bytes(vocab_bytes.byte_file([10, 97], ["<s>"]))
    assert prep.Tokenizer.load(tmp_path).vocabulary == (b"\n", b"a")
    with pytest.raises(prep.InputError, match=r"holds neither tokenizer\.json"):
        prep.Tokenizer.load(tmp_path / "nothing")
