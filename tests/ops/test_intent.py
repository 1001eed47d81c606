"""The dataset a run makes is always one the operator chose (issue 8, points 1 and 8).

No default silently stands in for the corpus, the tokenizer or the document separator: a
fresh run needs ``--source`` and ``--tokenizer`` (the bundled corpus and the byte tokenizer
are chosen by name), a bare ``--resume`` with nothing to resume publishes nothing, and a
real tokenizer without a configured end-of-text id needs ``--doc-sep-id`` or
``--no-doc-sep``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from harness import (
    REPO,
    World,
    build,
    dir_bytes,
    gate,
    leftovers,
    manifest,
    no_traceback,
    run,
    spawn,
    wait_for,
)

SAMPLE = REPO / "src" / "prep" / "sample"


@pytest.fixture
def w(small_world: World, tmp_path: Path) -> World:
    return small_world.copy(tmp_path)


def test_bare_resume_after_a_kill_before_staging_publishes_nothing(w: World) -> None:
    out = w.root / "out"
    # Park the run just before it creates its staging directory, then kill -9 it there:
    # the window of a kill in the first fraction of a second, made deterministic.
    where = w.root / "gate"
    where.mkdir()
    proc = spawn(w.args(out), w.root / "first.log",
                 [gate("prep.outputs.base.Staged.create_staging", where, when="before")])
    wait_for(lambda: (where / "reached").exists(), "the run to reach create_staging", proc)
    os.kill(proc.pid, signal.SIGKILL)
    code, _ = proc.finish()
    assert code == -signal.SIGKILL
    staging = out.with_name("out.incomplete")
    assert not staging.exists(), "the kill came before staging existed"

    # The documented preemptible-VM command: nothing to resume, no recipe typed.
    code, err = run(["--out", out, "--resume"], w.root / "resume.log")
    assert code == 1, err
    no_traceback(err)
    assert "nothing to resume" in err, err
    assert "--source" in err and "--tokenizer" in err, err
    assert not out.exists(), "a bare --resume published a dataset nobody asked for"
    assert not staging.exists()

    # The original command with --resume starts the intended run and publishes it.
    code, err = run([*w.args(out), "--resume"], w.root / "again.log")
    assert code == 0, err
    assert manifest(out)["source"]["uri"] == str(w.source)
    assert dir_bytes(out) == build(w, w.root / "reference")


def test_a_fresh_run_needs_a_source_and_a_tokenizer(w: World) -> None:
    out = w.root / "out"
    code, err = run(["--out", out], w.root / "a.log")
    assert code == 2, err
    no_traceback(err)
    assert "--source" in err and "--source sample" in err, err

    code, err = run(["--source", w.source, "--out", out], w.root / "b.log")
    assert code == 2, err
    assert "--tokenizer" in err and "--tokenizer byte" in err, err

    # `--token path/tokenizer.json` (a slip for --tokenizer) is not a byte-level dataset.
    tok_json = w.tokenizer / "tokenizer.json"
    code, err = run(["--source", w.source, "--token", tok_json, "--out", out], w.root / "c.log")
    assert code == 2, err
    assert "--token" in err and "--tokenizer" in err and "path" in err, err
    assert not out.exists() and leftovers(out) == set()


def test_the_bundled_sample_is_chosen_by_name(tmp_path: Path) -> None:
    out = tmp_path / "tokens" / "sample"
    code, err = run(["--source", "sample", "--tokenizer", "byte", "--out", out],
                    tmp_path / "a.log", cwd=tmp_path)
    assert code == 0, err
    m = manifest(out)
    assert m["source"]["uri"] == "sample"  # not the install location: same bytes anywhere
    expected = [
        {"path": p.name, "size": p.stat().st_size,
         "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
        for p in sorted(SAMPLE.glob("*.parquet"))
    ]
    assert m["source"]["files"] == expected
    assert (m["tokenizer_id"], m["vocab_size"], m["doc_sep_id"]) == ("bytes", 256, None)

    # A local directory called `sample` makes the name ambiguous: refused, not guessed.
    shutil.copytree(SAMPLE, tmp_path / "sample")
    out2 = tmp_path / "tokens" / "mine"
    code, err = run(["--source", "sample", "--tokenizer", "byte", "--out", out2],
                    tmp_path / "b.log", cwd=tmp_path)
    assert code == 1, err
    no_traceback(err)
    assert "./sample" in err and "bundled" in err, err
    assert not out2.exists() and leftovers(out2) == set()
    code, err = run(["--source", "./sample", "--tokenizer", "byte", "--out", out2],
                    tmp_path / "c.log", cwd=tmp_path)
    assert code == 0, err
    assert manifest(out2)["source"]["uri"] == str(tmp_path / "sample")


def _eos_id(tok: Path) -> int:
    """The id of ``<|endoftext|>`` read from tokenizer.json's added tokens (not via prep)."""
    added = json.loads((tok / "tokenizer.json").read_text())["added_tokens"]
    return next(t["id"] for t in added if t["content"] == "<|endoftext|>")


def test_a_real_tokenizer_needs_a_separator_choice(w: World) -> None:
    (w.tokenizer / "generation_config.json").unlink()
    out = w.root / "out"
    code, err = run(w.args(out), w.root / "a.log")
    assert code == 1, err
    no_traceback(err)
    assert "--doc-sep-id" in err and "--no-doc-sep" in err, err
    assert "generation_config.json" in err and "tokenizer_config.json" in err, err
    assert not out.exists() and leftovers(out) == set()

    code, err = run(w.args(out, "--no-doc-sep"), w.root / "b.log")
    assert code == 0, err
    assert manifest(out)["doc_sep_id"] is None


@pytest.mark.parametrize("form", ["string", "added-token object"])
def test_the_separator_falls_back_to_tokenizer_config(w: World, form: str) -> None:
    (w.tokenizer / "generation_config.json").unlink()
    eos: object = "<|endoftext|>"
    if form != "string":
        eos = {"content": "<|endoftext|>", "lstrip": False, "rstrip": False, "special": True}
    (w.tokenizer / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos}))
    out = w.root / "out"
    code, err = run(w.args(out), w.root / "a.log")
    assert code == 0, err
    assert manifest(out)["doc_sep_id"] == _eos_id(w.tokenizer)


def test_generation_config_comes_before_tokenizer_config(w: World) -> None:
    (w.tokenizer / "generation_config.json").write_text(json.dumps({"eos_token_id": 7}))
    (w.tokenizer / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    assert _eos_id(w.tokenizer) != 7
    out = w.root / "out"
    code, err = run(w.args(out), w.root / "a.log")
    assert code == 0, err
    assert manifest(out)["doc_sep_id"] == 7


def test_an_eos_token_outside_the_vocabulary_is_refused(w: World) -> None:
    (w.tokenizer / "generation_config.json").unlink()
    (w.tokenizer / "tokenizer_config.json").write_text(json.dumps({"eos_token": "</s>"}))
    out = w.root / "out"
    code, err = run(w.args(out), w.root / "a.log")
    assert code == 1, err
    no_traceback(err)
    assert "tokenizer_config.json" in err and "'</s>'" in err and "--doc-sep-id" in err, err
    assert not out.exists() and leftovers(out) == set()
