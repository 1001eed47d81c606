"""``prep merge`` refuses, with exit 1 and nothing published, a missing part, an unfinished
part, parts of different recipes and a tampered file; ``--part`` refuses what it cannot
honour with a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_prepare_subprocess
from harness import run

from parts.partskit import part_args, uneven_corpus


def _nothing_published(out: Path) -> bool:
    return not out.exists() and not out.with_name(out.name + ".merging").exists()


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return uneven_corpus(tmp_path / "c")


def test_a_missing_part_is_named(tmp_path: Path, cli, corpus: Path) -> None:
    out = tmp_path / "m"
    for i in (0, 2):
        assert cli(*part_args(corpus, out, f"{i}/3")).code == 0
    r = cli("merge", out)
    assert r.code == 1
    assert "missing: 1-of-3" in r.err and "--part 1/3" in r.err
    assert _nothing_published(out)


def test_no_parts_at_all(tmp_path: Path, cli) -> None:
    r = cli("merge", tmp_path / "m")
    assert r.code == 1 and "no parts in" in r.err and "--part I/N" in r.err


def test_an_unfinished_part_is_named(tmp_path: Path, cli, corpus: Path) -> None:
    out = tmp_path / "m"
    for i in (0, 2):
        assert cli(*part_args(corpus, out, f"{i}/3")).code == 0
    # A real part run SIGKILLed after its second checkpoint: its staging stays behind.
    kill = {"target": "prep.fsio.os.replace", "arg_contains": "checkpoint", "nth": 2,
            "action": "kill"}
    args = part_args(corpus, out, "1/3", ["--batch-size", "4", "--checkpoint-interval", "1e-6"])
    assert run(args[1:], faults=[kill]).returncode == -9
    assert (tmp_path / "m.parts" / "1-of-3.incomplete" / "checkpoint.json").is_file()
    r = cli("merge", out)
    assert r.code == 1
    assert "unfinished (still staging): 1-of-3" in r.err
    assert _nothing_published(out)


def test_parts_of_different_recipes_are_refused(tmp_path: Path, cli, corpus: Path) -> None:
    out = tmp_path / "m"
    assert cli(*part_args(corpus, out, "0/2")).code == 0
    assert cli(*part_args(corpus, out, "1/2", ["--seed", "7"])).code == 0
    r = cli("merge", out)
    assert r.code == 1
    assert "1-of-2 and 0-of-2 are not parts of the same run" in r.err
    assert "recipe.seed: 1337 vs 7" in r.err
    assert _nothing_published(out)


def test_a_tampered_part_file_is_refused(tmp_path: Path, cli, corpus: Path) -> None:
    out = tmp_path / "m"
    for i in range(2):
        assert cli(*part_args(corpus, out, f"{i}/2")).code == 0
    victim = tmp_path / "m.parts" / "1-of-2" / "train-00000.bin"
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0x01
    victim.write_bytes(bytes(data))
    r = cli("merge", out)
    assert r.code == 1
    assert "part 1-of-2 does not verify" in r.err and "train-00000.bin" in r.err
    assert _nothing_published(out)


def test_an_existing_different_dir_is_not_replaced(tmp_path: Path, cli, corpus: Path) -> None:
    out = tmp_path / "m"
    for i in range(2):
        assert cli(*part_args(corpus, out, f"{i}/2")).code == 0
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = cli("merge", out)
    assert r.code == 1 and "was not replaced" in r.err
    assert (out / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("budget", [["--max-documents", "10"], ["--train-tokens", "100"]])
def test_global_budgets_are_a_usage_error_with_part(tmp_path: Path, cli, corpus: Path,
                                                    budget: list[str]) -> None:
    r = cli(*part_args(corpus, tmp_path / "m", "0/2", budget))
    assert r.code == 2
    assert budget[0] in r.err and "across independent parts" in r.err
    assert not (tmp_path / "m.parts").exists()


def test_part_index_out_of_range_is_a_usage_error(tmp_path: Path, cli, corpus: Path) -> None:
    r = cli(*part_args(corpus, tmp_path / "m", "3/3"))
    assert r.code == 2 and "--part 3/3" in r.err


def test_more_parts_than_files_is_refused(tmp_path: Path, cli, corpus: Path) -> None:
    r = cli(*part_args(corpus, tmp_path / "m", "0/8"))
    assert r.code == 1 and "8 parts but the source has only 7 file(s)" in r.err


def test_part_script_runs_as_a_real_process(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "m"
    for i in range(2):
        r = run_prepare_subprocess(part_args(corpus, out, f"{i}/2")[1:])
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "m.parts" / "1-of-2" / "_MANIFEST.json").is_file()
