"""Training with a pre-tokenizer (``gpt2``, ``gpt4``, ``o200k``) against the naive
reference of tests/bpe_reference.py, which splits with Hugging Face's own ``Split`` and
recounts every pair of every piece for every merge: the same merges and counts, both
trainers (compiled and pure-Python, which count distinct pieces with weights); and
``tokenizers`` loading the written ``tokenizer.json`` encodes held-out text (bytes absent
from training included) to the reference's ids.

Corpora are drawn to hit the rules' corners: ties, runs such as ``aaaa``, digits of every
length, punctuation, contractions, emoji, CJK, NUL, whitespace runs and line ends.
``pytest -m deep`` runs many more (opt-in)."""

from __future__ import annotations

import json

import bpe_reference as ref
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer

import prep
from prep.tokenizer import bpe
from prep.tokenizer.files import tokenizer_json
from prep.tokenizer.pieces import PieceTable
from prep.tokenizer.pretokenize import PATTERNS, count_pieces

IMPLEMENTATIONS = [pytest.param(bpe.PyTrainer, id="python")]
if bpe.COMPILED is not None:
    IMPLEMENTATIONS.insert(0, pytest.param(bpe.COMPILED, id="c"))

ATOMS = ["a", "aa", "aaaa", "ab", "the", " the", "The", "1", "12", "1234567", "٣", "!", "!!",
         "...", "'s", "'LL", "'re", "don't", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\x00",
         "日本", "語", "😀", "👍🏽", "é", "e\u0301", "ǅ", "/", "\u00a0"]
TEXT = st.lists(st.sampled_from(ATOMS), max_size=24).map("".join)
CORPUS = st.lists(TEXT, min_size=1, max_size=8)
NAMES = pytest.mark.parametrize("name", list(PATTERNS))


def trained(impl: object, texts: list[str], name: str, size: int, freq: int):
    seq, weights = PieceTable.of(count_pieces(texts, name)).training_input()
    trainer = impl(seq, 256, freq, weights)  # type: ignore[operator]
    merges: list[tuple[int, int, int]] = []
    while 256 + len(merges) < size:
        got = trainer.step(min(7, size - 256 - len(merges)))
        if not got:
            break
        merges.extend(got)
    return merges


@NAMES
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPUS, st.integers(256, 320), st.integers(1, 3))
def test_same_merges_as_the_reference(impl, name, texts, size, freq) -> None:
    assert trained(impl, texts, name, size, freq) == ref.train_split(texts, PATTERNS[name],
                                                                      size, freq)


@pytest.mark.deep
@NAMES
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXT, min_size=1, max_size=30), st.integers(256, 500), st.integers(1, 4))
def test_same_merges_as_the_reference_deep(impl, name, texts, size, freq) -> None:
    assert trained(impl, texts, name, size, freq) == ref.train_split(texts, PATTERNS[name],
                                                                      size, freq)


@NAMES
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPUS, st.lists(TEXT | st.text(max_size=20), max_size=4), st.integers(256, 320))
def test_tokenizers_loads_the_file_and_gives_the_references_ids(name, texts, held_out,
                                                                size) -> None:
    tok = prep.Tokenizer(texts, vocabulary_size=size + 1, minimum_pair_frequency=1,
                         pre_tokenizer=name, special_tokens=["<|end|>"])
    want = [(a, b) for a, b, _ in ref.train_split(texts, PATTERNS[name], size, 1)]
    assert list(tok.merges) == want
    raw = tokenizer_json(tok.merges, ["<|end|>"], name)
    hf = HFTokenizer.from_str(raw.decode("utf-8"))
    hf.encode_special_tokens = True
    assert hf.get_vocab_size() == tok.vocab_size == len(want) + 257
    for text in [*held_out, "\x01\x7f\xff unseen 🦀 ٣٤٥", *texts]:
        ids = ref.encode_split(text, PATTERNS[name], want)
        assert hf.encode(text, add_special_tokens=False).ids == ids == tok.encode(text)
        assert tok.decode(ids) == text


def test_a_worked_example_gpt2() -> None:
    """By hand from the rules: GPT-2's split of ``"aaaa aaaa, aa"`` is ``aaaa``, `` aaaa``,
    ``,``, `` aa``; pairs inside pieces only: (97, 97) 3 + 3 + 1 = 7, (32, 97) 2: (97, 97)
    -> 256 (count 7) leaves ``[256, 256]``, ``[32, 256, 256]``, ``[44]``, ``[32, 256]``:
    (256, 256) 2 and (32, 256) 2 tie, the smaller pair wins, (32, 256) -> 257; that leaves
    (256, 256) once (`` aaaa`` is now ``[257, 256]``) and (257, 256) once: with a minimum
    frequency of 1 the smaller, (256, 256) -> 258 (count 1)."""
    tok = prep.Tokenizer(["aaaa aaaa, aa"], vocabulary_size=259, minimum_pair_frequency=1,
                         pre_tokenizer="gpt2")
    assert tok.merges == ((97, 97), (32, 256), (256, 256))
    assert prep.Tokenizer(["aaaa aaaa, aa"], vocabulary_size=259,
                          pre_tokenizer="gpt2").merges == ((97, 97), (32, 256))  # then < 2
    assert tok.encode("aaaa aaaa") == [258, 257, 256]
    assert json.loads(tokenizer_json(tok.merges, (), "gpt2"))["pre_tokenizer"][
        "pretokenizers"][0]["pattern"] == {"Regex": PATTERNS["gpt2"]}
