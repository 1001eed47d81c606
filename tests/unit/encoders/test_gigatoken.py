"""The gigatoken engine (issue 10): exact ids or a clean decline, on the parity set.

The reference is Hugging Face ``tokenizers`` with ``encode_special_tokens = True`` and
``add_special_tokens=False``; GPT-2 is also checked against tiktoken, an independent
implementation."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FIXTURES, GPT2_DIR
from hypothesis import given, settings
from hypothesis import strategies as st
from parity_corpus import parity_texts

from prep.encoders.gigatoken import (
    Declined,
    FlatIds,
    GigatokenEncoder,
    load_gigatoken,
    parse_members,
    plan,
    planned_json,
)

# Which parity tokenizers the engine takes: a silent decline would make parity trivially
# true, so each decision is pinned, with the reason of each decline.
EXPECTED = {
    "gpt2": None,
    "bpe-trained": None,
    "cl100k": "gigatoken refused the file: Unknown pre_tokenizer Split regexes",
    "nfkc-metaspace": "normalizer 'Sequence' is not supported",
}


def hf_reference(path: Path) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.encode_special_tokens = True

    def encode(texts: list[str], utf8: list[bytes]) -> FlatIds:
        encs = tok.encode_batch(texts, add_special_tokens=False)
        return FlatIds.of([np.array(e.ids, dtype=np.uint32) for e in encs])

    encode.tokenizer = tok  # type: ignore[attr-defined]
    return encode


@pytest.fixture(scope="module")
def tokenizers(parity_set: dict[str, Path]) -> dict[str, Path]:
    return parity_set


def vocab_documents(ref: Any) -> list[str]:
    """Every vocabulary entry's text as a document: words BPE would not reach by merges
    (GPT-2 keeps ``ignore_merges`` off) are where a fast engine's shortcut would show."""
    from tokenizers import decoders

    dec = decoders.ByteLevel()
    vocab = ref.tokenizer.get_vocab(with_added_tokens=False)
    return [t for t in (dec.decode([tok]) for tok in vocab) if t and "\ufffd" not in t]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_engine_is_exact_or_declines_with_the_reason(name: str, tokenizers: dict[str, Path]
                                                     ) -> None:
    path = tokenizers[name]
    ref = hf_reference(path)
    if EXPECTED[name] is not None:
        with pytest.raises(Declined, match=EXPECTED[name]):
            load_gigatoken(path.read_bytes(), ref)
        return
    engine = load_gigatoken(path.read_bytes(), ref)
    texts = parity_texts() + vocab_documents(ref)
    utf8 = [t.encode("utf-8") for t in texts]
    got, want = engine.encode_flat(texts, utf8), ref(texts, utf8)
    assert np.array_equal(got.offsets, want.offsets)
    assert np.array_equal(got.ids, want.ids)
    # Special-token text is encoded by gigatoken itself (nothing routed), and is present.
    assert engine.routed(texts, utf8) == []
    assert sum("<|endoftext|>" in t for t in texts) > 10


def test_gpt2_ids_equal_tiktoken_encode_ordinary() -> None:
    from golden_corpus import tiktoken_gpt2

    enc = tiktoken_gpt2(FIXTURES)
    path = GPT2_DIR / "tokenizer.json"
    engine = load_gigatoken(path.read_bytes(), hf_reference(path))
    texts = parity_texts()
    got = engine.encode_flat(texts, [t.encode("utf-8") for t in texts]).split()
    for text, ids in zip(texts, got, strict=True):
        assert ids.tolist() == enc.encode_ordinary(text), text[:60]


def test_special_token_text_is_ordinary_text_in_order() -> None:
    path = GPT2_DIR / "tokenizer.json"
    engine = load_gigatoken(path.read_bytes(), hf_reference(path))
    texts = ["Hello world", "a <|endoftext|> b", "Hi", "<|endoftext|>", "Hello world"]
    utf8 = [t.encode() for t in texts]
    assert engine.routed(texts, utf8) == []
    got = [a.tolist() for a in engine.encode_flat(texts, utf8).split()]
    # tiktoken's encode_ordinary gives these; gigatoken given the file with its special
    # token would give [64, 220, 50256, 275] for the second one.
    assert got == [[15496, 995], [64, 1279, 91, 437, 1659, 5239, 91, 29, 275], [17250],
                   [27, 91, 437, 1659, 5239, 91, 29], [15496, 995]]


def test_text_of_a_non_special_added_token_goes_to_the_reference(tmp_path: Path) -> None:
    # tokenizers splits a non-special added token out even with encode_special_tokens.
    config = gpt2_config()
    config["added_tokens"].append({"id": 50257, "content": "[NOTE]", "single_word": False,
                                   "lstrip": True, "rstrip": False, "normalized": False,
                                   "special": False})
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    ref = hf_reference(path)
    engine = load_gigatoken(path.read_bytes(), ref)
    texts = ["plain text", "see [NOTE] here", "<|endoftext|> [NOTE]", "more plain text"]
    utf8 = [t.encode() for t in texts]
    assert engine.routed(texts, utf8) == [1, 2]
    got, want = engine.encode_flat(texts, utf8), ref(texts, utf8)
    assert np.array_equal(got.ids, want.ids) and np.array_equal(got.offsets, want.offsets)
    assert 50257 in got.split()[1].tolist()


