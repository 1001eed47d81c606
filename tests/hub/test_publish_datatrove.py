"""``--out hf://datasets/...`` with ``--format datatrove``: the repository gets each split's
files in a folder of its own (``PATH/train/train-00000.ds``), the local run's bytes, and the
readers take the dataset and a file in a folder back; parts merged on the Hub keep the
folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import dir_bytes, make_corpus, numbered_docs

from prep.cli.commands import main

from .fakehub import FakeHub
from .publish import ARGS, OUT, OUT_REPO, env_for, new_repo, prep_cli, publish, published, sha

TROVE = ("--format", "datatrove")


def in_folders(files: dict[str, bytes]) -> dict[str, bytes]:
    return {n: d for n, d in files.items() if n.startswith(("train/", "val/"))}


def test_split_folders_on_the_hub(hub: FakeHub, tmp_path: Path) -> None:
    """... and the Hub's advice on files a folder (10,000 by default; 6 here) counts the
    files of each folder: train/ alone holds more."""
    env = env_for(hub, tmp_path / "hf", PREP_TEST_FOLDER_FILES="6")
    src = make_corpus(tmp_path / "src", [numbered_docs(80)])
    small = ("--source", str(src), "--max-file-tokens", "900", *TROVE)  # after ARGS: these win
    ref = tmp_path / "reference"
    assert main(["prepare", *ARGS, *small, "--out", str(ref), "--quiet"]) == 0
    r = publish(env, "--out", f"{OUT}/dt", "--staging", tmp_path / "stg", "--create-repo",
                *small)
    assert r.returncode == 0, r.stderr
    files, local = published(hub, "dt"), dir_bytes(ref)
    assert in_folders(files) == in_folders(local) and "train/train-00000.ds" in files
    assert files["_MANIFEST.json"] == local["_MANIFEST.json"]
    assert not [n for n in files if n.endswith(".ds") and "/" not in n]
    in_train = sum(n.startswith("train/") for n in files)
    assert 6 <= in_train < len(in_folders(files)), "the corpus must fill train/ past 6 alone"
    assert f"{OUT}/dt/train holds {in_train:,} files in one folder" in r.stderr, r.stderr

    commit = hub.repos[("dataset", OUT_REPO)].refs["main"]
    pinned = f"{OUT}@{commit}/dt"
    cli = ("import sys; from prep.cli.commands import main\n"
           "print([main(['verify', sys.argv[1]]),"
           " main(['inspect', sys.argv[1] + '/train/train-00000.ds', '--first', '2'])])")
    v = subprocess.run([sys.executable, "-c", cli, pinned], env=env, capture_output=True,
                       text=True, check=False)
    assert v.stdout.splitlines()[-1] == "[0, 0]", v.stdout + v.stderr
    assert f"{pinned}: OK" in v.stdout and "train-00000.ds: datatrove uint16 ids" in v.stdout


@pytest.mark.soak
def test_datatrove_parts_merged_on_the_hub_keep_their_folders(hub: FakeHub, tmp_path: Path
                                                              ) -> None:
    new_repo(hub)
    for i in range(2):
        r = publish(env_for(hub, tmp_path / f"hf{i}"), "--out", f"{OUT}/m", "--staging",
                    tmp_path / f"s{i}", "--part", f"{i}/2", *TROVE)
        assert r.returncode == 0, r.stderr
    r = prep_cli(env_for(hub, tmp_path / "hf-merge"), "merge", f"{OUT}/m")
    assert r.returncode == 0, r.stderr
    files = published(hub, "m")
    manifest = json.loads(files["_MANIFEST.json"])
    names = [e["name"] for e in manifest["files"]]
    assert names[0] == "train/train-00000.ds" and all(n.startswith(("train/", "val/"))
                                                      for n in names)
    for e in manifest["files"]:
        assert sha(files[e["name"]]) == e["sha256"]
        assert all(sha(files[c["name"]]) == c["sha256"] for c in e["companions"])
    assert prep_cli(env_for(hub, tmp_path / "hf-verify"), "verify", f"{OUT}/m").returncode == 0
