"""Exact on every character (issue 38): a corpus holding every guarded code point, in
several contexts, mixed with ordinary text, gives the same .bin bytes with the default
engine as with ``--engine hf``; real ``python scripts/prepare.py`` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, GPT2_DIR, make_corpus, numbered_docs, run_prepare_subprocess

from prep.encoders.guard import parse_ranges, pattern_key, shipped, split_pattern
from prep.encoders.guard_derive import document, with_pattern
from prep.state.versions import installed_version

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def guarded_corpus(root: Path, pattern: str) -> tuple[Path, int]:
    """Documents of every guarded code point (40 per document, each in every derivation
    context), each between two plain documents; and how many are guarded."""
    entry = shipped("gigatoken", installed_version("gigatoken") or "")[pattern_key(pattern)]
    cps = [c for lo, hi in parse_ranges(entry["ranges"]) for c in range(lo, hi + 1)]
    guarded = ["Plain words, 1234 digits.\n" + " ".join(document(c) for c in cps[i : i + 40])
               for i in range(0, len(cps), 40)]
    plain = numbered_docs(len(guarded) + 1)
    docs = [d for pair in zip(plain, guarded, strict=False) for d in pair] + plain[-1:]
    return make_corpus(root, [docs[: len(docs) // 2], docs[len(docs) // 2 :]]), len(guarded)


@pytest.mark.parametrize("name", ["gpt2", "llama3"])
def test_default_engine_gives_the_references_bytes(name: str, tmp_path: Path) -> None:
    if name == "gpt2":
        tok = GPT2_DIR / "tokenizer.json"
    else:
        (tmp_path / "tok").mkdir()
        tok = with_pattern(FIXTURES / "cl100k" / "tokenizer.json", LLAMA3,
                           tmp_path / "tok" / "tokenizer.json")
    pattern = split_pattern(json.loads(tok.read_text(encoding="utf-8")))
    assert pattern is not None
    source, n_guarded = guarded_corpus(tmp_path / "src", pattern)
    outs = {}
    for engine in ("auto", "hf"):
        outs[engine] = tmp_path / engine
        p = run_prepare_subprocess(["--source", source, "--tokenizer", tok, "--out",
                                    outs[engine], "--engine", engine, "--val-fraction", "0",
                                    "--doc-sep-id", 50256 if name == "gpt2" else 100257])
        assert p.returncode == 0, p.stderr
    bins = sorted(x.name for x in outs["hf"].glob("*.bin"))
    assert bins
    for b in bins:
        assert (outs["auto"] / b).read_bytes() == (outs["hf"] / b).read_bytes(), b
    prov = json.loads((outs["auto"] / "_PROVENANCE.json").read_text(encoding="utf-8"))
    assert prov["engine"] == "gigatoken"
    # every guarded document went to hf, every plain one through gigatoken
    assert prov["documents_by_engine"] == {"gigatoken": n_guarded + 1, "hf": n_guarded}


def test_auto_falls_back_for_a_pattern_without_a_guard(tmp_path: Path) -> None:
    qwen2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")  # gigatoken knows it; no set ships
    (tmp_path / "tok").mkdir()
    tok = with_pattern(FIXTURES / "cl100k" / "tokenizer.json", qwen2,
                       tmp_path / "tok" / "tokenizer.json")
    source = make_corpus(tmp_path / "src", [numbered_docs(20)])
    p = run_prepare_subprocess(["--source", source, "--tokenizer", tok, "--out",
                                tmp_path / "out", "--val-fraction", "0", "--doc-sep-id", 100257])
    assert p.returncode == 0, p.stderr
    assert "engine: hf (gigatoken cannot reproduce" in p.stderr
    assert "no guard set ships for gigatoken" in p.stderr
    prov = json.loads((tmp_path / "out" / "_PROVENANCE.json").read_text(encoding="utf-8"))
    assert prov["engine"] == "hf" and prov["documents_by_engine"] is None
