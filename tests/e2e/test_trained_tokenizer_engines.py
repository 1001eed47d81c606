"""A tokenizer ``prep train-tokenizer`` trained, run by ``prep prepare`` at full speed: with
``--pre-tokenizer gpt2|gpt4|o200k`` the fast engine is chosen under ``--engine auto`` (the
log and ``_PROVENANCE.json`` say so) and writes exactly the bytes of ``--engine hf``; and one
number of ids everywhere: ``--vocab-size`` (special tokens included), ``training.json``,
``prep.Tokenizer.load``, Hugging Face's ``get_vocab_size()`` and the dataset's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import dir_bytes, write_parquet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from parity_corpus import parity_texts
from tokenizers import Tokenizer as HFTokenizer

import prep

VOCAB = 400


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The parity texts (emoji, CJK, NUL, whitespace runs, special-token text, GPT-2's
    golden documents), in small row groups."""
    return write_parquet(tmp_path_factory.mktemp("c") / "part-0.parquet", parity_texts(),
                         row_group_size=40)


# gpt2 end to end by default; gpt4 and o200k with -m soak (their fast engine is chosen and
# exact by the library test below, which builds it as prepare does: probes, guard)
@pytest.mark.parametrize("name", ["gpt2", pytest.param("gpt4", marks=pytest.mark.soak),
                                  pytest.param("o200k", marks=pytest.mark.soak)])
def test_auto_runs_the_fast_engine_with_hfs_ids(cli, corpus: Path, tmp_path: Path,
                                                name: str) -> None:
    tok = tmp_path / "tok"
    trained = cli("train-tokenizer", "--source", corpus, "--pre-tokenizer", name,
                  "--vocab-size", VOCAB, "--special-token", "<|endoftext|>",
                  "--special-token", "<pad>", "--out", tok, "--workers", 1)
    assert trained.code == 0, trained.err
    record = json.loads((tok / "training.json").read_text())
    assert record["pre_tokenizer"]["name"] == name
    args = ["--source", corpus, "--tokenizer", tok, "--val-fraction", "0.1", "--workers", 1,
            "--dataset", "d"]
    auto = cli("prepare", "--out", tmp_path / "auto", *args)
    hf = cli("prepare", "--out", tmp_path / "hf", *args, "--engine", "hf")
    assert (auto.code, hf.code) == (0, 0), auto.err + hf.err
    assert "engine: gigatoken (reproduces" in auto.err and "engine: hf (" not in auto.err
    provenance = json.loads((tmp_path / "auto" / "_PROVENANCE.json").read_text())
    assert provenance["engine"] == "gigatoken"
    assert dir_bytes(tmp_path / "auto") == dir_bytes(tmp_path / "hf")
    manifest = json.loads((tmp_path / "auto" / "_MANIFEST.json").read_text())
    hf_tok = HFTokenizer.from_file(str(tok / "tokenizer.json"))
    loaded = prep.Tokenizer.load(tok)
    assert (VOCAB == record["vocabulary"]["size"] == loaded.vocab_size
            == hf_tok.get_vocab_size() == manifest["vocab_size"])
    assert manifest["doc_sep_id"] == VOCAB - 2 == hf_tok.token_to_id("<|endoftext|>")
    assert loaded.pre_tokenizer == name


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, object]]:
    """Per pattern, a tokenizer trained on the parity texts: (gigatoken guarded, hf)."""
    from prep.encoders.engine import Reference
    from prep.encoders.gigatoken import load_gigatoken
    from prep.tokenizer.files import tokenizer_json

    out = {}
    for name in ("gpt2", "gpt4", "o200k"):
        tok = prep.Tokenizer(parity_texts(), vocabulary_size=VOCAB, pre_tokenizer=name)
        path = tmp_path_factory.mktemp(name) / "tokenizer.json"
        path.write_bytes(tokenizer_json(tok.merges, (), name))
        ref = Reference(str(path))
        out[name] = (load_gigatoken(path.read_bytes(), ref), ref)
    return out


TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.lists(st.sampled_from(
    [" ", "  ", "\n", "\r\n", "'s", "'LL", "12345", "日本", "👍🏽", "\x00", "a", "The", "!?"]),
    max_size=12).map("".join)


@pytest.mark.parametrize("name", ["gpt2", "gpt4", "o200k"])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(TEXT, min_size=1, max_size=6))
def test_the_fast_engine_splits_and_encodes_as_hf_on_any_text(engines, name, texts) -> None:
    fast, ref = engines[name]
    utf8 = [t.encode("utf-8") for t in texts]
    got, want = fast.encode_flat(texts, utf8), ref(texts, utf8)  # type: ignore[attr-defined, operator]
    assert got.ids.tolist() == want.ids.tolist() and got.offsets.tolist() == want.offsets.tolist()
