"""Tokenizer memos (``prep.encoders.memo``): a run whose tokenizer file was seen before
takes its facts and engine verdict from the memo and builds neither ``tokenizers`` nor the
probes in this process, with the same identity and engine as a run that found them; a memo
that is corrupt, foreign or unwritable changes nothing but the time."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, numbered_docs, write_parquet

import prep.run.work.tasks
from prep.cli.commands import run_prepare
from prep.encoders import load_encoder, tokenizer_fingerprint
from prep.encoders.engine import EngineChoice, choose_engine
from prep.encoders.memo import ACCEPTED, TokenizerMemo, _digest
from prep.errors import UsageError


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "prep" / "tokenizers"


def load(path: Path, **kw: Any) -> Any:
    return load_encoder(str(path), doc_sep_id=None, no_doc_sep=False, tokenizer_id=None, **kw)


def memo_file(cache: Path, enc: Any) -> Path:
    return cache / f"{enc.identity.sha256}.json"


def rewrite(path: Path, change: Any) -> None:
    """Change a memo's facts and sign it again, as a memo of another run would be."""
    stored = json.loads(path.read_text())
    change(stored["facts"])
    stored["digest"] = _digest(stored["facts"])
    path.write_text(json.dumps(stored))


def assert_same_ids(got_engine: Any, want_engine: Any) -> None:
    texts = ["Hello <|endoftext|> world", "naïve café 日本語 " * 20]
    utf8 = [t.encode() for t in texts]
    got, want = got_engine.encode_flat(texts, utf8), want_engine.encode_flat(texts, utf8)
    assert got.ids.tolist() == want.ids.tolist() and got.offsets.tolist() == want.offsets.tolist()


def warm_engine_without(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, what: str,
                        path: Path) -> Any:
    """A warm run's engine for ``path``, which must be gigatoken and must not call
    ``module.name`` (the test fails saying the run ``what``)."""

    def forbidden(*args: Any, **kw: Any) -> Any:
        raise AssertionError(f"the warm run {what}")

    monkeypatch.setattr(module, name, forbidden)
    spec, engine = choose_engine("auto", load(path), None)
    assert spec.engine == "gigatoken"
    return engine


@pytest.fixture(scope="module")
def eos_as_text(tmp_path_factory: pytest.TempPathFactory, parity_set: dict[str, Path]) -> Path:
    """A trained BPE whose separator is named by its text in tokenizer_config.json (the
    parity set's, trained once per run, copied without its generation_config.json)."""
    path = tmp_path_factory.mktemp("eos") / "tokenizer.json"
    shutil.copyfile(parity_set["bpe-trained"], path)
    (path.parent / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    return path


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "eos-as-text"])
def test_a_remembered_tokenizer_gives_the_same_identity_and_engine_unbuilt(
    name: str, cache: Path, eos_as_text: Path
) -> None:
    path = eos_as_text if name == "eos-as-text" else FIXTURES / name / "tokenizer.json"
    cold = load(path)
    cold_spec, _ = choose_engine("auto", cold, None)
    assert memo_file(cache, cold).is_file()
    warm = load(path)
    assert warm.identity == cold.identity and warm.sep_exclusive == cold.sep_exclusive
    warm_spec, _ = choose_engine("auto", warm, None)
    assert warm_spec == cold_spec
    assert warm._tokenizer is None  # neither the facts nor the engine's probes built it
    assert cold.identity.doc_sep_id is not None and cold.sep_exclusive


