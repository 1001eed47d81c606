"""The files of a trained tokenizer: GPT-2's byte table checked against the GPT-2
tokenizer.json in tests/fixtures, a written tokenizer.json loaded by Hugging Face
``tokenizers`` and encoding as the naive BPE of tests/bpe_reference.py does, the merge table
read back, and the refusals of files prep did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bpe_reference import encode
from conftest import GPT2_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from prep.encoders.vocab_bytes import byte_file
from prep.errors import InputError
from prep.tokenizer.files import (
    byte_to_unicode,
    generation_config,
    load_state,
    merges_of,
    pieces_of,
    tokenizer_json,
)

# "hello hello help": h=104 e=101 l=108 o=111 p=112 space=32
MERGES = [(104, 101), (108, 108), (256, 257), (258, 111), (256, 108)]


def test_the_byte_table_is_gpt2s() -> None:
    vocab = json.loads((GPT2_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    table = byte_to_unicode()
    assert sorted(table) == list(range(256))
    assert [vocab[table[b]] for b in range(4)] == [188, 189, 190, 191]  # GPT-2's own order
    singles = {t for t in vocab if len(t) == 1}
    assert set(table.values()) <= singles and len(set(table.values())) == 256
    assert (table[ord(" ")], table[ord("\n")], table[ord("A")]) == ("Ġ", "Ċ", "A")


def test_pieces_are_the_bytes_then_each_merge_concatenated() -> None:
    p = pieces_of(MERGES)
    assert p[:256] == [bytes([b]) for b in range(256)]
    assert p[256:] == [b"he", b"ll", b"hell", b"hello", b"hel"]


def write(tmp_path: Path, merges: list[tuple[int, int]], specials: tuple[str, ...] = ()) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_bytes(tokenizer_json(merges, specials))
    return path


def test_hugging_face_loads_it_and_encodes_as_the_naive_bpe(tmp_path: Path) -> None:
    tok = Tokenizer.from_file(str(write(tmp_path, MERGES, ("<|end|>",))))
    for text in ["hello hello help", "hel", "oh hell\n", "ü€"]:
        assert tok.encode(text).ids == encode(text.encode(), MERGES), text
        assert tok.decode(tok.encode(text).ids) == text
    assert tok.token_to_id("<|end|>") == 256 + len(MERGES)
    assert tok.get_vocab_size() == 256 + len(MERGES) + 1


@settings(max_examples=25, deadline=None)
@given(seed=st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), max_size=8))
def test_merges_read_back_as_written(tmp_path_factory: pytest.TempPathFactory,
                                     seed: list[tuple[int, int]]) -> None:
    merges: list[tuple[int, int]] = []
    for a, b in seed:  # each merge may use an id made before it
        merges.append((a % (256 + len(merges)), b))
    pieces = pieces_of(merges)
    if len(set(pieces)) != len(pieces):
        with pytest.raises(ValueError, match="two ids share the piece"):
            tokenizer_json(merges)
        return
    path = write(tmp_path_factory.mktemp("t"), merges)
    assert merges_of(path) == merges


def test_two_ids_of_one_piece_cannot_be_written() -> None:
    with pytest.raises(ValueError) as e:
        tokenizer_json([(97, 98), (97, 98)])
    assert str(e.value) == "two ids share the piece 'ab'; tokenizer.json cannot express it"


def test_the_bytes_are_deterministic_and_the_recipe_docs_tokenizer_md_checks() -> None:
    raw = tokenizer_json(MERGES, ("<|end|>",))
    assert raw == tokenizer_json(MERGES, ("<|end|>",)) and raw.endswith(b"}\n")
    model = json.loads(raw)["model"]
    assert (model["type"], model["unk_token"], model["byte_fallback"], model["ignore_merges"]) \
        == ("BPE", None, False, False)
    assert model["merges"][:2] == ["h e", "l l"]
    assert json.loads(raw)["pre_tokenizer"] == {"type": "ByteLevel", "add_prefix_space": False,
                                                "trim_offsets": False, "use_regex": False}


def test_generation_config_names_the_separator() -> None:
    assert json.loads(generation_config(300)) == {"eos_token_id": 300}


def test_gpt2s_tokenizer_json_is_refused_for_its_byte_order() -> None:
    path = GPT2_DIR / "tokenizer.json"
    with pytest.raises(InputError) as e:
        merges_of(path)
    assert str(e.value) == (f"{path}: ids 0..255 are not the raw bytes (not written by prep); "
                            "give a directory prep train-tokenizer wrote")


def test_a_merge_that_does_not_make_its_id_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, MERGES)
    body = json.loads(path.read_text(encoding="utf-8"))
    body["model"]["merges"][1], body["model"]["merges"][2] = (body["model"]["merges"][2],
                                                              body["model"]["merges"][1])
    path.write_text(json.dumps(body), encoding="utf-8")
    with pytest.raises(InputError) as e:
        merges_of(path)
    assert str(e.value) == (f"{path}: merge 1 'he ll' does not make id 257; give a directory "
                            "prep train-tokenizer wrote")


def test_a_file_that_is_no_bpe_tokenizer_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"type": "WordLevel"}}')
    with pytest.raises(InputError) as e:
        merges_of(path)
    assert str(e.value) == (f"{path}: not a tokenizer.json with a BPE model (KeyError('vocab')); "
                            "give a directory prep train-tokenizer wrote")


def test_load_state_of_a_bpe_a_byte_and_an_empty_directory(tmp_path: Path) -> None:
    bpe, byte, empty = (tmp_path / n for n in ("bpe", "byte", "empty"))
    for d in (bpe, byte, empty):
        d.mkdir()
    write(bpe, MERGES)
    (byte / "byte_vocabulary.json").write_bytes(byte_file([10, 97, 98]))
    assert load_state(bpe) == {"version": 1, "method": "bpe", "merges": [list(m) for m in MERGES]}
    assert load_state(byte) == {"version": 1, "method": "byte", "bytes": [10, 97, 98]}
    with pytest.raises(InputError) as e:
        load_state(empty)
    assert str(e.value) == (f"{empty}: holds neither tokenizer.json nor byte_vocabulary.json; "
                            "give the --out directory of prep train-tokenizer")
