"""Deriving the guard sets (issue 38), run here on sample ranges and compared with the
shipped sets restricted to them: a new gigatoken (or tokenizers) version that classifies a
code point differently fails here instead of drifting silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, GPT2_DIR

from prep.encoders.guard import pattern_key, shipped
from prep.encoders.guard_derive import (
    code_points,
    differing,
    document,
    entry,
    fast_engine,
    main,
    restricted,
    with_pattern,
)
from prep.state.versions import installed_version

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
SAMPLES = [(0x32300, 0x32500), (0xA7C0, 0xA7FF), (0x0C50, 0x0C60)]


def shipped_entry(pattern: str) -> dict[str, object]:
    return shipped("gigatoken", installed_version("gigatoken") or "")[pattern_key(pattern)]


def test_the_surrogates_are_skipped_and_each_context_holds_the_code_point() -> None:
    cps = list(code_points(0xD7FF, 0xE000))
    assert cps == [0xD7FF, 0xE000]
    assert document(0x32DBA).startswith("a\U00032DBA'd x\n \U00032DBA\U00032DBA 1")


@pytest.mark.parametrize("first, last", SAMPLES)
def test_gpt2_fresh_derivation_equals_the_shipped_set(first: int, last: int) -> None:
    engine, pattern = fast_engine(GPT2_DIR / "tokenizer.json")
    assert pattern is not None
    found = differing(engine, first, last, batch=64)
    assert found == restricted(shipped_entry(pattern)["ranges"], first, last)  # type: ignore[arg-type]
    if first == 0x32300:
        assert 0x323B0 in found and 0x3232F not in found  # Unicode 17's Extension J starts


def test_llama3_pattern_fresh_derivation_equals_the_shipped_set(tmp_path: Path) -> None:
    path = with_pattern(FIXTURES / "cl100k" / "tokenizer.json", LLAMA3,
                        tmp_path / "tokenizer.json")
    engine, pattern = fast_engine(path)
    assert pattern == LLAMA3
    found = differing(engine, 0xA7C0, 0xA7FF)
    assert found and found == restricted(shipped_entry(LLAMA3)["ranges"], 0xA7C0, 0xA7FF)  # type: ignore[arg-type]


def test_the_program_checks_and_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    gpt2 = str(GPT2_DIR / "tokenizer.json")
    assert main([gpt2, "--name", "gpt2", "--first", "A7C0", "--last", "A7FF", "--check"]) == 0
    assert "gpt2: 5 code points differ in A7C0-A7FF" in capsys.readouterr().out
    out = tmp_path / "guards.json"
    out.write_text(json.dumps({"format": 1, "patterns": {}}), encoding="utf-8")
    assert main([gpt2, "--first", "A7C0", "--last", "A7FF", "--out", str(out)]) == 0
    written = next(iter(json.loads(out.read_text(encoding="utf-8"))["patterns"].values()))
    assert written["searched"] == "A7C0-A7FF" and written["name"] == "gpt2"
    # A drifted shipped set (one code point too few) is reported, exit 1.
    written["ranges"] = written["ranges"][1:]
    out.write_text(json.dumps({"format": 1, "patterns": {pattern_key(written["pattern"]):
                                                         written}}), encoding="utf-8")
    assert main([gpt2, "--first", "A7C0", "--last", "A7FF", "--out", str(out), "--check"]) == 1
    assert "DRIFT" in capsys.readouterr().out
    assert entry(GPT2_DIR / "tokenizer.json", "x", 0x41, 0x7A)["code_points"] == 0
