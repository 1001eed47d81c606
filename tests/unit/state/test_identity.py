"""Identities (``prep.state.identity``): a source file, a source and a tokenizer as the
manifest and checkpoint record them (docs/format.md, ``source`` and ``tokenizer``), read
back exactly, and a forged field refused by its path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prep.state.fields import FieldError
from prep.state.identity import (
    FileIdentity,
    SourceIdentity,
    TokenizerIdentity,
    fingerprint_of,
)

SHA = "ab" * 32


def roundtrip(d: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(d))  # what a file on disk gives back


def test_a_file_writes_its_fingerprint_only_when_it_has_one() -> None:
    plain = FileIdentity("a/part-0.parquet", 120, SHA)
    assert plain.to_json() == {"path": "a/part-0.parquet", "size": 120, "sha256": SHA}
    marked = FileIdentity("b.parquet", 5, None, fingerprint_of({"mtime_ns": 7, "etag": "x"}))
    assert marked.fingerprint == (("etag", "x"), ("mtime_ns", 7))  # one spelling: sorted
    assert marked.to_json() == {"path": "b.parquet", "size": 5, "sha256": None,
                                "fingerprint": {"etag": "x", "mtime_ns": 7}}
    for f in (plain, marked):
        assert FileIdentity.from_json(roundtrip(f.to_json())) == f


def test_a_source_writes_cwd_only_when_it_has_one() -> None:
    files = (FileIdentity("x.parquet", 1, SHA),)
    src = SourceIdentity("local", "/data", "/data", "", None, files)
    assert src.to_json() == {"kind": "local", "uri": "/data", "root": "/data", "revision": None,
                             "files": [{"path": "x.parquet", "size": 1, "sha256": SHA}]}
    old = SourceIdentity("local", "data", "data", "/home/u", "r1", files)
    assert old.to_json()["cwd"] == "/home/u"
    for s in (src, old):
        assert SourceIdentity.from_json(roundtrip(s.to_json())) == s
    assert SourceIdentity.from_json({"kind": "hub", "uri": "hf://datasets/o/n",
                                     "revision": None, "files": []}).root == ""


def test_a_tokenizer_round_trips_with_all_its_keys() -> None:
    tok = TokenizerIdentity("gpt2", "gpt2", SHA, 50257, 50256, None, "generation_config.json")
    assert list(tok.to_json()) == ["spec", "tokenizer_id", "sha256", "vocab_size",
                                   "doc_sep_id", "revision", "doc_sep_from"]
    assert TokenizerIdentity.from_json(roundtrip(tok.to_json())) == tok


@pytest.mark.parametrize(("parse", "d", "message"), [
    (FileIdentity.from_json, {"path": "x", "size": 1}, "sha256: is missing"),
    (FileIdentity.from_json, {"path": "x", "size": "1", "sha256": None},
     "size: holds string '1', expected an integer"),
    (FileIdentity.from_json, {"path": "x", "size": 1, "sha256": None, "fingerprint": {"e": [1]}},
     "fingerprint.e: holds list [1], expected a string, a number, true, false or null"),
    (SourceIdentity.from_json, {"kind": "local", "uri": "/d", "revision": None,
                                "files": [{"path": "x", "size": 1, "sha256": "0" * 63}]},
     "files[0].sha256: holds string '" + "0" * 39 + "…, expected a SHA-256 (64 lowercase hex "
     "digits)"),
    (TokenizerIdentity.from_json, {"spec": "s", "tokenizer_id": "t", "sha256": SHA,
                                   "vocab_size": 0, "doc_sep_id": None},
     "vocab_size: holds 0, expected at least 1"),
])
def test_a_forged_field_is_refused_by_its_path(parse: Any, d: dict[str, Any], message: str
                                               ) -> None:
    with pytest.raises(FieldError) as e:
        parse(d)
    assert str(e.value) == message
