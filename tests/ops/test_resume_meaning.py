"""Resume by meaning, from anywhere (issue 8, points 5, 7 and the first of 9).

Paths are resolved once, when a run starts, and recorded: the printed resume command works
from any directory, typed options are compared with the run by what they name rather than
how they are spelled, and neither the manifest nor a refusal depends on the spelling."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from harness import (
    EVERY_BATCH,
    World,
    build,
    dir_bytes,
    gate,
    leftovers,
    no_traceback,
    run,
    spawn,
    tree,
    wait_for,
)


@pytest.fixture
def w(small_world: World, tmp_path: Path) -> World:
    return small_world.copy(tmp_path)


def killed_mid_run(args: list[object], cwd: Path, log: Path) -> None:
    """Start ``prepare ARGS`` in ``cwd``, park it right after its third checkpoint (rows
    committed, files open) and kill -9 it there."""
    where = log.with_suffix(".gate")
    where.mkdir()
    proc = spawn([*args, *EVERY_BATCH], log,
                 [gate("prep.run.committed.RunState.checkpoint", where, nth=3)], cwd=cwd)
    wait_for(lambda: (where / "reached").exists(), "the third checkpoint", proc)
    os.kill(proc.pid, signal.SIGKILL)
    code, _ = proc.finish()
    assert code == -signal.SIGKILL


def relative_args(out: str = "out") -> list[object]:
    """The recipe of ``World.args`` spelled relative to the world's root."""
    return ["--source", "src", "--tokenizer", "tok/", "--dataset", "ops", "--out", out]


def test_the_printed_resume_command_works_from_any_directory(w: World) -> None:
    out = w.root / "out"
    killed_mid_run(relative_args(), w.root, w.root / "first.log")
    staging = out.with_name("out.incomplete")
    cp = json.loads((staging / "checkpoint.json").read_text())
    assert cp["progress"]["rows_visited"] > 0

    # systemd runs the printed command from `/`, where neither src nor tok/ exists.
    code, err = run(["--out", out, "--resume"], w.root / "resume.log", cwd=Path("/"))
    assert code == 0, err
    assert dir_bytes(out) == build(w, w.root / "reference")


def test_typed_options_are_compared_by_what_they_name(w: World) -> None:
    out = w.root / "out"
    killed_mid_run(relative_args(), w.root, w.root / "first.log")
    # The same directory typed absolute with a trailing slash, and the tokenizer directory
    # given as its tokenizer.json: the same run, not a contradiction.
    code, err = run(["--source", f"{w.source}/", "--tokenizer", w.tokenizer / "tokenizer.json",
                     "--out", out, "--resume"], w.root / "resume.log", cwd=Path("/"))
    assert code == 0, err
    assert dir_bytes(out) == build(w, w.root / "reference")


def test_a_typed_relative_source_that_is_not_there_is_refused(w: World) -> None:
    out = w.root / "out"
    killed_mid_run(relative_args(), w.root, w.root / "first.log")
    staging = out.with_name("out.incomplete")
    before = tree(staging)
    # From `/`, `--source src` names /src, which does not exist: an error, not a silent
    # read of the directory the run started with.
    code, err = run(["--source", "src", "--out", out, "--resume"], w.root / "resume.log",
                    cwd=Path("/"))
    assert code == 1, err
    no_traceback(err)
    assert "--source src" in err and "no such file or directory" in err, err
    assert tree(staging) == before and not out.exists()

    # Another existing directory is a contradiction, listed as such.
    other = w.root / "other"
    shutil.copytree(w.source, other)
    code, err = run(["--source", "other", "--out", out, "--resume"], w.root / "other.log",
                    cwd=w.root)
    assert code == 1, err
    assert f"--source: typed {str(other)!r}, the run was started with {str(w.source)!r}" in err
    assert tree(staging) == before and not out.exists()


