"""prep's own engine, ``bpe``: what it accepts (a byte-level BPE without pre-tokenization
laid out as prep writes it) and the reason it declines anything else; its compiled encoder
and pure-Python twin against the naive reference of tests/bpe_reference.py and Hugging
Face ``tokenizers`` on generated documents (runs, ties, NUL, every byte, long documents)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import bpe_reference as ref
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prep.encoders.engine import Reference
from prep.encoders.gigatoken import Declined
from prep.encoders.merges import COMPILED, MergesEncoder, apply_merges, gate, load_merges_engine
from prep.tokenizer.files import tokenizer_json

CORPUS = [b"aaaa aaaa abab", b"the cat sat on the mat", b"\x00\x00\x00 \xff\xfe",
          "日本語 café".encode()]


def merges_of_reference(size: int) -> list[tuple[int, int]]:
    return [(a, b) for a, b, _ in ref.train(CORPUS * 3, size, 1)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, int]]]:
    merges = merges_of_reference(330)
    path = tmp_path_factory.mktemp("m") / "tokenizer.json"
    path.write_bytes(tokenizer_json(merges, ["<|end|>"]))
    return path, merges


def edited(path: Path, change: Any) -> dict[str, Any]:
    config = json.loads(path.read_text(encoding="utf-8"))
    change(config)
    return config


@pytest.mark.parametrize(("change", "why"), [
    (lambda c: c.update(normalizer={"type": "NFC"}), "a normalizer is not supported"),
    (lambda c: c["pre_tokenizer"].update(use_regex=True), "only a ByteLevel pre-tokenizer"),
    (lambda c: c.update(pre_tokenizer={"type": "Sequence", "pretokenizers": []}),
     "only a ByteLevel pre-tokenizer"),
    (lambda c: c["model"].update(dropout=0.1), "BPE option dropout=0.1"),
    (lambda c: c["model"].update(ignore_merges=True), "BPE option ignore_merges=True"),
    (lambda c: c["added_tokens"][0].update(special=False), "an added token that is not special"),
    (lambda c: c["model"]["vocab"].update({"a": 300}), "ids 0..255 are not the raw bytes"),
    (lambda c: c["model"]["merges"].reverse(), "does not make id 256"),
    (lambda c: c["model"].update(type="WordPiece"), "model 'WordPiece' is not a BPE"),
])
def test_anything_else_is_declined_with_the_reason(trained, change, why: str) -> None:
    with pytest.raises(Declined, match=why.replace("(", r"\(")):
        gate(edited(trained[0], change))


def test_the_file_prep_writes_is_accepted_with_its_merges(trained) -> None:
    path, merges = trained
    assert gate(json.loads(path.read_text(encoding="utf-8"))) == merges
    merges_as_lists = edited(path, lambda c: c["model"].update(
        merges=[m.split(" ", 1) for m in c["model"]["merges"]]))
    assert gate(merges_as_lists) == merges  # the list form of newer tokenizers


DOCS = st.lists(st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([b"a", b"aa", b"ab", b" ", b"the", b"\x00", b"\xff", b"\xe6\x97"]),
             max_size=80).map(b"".join),
    st.sampled_from([b"", b"a" * 1000, b"ab" * 700, "日本語 café".encode() * 50]),
), max_size=6)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS)
def test_compiled_twin_reference_and_tokenizers_agree(trained, docs: list[bytes]) -> None:
    path, merges = trained
    engine = MergesEncoder(merges, Reference(str(path)))
    want = [ref.encode(d, merges) for d in docs]
    rank = {p: k for k, p in enumerate(merges)}
    assert [apply_merges(list(d), merges, rank) for d in docs] == want
    got = engine.encode_fast(docs)
    assert [a.tolist() for a in got.split()] == want or (not docs and got.ids.size == 0)
    texts = [d.decode("utf-8", "replace") for d in docs]  # tokenizers takes text
    utf8 = [t.encode("utf-8") for t in texts]
    assert np.array_equal(engine.encode_fast(utf8).ids, engine.reference(texts, utf8).ids)


@pytest.mark.skipif(COMPILED is None, reason="the extension is not built")
def test_the_compiled_encoder_refuses_a_bad_table() -> None:
    with pytest.raises(ValueError, match="merge 0 \\(256, 1\\) names an id not defined"):
        COMPILED(np.array([256, 1], dtype=np.uint32).tobytes())
    with pytest.raises(ValueError, match="uint32 \\(left, right\\) pairs"):
        COMPILED(b"abc")


def test_probes_pass_and_a_wrong_reference_is_declined(trained) -> None:
    path, _ = trained
    raw = path.read_bytes()
    assert load_merges_engine(raw, Reference(str(path))).name == "bpe"
    other = path.parent / "other.json"
    other.write_bytes(tokenizer_json([], ["<|end|>"]))  # no merges: "they're" holds "th"
    with pytest.raises(Declined, match="differ from tokenizers' on a probe text"):
        load_merges_engine(raw, Reference(str(other)))