def test_the_verdict_in_the_memo_is_the_one_used(cache: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The memo is really consulted: a verdict written into it (as another run's) decides."""
    path = FIXTURES / "gpt2" / "tokenizer.json"
    enc = load(path)
    assert choose_engine("auto", enc, None)[0].engine == "gigatoken"
    rewrite(memo_file(cache, enc), lambda f: f["engines"].update(gigatoken="a reason of its own"))
    with caplog.at_level(logging.INFO, logger="prep"):
        spec, _ = choose_engine("auto", load(path), None)
    assert spec.engine == "hf"
    assert "a reason of its own" in caplog.text


def test_a_corrupt_or_foreign_memo_is_found_again(cache: Path) -> None:
    path = FIXTURES / "gpt2" / "tokenizer.json"
    truth = load(path).identity
    memo = memo_file(cache, load(path))
    stored = json.loads(memo.read_text())
    stored["facts"]["vocab_size"] = 7  # not signed again: corrupt
    memo.write_text(json.dumps(stored))
    enc = load(path)
    assert enc.identity == truth and enc._tokenizer is not None  # found the slow way
    assert json.loads(memo.read_text())["facts"]["vocab_size"] == truth.vocab_size
    stored = json.loads(memo.read_text())
    stored["key"]["libraries"]["tokenizers"] = "0.0.1"  # another version's
    memo.write_text(json.dumps(stored))
    assert load(path)._tokenizer is not None
    memo.write_text("{not json")
    assert load(path).identity == truth


def test_an_unwritable_cache_costs_only_the_time(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    path = FIXTURES / "gpt2" / "tokenizer.json"
    first, second = load(path), load(path)
    assert first.identity == second.identity and second._tokenizer is not None
    assert choose_engine("auto", second, None)[0].engine == "gigatoken"


def test_a_declined_engine_is_remembered_with_its_reason(cache: Path) -> None:
    path = FIXTURES / "cl100k" / "tokenizer.json"
    enc = load(path)
    assert choose_engine("auto", enc, None)[0].engine == "hf"
    verdict = TokenizerMemo.recall(enc.identity.sha256).verdict("gigatoken")
    assert verdict is not None and verdict != ACCEPTED and "refused the file" in verdict
    assert not list(cache.glob("*.gigatoken.json"))  # nothing kept to build from


def test_the_refresh_fingerprint_shares_the_memo(cache: Path, eos_as_text: Path) -> None:
    """``--refresh``'s cheap fingerprint looks a separator's text up once, then remembers."""
    kw = {"doc_sep_id": None, "no_doc_sep": False, "tokenizer_id": None}
    cold = tokenizer_fingerprint(str(eos_as_text), **kw)
    assert cold.doc_sep_id == load(eos_as_text).identity.doc_sep_id
    rewrite(memo_file(cache, load(eos_as_text)),
            lambda f: f["ids"].update({"<|endoftext|>": 5}))
    assert tokenizer_fingerprint(str(eos_as_text), **kw).doc_sep_id == 5
    shutil.rmtree(cache)
    assert tokenizer_fingerprint(str(eos_as_text), **kw) == cold


@pytest.mark.parametrize("name", ["gpt2", "eos-as-text"])
def test_a_remembered_plan_builds_the_engine_without_parsing_the_file(
    name: str, cache: Path, monkeypatch: pytest.MonkeyPatch, eos_as_text: Path
) -> None:
    """The memo keeps gigatoken's plan (what a parse of the file gives it); a warm run builds
    the engine from the plan without parsing the file, with the same ids."""
    import prep.encoders.gigatoken as giga

    path = eos_as_text if name == "eos-as-text" else FIXTURES / name / "tokenizer.json"
    cold = load(path)
    _, cold_engine = choose_engine("auto", cold, None)
    assert json.loads(memo_file(cache, cold).read_text())["facts"]["gigatoken_plan"] == \
        giga.plan(path.read_bytes())

    warm = warm_engine_without(monkeypatch, giga, "parse_members", "parsed the tokenizer.json",
                               path)
    assert_same_ids(warm, cold_engine)


def test_the_engine_is_built_from_the_compact_json_kept_beside_the_memo(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run keeps the JSON gigatoken is built from, written compactly (the same JSON
    value as the file with its special tokens cut), and probes the engine built from it; a
    later run loads those bytes as kept. Kept bytes that do not match the memo's SHA-256 are
    made again, and the engine built from them probed again."""
    import prep.encoders.engine as engine_module
    import prep.encoders.gigatoken as giga

    path = FIXTURES / "gpt2" / "tokenizer.json"
    raw = path.read_bytes()
    cold = load(path)
    _, cold_engine = choose_engine("auto", cold, None)
    kept = cache / f"{cold.identity.sha256}.gigatoken.json"
    compact = kept.read_bytes()
    assert json.loads(compact) == json.loads(giga.planned_json(raw, giga.plan(raw)))
    assert len(compact) < len(raw) / 2
    facts = json.loads(memo_file(cache, cold).read_text())["facts"]
    assert facts["files"]["gigatoken.json"] == hashlib.sha256(compact).hexdigest()

    warm = warm_engine_without(monkeypatch, engine_module, "compact_json",
                               "made the compact JSON again", path)
    assert_same_ids(warm, cold_engine)

    monkeypatch.setattr(engine_module, "compact_json", giga.compact_json)
    kept.write_bytes(compact.replace(b'"vocab":{', b'"vocab":{"extra":1,', 1))  # tampered
    probed: list[int] = []
    reference = giga.load_gigatoken

    def counting(*args: Any, **kw: Any) -> Any:
        probed.append(kw["probe"])
        return reference(*args, **kw)

    monkeypatch.setattr(engine_module, "load_gigatoken", counting)
    assert choose_engine("auto", load(path), None)[0].engine == "gigatoken"
    assert probed == [True] and kept.read_bytes() == compact


def test_the_engine_chosen_in_a_thread_is_the_one_chosen_in_place(cache: Path) -> None:
    """A new run chooses its engine in a thread while it sets up (EngineChoice): the same
    spec and ids as choosing in place, and a refusal raised where the run asks for it."""
    path = FIXTURES / "gpt2" / "tokenizer.json"
    choice = EngineChoice("auto", load(path), None).start()
    spec, engine = choice.result()
    in_place, reference = choose_engine("auto", load(path), None)
    assert spec == in_place and spec.engine == "gigatoken"
    assert_same_ids(engine, reference)
    cl100k = FIXTURES / "cl100k" / "tokenizer.json"
    refused = EngineChoice("gigatoken", load(cl100k), None).start()
    refused.join()  # done, yet nothing raised until the run asks
    with pytest.raises(UsageError, match="--engine gigatoken cannot reproduce"):
        refused.result()
    # not started (a resume): chosen where the run asks, once, and refused there
    assert EngineChoice("auto", load(path), None).result()[0] == in_place
    later = EngineChoice("gigatoken", load(cl100k), None)
    later.join()  # nothing under way: returns at once
    with pytest.raises(UsageError, match="--engine gigatoken cannot reproduce"):
        later.result()


@pytest.mark.parametrize("refresh", [False, True])
def test_the_engine_thread_has_ended_before_any_worker_is_forked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: bool) -> None:
    """A fresh run and a refresh choose the engine in a thread; it must be over when the
    worker pool forks (a fork beside a running thread can copy a held lock)."""
    src = tmp_path / "src"
    src.mkdir()
    write_parquet(src / "a.parquet", numbered_docs(300))
    args = ["--source", str(src), "--tokenizer", str(FIXTURES / "gpt2" / "tokenizer.json"),
            "--out", str(tmp_path / "out"), "--workers", "1", "--quiet"]
    if refresh:
        assert run_prepare(args) == 0
        write_parquet(src / "b.parquet", numbered_docs(300, 300))
        args.append("--refresh")
    seen: list[list[str]] = []
    pool = prep.run.work.tasks._pool

    def watched(*a: Any, **kw: Any) -> Any:
        seen.append([t.name for t in threading.enumerate()])
        return pool(*a, **kw)

    started: list[EngineChoice] = []
    init = EngineChoice.__init__

    def counted(self: EngineChoice, *a: Any) -> None:
        started.append(self)
        init(self, *a)

    monkeypatch.setattr(prep.run.work.tasks, "_pool", watched)
    monkeypatch.setattr(EngineChoice, "__init__", counted)
    assert run_prepare(args) == 0
    assert len(started) == 1 and len(seen) == 1
    assert "prep-engine" not in seen[0]