def test_the_manifest_does_not_depend_on_how_the_source_is_spelled(w: World) -> None:
    spellings = [
        (w.root.parent, f"{w.root.name}/src"),
        (w.root, "./src/"),
        (Path("/"), str(w.source)),
    ]
    manifests = []
    for i, (cwd, spelled) in enumerate(spellings):
        out = w.root / f"out{i}"
        code, err = run(["--source", spelled, "--tokenizer", w.tokenizer, "--dataset", "ops",
                         "--out", out], w.root / f"{i}.log", cwd=cwd)
        assert code == 0, err
        manifests.append((out / "_MANIFEST.json").read_bytes())
    assert manifests[0] == manifests[1] == manifests[2]
    assert json.loads(manifests[0])["source"]["uri"] == str(w.source.resolve())


@pytest.fixture
def complete(w: World) -> Path:
    out = w.root / "out"
    build(w, out)
    return out


def test_resume_of_a_complete_dir_refuses_contradicting_options(w: World, complete: Path
                                                                ) -> None:
    before = tree(complete)
    code, err = run(["--out", complete, "--resume", "--val-fraction", "0.5", "--seed", "7"],
                    w.root / "a.log")
    assert code == 1, err
    no_traceback(err)
    assert "--val-fraction: typed 0.5, the dataset was built with 0.01" in err, err
    assert "--seed: typed 7, the dataset was built with 1337" in err, err
    assert "--refresh" in err, err
    assert tree(complete) == before and leftovers(complete) == set()

    # A different tokenizer is a contradiction too (compared by its bytes).
    code, err = run(["--out", complete, "--resume", "--tokenizer", "byte"], w.root / "b.log")
    assert code == 1, err
    assert "--tokenizer" in err, err
    assert tree(complete) == before


def test_resume_of_a_complete_dir_accepts_the_same_recipe_spelled_otherwise(
    w: World, complete: Path
) -> None:
    before = tree(complete)
    code, err = run(["--source", "./src/", "--tokenizer", "tok/tokenizer.json",
                     "--val-fraction", "0.01", "--dataset", "ops", "--out", "out", "--resume"],
                    w.root / "a.log", cwd=w.root)
    assert code == 0, err
    assert "already complete" in err, err
    assert tree(complete) == before


@pytest.mark.parametrize("config", ["generation_config.json", "tokenizer_config.json"])
def test_a_changed_eos_names_the_file_that_changed(w: World, config: str) -> None:
    if config == "tokenizer_config.json":
        (w.tokenizer / "generation_config.json").unlink()
        (w.tokenizer / config).write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    out = w.root / "out"
    killed_mid_run(w.args(out), w.root, w.root / "first.log")
    staging = out.with_name("out.incomplete")
    before = tree(staging)
    if config == "generation_config.json":
        (w.tokenizer / config).write_text(json.dumps({"eos_token_id": 5}))
    else:
        vocab = json.loads((w.tokenizer / "tokenizer.json").read_text())["model"]["vocab"]
        other = next(t for t, i in vocab.items() if i == 5)
        (w.tokenizer / config).write_text(json.dumps({"eos_token": other}))

    code, err = run(["--out", out, "--resume"], w.root / "resume.log")
    assert code == 1, err
    no_traceback(err)
    assert str(w.tokenizer / config) in err, err
    assert "tokenizer.json" not in err.replace(config, ""), err
    assert tree(staging) == before and not out.exists()


def test_a_changed_tokenizer_json_still_names_tokenizer_json(w: World) -> None:
    out = w.root / "out"
    killed_mid_run(w.args(out), w.root, w.root / "first.log")
    with open(w.tokenizer / "tokenizer.json", "a") as f:
        f.write("\n")  # still the same tokenizer, but not the same bytes
    code, err = run(["--out", out, "--resume"], w.root / "resume.log")
    assert code == 1, err
    assert str(w.tokenizer / "tokenizer.json") in err, err
    assert "generation_config.json" not in err, err
