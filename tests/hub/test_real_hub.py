"""Opt-in: a publish to the real Hugging Face Hub, read back, then deleted. Runs only with
``PREP_HUB_TEST_REPO`` (an existing dataset repository, OWNER/NAME, the token may write) and
``HF_TOKEN`` set; it publishes the sample to a new branch of it and deletes the branch."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

REPO = os.environ.get("PREP_HUB_TEST_REPO")
TOKEN = os.environ.get("HF_TOKEN")
SAMPLE = ("--source", "sample", "--tokenizer", "byte", "--dataset", "sample")

pytestmark = pytest.mark.skipif(not (REPO and TOKEN),
                                reason="set PREP_HUB_TEST_REPO and HF_TOKEN to publish to the Hub")


def _prep(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prep", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def test_publish_read_back_and_delete(tmp_path: Path) -> None:
    from huggingface_hub import HfApi, hf_hub_download

    branch = f"prep-test-{uuid.uuid4().hex[:8]}"
    uri = f"hf://datasets/{REPO}@{branch}/sample"
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}
    api = HfApi(token=TOKEN)
    try:
        r = _prep("prepare", *SAMPLE, "--out", uri, "--staging", tmp_path / "stg",
                  "--license", "odc-by", env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        assert TOKEN not in r.stderr
        local = tmp_path / "local"
        ref = _prep("prepare", *SAMPLE, "--out", local, env=env)
        assert ref.returncode == 0, ref.stderr
        commit = api.repo_info(REPO, repo_type="dataset", revision=branch).sha
        v = _prep("verify", f"hf://datasets/{REPO}@{commit}/sample", env=env)
        assert v.returncode == 0 and "OK" in v.stdout, v.stdout + v.stderr
        got = Path(hf_hub_download(
            REPO, "sample/_MANIFEST.json", repo_type="dataset", revision=commit,
            cache_dir=tmp_path / "hf" / "hub"))
        assert got.read_bytes() == (local / "_MANIFEST.json").read_bytes()
    finally:
        api.delete_branch(REPO, branch=branch, repo_type="dataset")
