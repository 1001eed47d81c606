"""Both BPE trainers (the compiled one and its pure-Python twin) against the naive
reference of tests/bpe_reference.py, written from the spec's rules: the same merges and
counts on generated corpora made to hit the rules' corners (ties, runs such as ``aaaa``,
NUL, bytes that are not UTF-8, one-byte and empty documents, a minimum frequency of 1).

``pytest -m deep tests/property/test_bpe_rules.py`` runs the same comparison on many more
and larger corpora (opt-in)."""

from __future__ import annotations

import bpe_reference as ref
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prep
from prep.tokenizer import bpe

IMPLEMENTATIONS = [pytest.param(bpe.PyTrainer, id="python")]
if bpe.COMPILED is not None:
    IMPLEMENTATIONS.insert(0, pytest.param(bpe.COMPILED, id="c"))

# Small alphabets make ties and runs common; the full byte range brings NUL, 0xff and
# bytes that are not UTF-8.
ALPHABETS = st.sampled_from([b"a", b"ab", b"abc", b"\x00a", b"\xff\xfe\x00", b"ab \n"])
DOCUMENT = st.one_of(
    ALPHABETS.flatmap(lambda a: st.lists(st.sampled_from(list(a)), max_size=40).map(bytes)),
    st.binary(max_size=12),
    st.sampled_from([b"", b"a", b"\x00", b"aaaa", b"aaaaa", b"abab", b"aaabaaab"]),
)
CORPUS = st.lists(DOCUMENT, max_size=8)


def trained(impl: object, docs: list[bytes], size: int, freq: int, chunk: int):
    """Merges from ``impl``, asked for in chunks of ``chunk`` (as a checkpointing run does)."""
    trainer = impl(bpe.flat_sequence(docs), 256, freq)  # type: ignore[operator]
    merges: list[tuple[int, int, int]] = []
    while 256 + len(merges) < size:
        got = trainer.step(min(chunk, size - 256 - len(merges)))
        if not got:
            break
        merges.extend(got)
    return merges


def check(impl: object, docs: list[bytes], size: int, freq: int, chunk: int) -> None:
    want = ref.train(docs, size, freq)
    assert trained(impl, docs, size, freq, chunk) == want
    pieces = [bytes([b]) for b in range(256)]
    for a, b, _ in want:
        pieces.append(pieces[a] + pieces[b])
    assert len(set(pieces)) == len(pieces)  # what tokenizer.json's vocab needs


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPUS, st.integers(256, 330), st.integers(1, 3), st.integers(1, 9))
def test_same_merges_as_the_reference(impl, docs, size, freq, chunk) -> None:
    check(impl, docs, size, freq, chunk)


@pytest.mark.deep
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(DOCUMENT, max_size=30), st.integers(256, 600), st.integers(1, 4),
       st.integers(1, 50))
def test_same_merges_as_the_reference_deep(impl, docs, size, freq, chunk) -> None:
    check(impl, docs, size, freq, chunk)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_sequence_resumes_where_it_stopped(impl) -> None:
    """``sequence()`` with the merges so far is all a resumed training needs: a trainer
    built from it makes the same remaining merges."""
    docs = [b"abababcabc aaaa", b"abcabcabcaaaaaa", b"", b"x"]
    whole = trained(impl, docs, 270, 1, 100)
    first = impl(bpe.flat_sequence(docs), 256, 1)
    done = first.step(5)
    again = impl(first.sequence(), 256 + len(done), 1)
    assert done + again.step(100)[: len(whole) - 5] == whole


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CORPUS, st.lists(DOCUMENT, max_size=3), st.integers(256, 330), st.integers(1, 2))
def test_encoding_applies_each_merge_in_order(docs, held_out, size, freq) -> None:
    """``Tokenizer.encode_bytes`` (lowest rank first) gives the rules' ids: every merge in
    training order, left to right without overlap, on training and held-out bytes."""
    tok = prep.Tokenizer(docs, vocabulary_size=size, minimum_pair_frequency=freq)
    for data in docs + held_out:
        ids = tok.encode_bytes(data)
        assert ids == ref.encode(data, list(tok.merges))
        assert tok.decode_bytes(ids) == data
