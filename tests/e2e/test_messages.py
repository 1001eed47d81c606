"""Messages that used to mislead, as a new user meets them (real processes): a tokenizer's
companion file given as --tokenizer, and a JSON Lines or CSV source. Each says what the
file is and what prep wants; the conversion it prints is run here and works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GPT2_DIR, PREPARE, numbered_docs

VENV_BIN = Path(sys.executable).parent
PARQUET = Path(__file__).resolve().parents[2] / "src" / "prep" / "sample" / "part-00000.parquet"


def prepare(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PREPARE), *map(str, args)], capture_output=True,
                          text=True, timeout=300, check=False, cwd=cwd)


def error_of(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    return r.stderr[r.stderr.index("prep: error: "):]


@pytest.mark.parametrize(("name", "what"), [
    ("tokenizer_config.json", "the tokenizer configuration"),
    ("config.json", "the model configuration"),
    ("special_tokens_map.json", "the special tokens map"),
])
def test_a_companion_file_is_named_and_tokenizer_json_is_asked_for(
    tmp_path: Path, name: str, what: str
) -> None:
    model = tmp_path / "gpt2"
    shutil.copytree(GPT2_DIR, model)
    (model / name).write_text(json.dumps({"model_max_length": 1024, "eos_token": "x"}))

    r = prepare("--source", PARQUET, "--tokenizer", model / name, "--out", tmp_path / "o")

    assert error_of(r).strip() == (
        f"prep: error: {model / name}: this is {what}, not the tokenizer; --tokenizer wants "
        f"tokenizer.json or its directory (here: --tokenizer {model}/)")
    assert "syntax" not in r.stderr and "expected `,`" not in r.stderr


def test_a_config_without_tokenizer_json_beside_it(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    config = tmp_path / "m" / "tokenizer_config.json"
    config.write_text(json.dumps({"model_max_length": 1024}))
    r = prepare("--source", PARQUET, "--tokenizer", config, "--out", tmp_path / "o")
    assert error_of(r).strip().endswith(f"({tmp_path / 'm'} has no tokenizer.json)")


def test_a_broken_tokenizer_json_keeps_the_parse_error(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text('{"model": ')
    r = prepare("--source", PARQUET, "--tokenizer", bad, "--out", tmp_path / "o")
    assert f"{bad}: not a readable Hugging Face tokenizer.json (" in error_of(r)


TEXTS = numbered_docs(20)


def write_jsonl(path: Path) -> Path:
    path.write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(TEXTS)))
    return path


def write_csv(path: Path) -> Path:
    path.write_text("id,text\n" + "".join(f'{i},"{t}"\n' for i, t in enumerate(TEXTS)))
    return path


def run_printed_conversion(message: str, cwd: Path) -> None:
    line = next(x.strip() for x in message.splitlines() if x.strip().startswith("python -c "))
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(("suffix", "write", "what"), [
    (".csv", write_csv, "CSV"),
])
def test_a_csv_source_says_what_prep_reads_and_how_to_convert(
    tmp_path: Path, suffix: str, write, what: str  # type: ignore[no-untyped-def]
) -> None:
    data = write(tmp_path / f"data{suffix}")

    r = prepare("--source", data, "--tokenizer", "byte", "--out", tmp_path / "o")

    message = error_of(r)
    assert message.startswith(
        f"prep: error: data{suffix} is {what}: prep reads Parquet, Arrow IPC and JSON Lines. "
        "Convert it first, e.g.\n  python -c "), message
    assert "remove or replace the file" not in message
    target = tmp_path / "data.parquet"
    assert message.rstrip().endswith(f"then give --source {target}")

    run_printed_conversion(message, tmp_path)
    done = prepare("--source", target, "--tokenizer", "byte", "--out", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    totals = json.loads((tmp_path / "o" / "_MANIFEST.json").read_text())["totals"]
    assert sum(t["n_docs"] for t in totals.values()) == len(TEXTS)


def test_a_directory_of_jsonl_is_read_as_it_is(tmp_path: Path) -> None:
    src = tmp_path / "corpus"
    src.mkdir()
    write_jsonl(src / "a.jsonl")

    r = prepare("--source", src, "--tokenizer", "byte", "--out", tmp_path / "o")

    assert r.returncode == 0, r.stderr
    totals = json.loads((tmp_path / "o" / "_MANIFEST.json").read_text())["totals"]
    assert sum(t["n_docs"] for t in totals.values()) == len(TEXTS)
