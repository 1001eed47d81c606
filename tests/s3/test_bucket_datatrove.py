"""``--out s3://...`` with ``--format datatrove``: each split's files under a key folder of
their own (``NAME/train/train-00000.ds``), the local run's bytes, which the readers take
back with a file in a folder; a run killed with its local staging lost comes back from the
bucket into those folders (soak)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import dir_bytes, make_corpus, numbered_docs
from harness import World, run, world
from outhelp import CORPUS, dataset_bytes, new_uri, objects, remote_checkpoint
from s3server import S3Server

KILL_AFTER_UPLOAD = {"target": "prep.outputs.bucket.mirror.Mirror._upload_shard", "nth": 3,
                     "action": "kill"}


@pytest.fixture(scope="module")
def trove(tmp_path_factory: pytest.TempPathFactory) -> World:
    return world(tmp_path_factory, dataclasses.replace(CORPUS, format="datatrove"))


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> S3Server:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return s3_server


def test_split_folders_in_the_bucket(aws: S3Server, s3_bucket: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from prep import TokenStream
    from prep.cli.commands import main

    src = make_corpus(tmp_path / "src", [numbered_docs(80)])
    args = ["--source", str(src), "--tokenizer", "byte", "--format", "datatrove", "--dataset", "ds",
            "--val-fraction", "0.3", "--max-file-tokens", "900", "--quiet"]
    uri, local = new_uri(s3_bucket), tmp_path / "local"
    assert main(["prepare", "--out", str(local), *args]) == 0
    assert main(["prepare", "--out", uri, *args]) == 0
    held = objects(aws, uri)
    assert dataset_bytes(aws, uri) == dir_bytes(local)
    assert {n.split("/")[0] for n in held if "/" in n} == {"train", "val"}
    assert len([n for n in held if n.startswith("train/") and n.endswith(".ds")]) >= 2
    capsys.readouterr()
    assert main(["verify", uri]) == 0 and f"{uri}: OK" in capsys.readouterr().out
    assert main(["inspect", f"{uri}/val/val-00000.ds", "--first", "3"]) == 0
    assert "val-00000.ds: datatrove uint16 ids" in capsys.readouterr().out
    remote, here = TokenStream(uri, "train", seq_len=16), TokenStream(local, "train", seq_len=16)
    assert len(remote) == len(here) > 0
    assert all((remote[i][0] == here[i][0]).all() for i in range(len(here)))


@pytest.mark.soak
def test_split_folders_in_the_bucket_survive_a_lost_staging(
        trove: World, aws: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    assert trove.reference_dir is not None
    assert sorted(n for n in trove.reference if "/" in n)[0] == "train/train-00000.ds"
    uri = new_uri(s3_bucket)
    first = run([*trove.args(uri), "--staging", tmp_path / "a"], faults=KILL_AFTER_UPLOAD)  # type: ignore[arg-type]
    assert first.returncode == -9, first.stderr
    record = remote_checkpoint(aws, uri)
    assert record is not None
    assert any(n.startswith("train/train-") for n in objects(aws, uri))  # some were uploaded
    shutil.rmtree(tmp_path / "a")  # the machine is gone: the bucket alone is left

    done = run(["--out", uri, "--resume", "--staging", tmp_path / "b"])
    assert done.returncode == 0, done.stderr
    assert "restoring it from the remote checkpoint" in done.stderr
    assert dataset_bytes(aws, uri) == trove.reference
    held = objects(aws, uri)
    assert sorted(held) == sorted([*trove.reference, "_PROVENANCE.json"])
    assert {n.split("/")[0] for n in held if "/" in n} == {"train", "val"}
