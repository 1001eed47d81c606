"""Every public reader takes every location through one resolution
(``prep.outputs.published_at``): a local directory and an ``s3://`` URI give the same answers,
and a message names the location as the user spelled it, never a path made of a URI
(``s3:/tokens/ds``)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from s3server import S3Server

import prep
from prep.cli.commands import main


@pytest.fixture(scope="module")
def places(s3_server: S3Server, s3_bucket: str, tmp_path_factory: pytest.TempPathFactory
           ) -> tuple[Path, str]:
    """A small dataset in a local directory, and the same objects under a bucket prefix."""
    local = tmp_path_factory.mktemp("locations") / "ds"
    prep.prepare(source="sample", tokenizer="byte", out=str(local))
    uri = f"s3://{s3_bucket}/loc-{uuid.uuid4().hex[:8]}/ds"
    fs = s3_server.filesystem()
    for name in sorted(os.listdir(local), key=lambda n: n == "_MANIFEST.json"):  # manifest last
        with fs.open_output_stream(f"{uri[5:]}/{name}") as f:
            f.write((local / name).read_bytes())
    return local, uri


@pytest.fixture
def aws(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_manifest_load_and_token_stream_take_both(places: tuple[Path, str], aws: None) -> None:
    local, uri = places
    here, there = prep.Manifest.load(local), prep.Manifest.load(uri)
    assert here == there and here.totals["train"].n_tokens > 0
    assert prep.Manifest.load(str(local)) == prep.Manifest.load(f"{uri}/") == here
    a, b = prep.TokenStream(local, "val", seq_len=8), prep.TokenStream(uri, "val", seq_len=8)
    assert len(a) == len(b) > 0
    assert all((a[i][0] == b[i][0]).all() for i in range(len(a)))


def test_verify_and_inspect_take_both(places: tuple[Path, str], aws: None,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for where in map(str, places):
        assert main(["verify", where]) == 0
        assert capsys.readouterr().out.strip() == f"{where}: OK"
        assert main(["inspect", where]) == 0
        assert "dataset ds: tokenizer byte" in capsys.readouterr().out
        assert main(["inspect", f"{where}/val-00000.bin", "--first", "2"]) == 0
        assert "val-00000.bin: llmc uint16 ids" in capsys.readouterr().out


def test_a_missing_dataset_is_named_as_typed(s3_bucket: str, aws: None, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    uri = f"s3://{s3_bucket}/loc-{uuid.uuid4().hex[:8]}/none"
    with pytest.raises(prep.IntegrityError) as info:
        prep.Manifest.load(uri)
    assert str(info.value).startswith(f"{uri} is incomplete: no _MANIFEST.json")
    assert "s3:/" + uri[5:] not in str(info.value).replace(uri, "")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(prep.IntegrityError, match=r"^none/_MANIFEST.json is missing"):
        prep.Manifest.load("none")