def test_a_batch_of_only_special_text_and_an_empty_batch() -> None:
    path = GPT2_DIR / "tokenizer.json"
    engine = load_gigatoken(path.read_bytes(), hf_reference(path))
    only = engine.encode_flat(["<|endoftext|>"], [b"<|endoftext|>"])
    assert only.offsets.tolist() == [0, 7]
    empty = engine.encode_flat([], [])
    assert empty.ids.size == 0 and empty.offsets.tolist() == [0]


def test_the_same_ids_with_awkward_kept_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """prep's own processes keep awkward out (``prep.startup.UNNEEDED``): gigatoken then
    returns one numpy view per document instead of an awkward Array, and the engine must give
    the same ids, offsets included (empty documents, an empty batch, one document)."""
    path = GPT2_DIR / "tokenizer.json"
    engine = load_gigatoken(path.read_bytes(), hf_reference(path))
    texts = ["", *parity_texts(), ""]
    batches = [texts, texts[1:2], []]
    with_awkward = [engine.encode_fast([t.encode() for t in b]) for b in batches]
    monkeypatch.setitem(sys.modules, "awkward", None)
    assert isinstance(engine._backend.encode_batch([b"a"], parallel=False), list)  # the premise
    for batch, want in zip(batches, with_awkward, strict=True):
        got = engine.encode_fast([t.encode() for t in batch])
        assert got.ids.dtype == want.ids.dtype and got.offsets.dtype == want.offsets.dtype
        assert np.array_equal(got.offsets, want.offsets)
        assert np.array_equal(got.ids, want.ids)


def gpt2_config() -> dict[str, Any]:
    return json.loads((GPT2_DIR / "tokenizer.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("change", "reason"), [
    (lambda c: c.update(normalizer={"type": "NFKC"}), "normalizer 'NFKC' is not supported"),
    (lambda c: c["model"].update(dropout=0.1), "dropout=0.1"),
    (lambda c: c["model"].update(byte_fallback=True), "byte_fallback"),
    (lambda c: c["model"].update(type="WordPiece"), "model 'WordPiece' is not a BPE"),
    (lambda c: c["pre_tokenizer"].update(add_prefix_space=True), "add_prefix_space"),
    (lambda c: c.update(pre_tokenizer={"type": "Whitespace"}), "Whitespace is not byte-level"),
    (lambda c: c.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\p{L}+|\s+|."}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
         "use_regex": False}]}), "gigatoken refused the file: Unknown pre_tokenizer Split"),
])
def test_declines_what_it_cannot_reproduce(change: Any, reason: str) -> None:
    config = gpt2_config()
    change(config)
    ref = hf_reference(GPT2_DIR / "tokenizer.json")
    with pytest.raises(Declined, match=reason):
        load_gigatoken(json.dumps(config).encode(), ref)


def test_declines_when_a_probe_differs_from_the_reference(tokenizers: dict[str, Path]) -> None:
    # The engine loads GPT-2 but is held against another tokenizer: the probes must catch it.
    with pytest.raises(Declined, match="differ from tokenizers' on the probe text 'Hello world'"):
        load_gigatoken((GPT2_DIR / "tokenizer.json").read_bytes(),
                       hf_reference(tokenizers["bpe-trained"]))


def test_engine_name_is_stable() -> None:
    assert GigatokenEncoder.name == "gigatoken"


# -- reading tokenizer.json once ---------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=6),
       st.sampled_from(["", " ", "\n  ", "\t\r\n"]), st.booleans())
def test_parse_members_is_json_loads_with_spans(obj: dict[str, Any], pad: str,
                                                ascii_only: bool) -> None:
    # json.loads is the oracle for the values; each span, cut out and parsed alone, must
    # give its member's value again.
    text = pad + json.dumps(obj, ensure_ascii=ascii_only, indent=None if pad else 2) + pad
    members, spans = parse_members(text)
    assert members == json.loads(text)
    for key, (start, end) in spans.items():
        assert json.loads(text[start:end]) == members[key]


@pytest.mark.parametrize("text", ['[1]', '{"a": 1,}', '{"a" 1}', '{"a": 1} x', '{"a": 1',
                                  '{1: 2}', ""])
def test_parse_members_refuses_what_is_not_one_object(text: str) -> None:
    with pytest.raises(ValueError):
        parse_members(text)


@pytest.mark.parametrize("name", ["gpt2", "bpe-trained", "cl100k"])
def test_specials_removed_in_place_equals_serialising_again(
    name: str, tokenizers: dict[str, Path]
) -> None:
    # Replacing added_tokens in the file's own bytes (the remembered plan's cut, at byte
    # offsets: cl100k's text is not ASCII) is only a faster way to write the whole
    # configuration again without the special tokens: both parse the same.
    raw = tokenizers[name].read_bytes()
    steps = plan(raw)
    assert steps == json.loads(json.dumps(steps))  # what the memo stores and gives back
    fast = json.loads(planned_json(raw, steps))
    text = raw.decode("utf-8")
    whole = json.loads(text)
    whole["added_tokens"] = [t for t in whole["added_tokens"] if not t["special"]]
    assert fast == whole
    assert not any(t.get("special") for t in fast.get("added_tokens") or [])
