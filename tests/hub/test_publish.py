"""``--out hf://datasets/OWNER/NAME``: the real CLI and the real huggingface_hub client against
the loopback Hub (fakehub.py). A publish holds the local run's bytes, its manifest is in its
last commit only (with the card), and readers take it back pinned to a commit, offline too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from .fakehub import FakeHub
from .publish import (
    OUT,
    OUT_REPO,
    TOKEN,
    commits_with_manifest,
    env_for,
    new_repo,
    prep_cli,
    publish,
    published,
    same_as_reference,
    sha,
)


def test_publish_then_read_back_pinned_and_offline(hub: FakeHub, tmp_path: Path,
                                                   sample_reference: Path) -> None:
    env = env_for(hub, tmp_path / "hf")
    r = publish(env, "--out", f"{OUT}/v1", "--staging", tmp_path / "stg", "--create-repo",
                "--license", "odc-by", commit_seconds=0)
    assert r.returncode == 0, r.stderr
    assert TOKEN not in r.stderr
    files = published(hub, "v1")
    same_as_reference(files, sample_reference)
    assert not any(p.startswith("v1.incomplete/") for p in hub.head_files(OUT_REPO))
    # Readers never see half a dataset: only the last commit holds the manifest, and it
    # holds every shard with it; the earlier ones held shards and remote checkpoints only.
    has = commits_with_manifest(hub, "v1")
    assert has[-1] and not any(has[:-1]) and len(has) > 3
    meta_text = files["README.md"].decode()
    front, body = meta_text.removeprefix("---\n").split("\n---\n", 1)
    meta = yaml.safe_load(front)
    assert meta["license"] == "odc-by" and meta["viewer"] is False and "configs" not in meta
    assert meta["task_categories"] == ["text-generation"]
    assert meta["tags"][:2] == ["tokenized", "llmc"]
    assert meta["size_categories"] == ["n<1K"]  # 383 documents: the Hub's bin below 1K
    assert "| train | 15 | 377 | 274,302 |" in body  # the local run's split totals

    commit = hub.repos[("dataset", OUT_REPO)].refs["main"]
    before = hub.history(OUT_REPO)[-2]  # the commit before the last: shards, no manifest
    pinned = f"{OUT}@{commit}/v1"
    # One process: prep verify (which downloads every file into the cache) and prep inspect
    # of the pinned URI, and prep verify of the revision before: no dataset there.
    cli = ("import sys; from prep.cli.commands import main\n"
           "codes = [main(['verify', sys.argv[1]]), main(['inspect', sys.argv[1]]),"
           " main(['verify', sys.argv[2]])]\nprint(codes)")
    v = subprocess.run([sys.executable, "-c", cli, pinned, f"{OUT}@{before}/v1"], env=env,
                       capture_output=True, text=True, check=False)
    assert v.stdout.splitlines()[-1] == "[0, 0, 1]", v.stdout + v.stderr
    assert f"{pinned}: OK" in v.stdout and "train: 274,302 tokens" in v.stdout
    assert "is incomplete: no _MANIFEST.json, so it is not read as a dataset" in v.stdout
    read = ("import prep, sys; t = prep.TokenStream(sys.argv[1], split='val', seq_len=4); "
            "m = prep.Manifest.load(sys.argv[1]); print(len(t), m.totals['val'].n_tokens)")
    hub.clear_log()
    off = subprocess.run([sys.executable, "-c", read, pinned], capture_output=True, text=True,
                         env={**env, "HF_HUB_OFFLINE": "1"}, check=False)
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["1441", "5767"]  # (5,767 - 1) // 4 windows of the val split
    assert not hub.requests()  # the cache alone


def test_card_takes_the_source_cards_license_and_language(hub: FakeHub, tmp_path: Path
                                                           ) -> None:
    card = b"---\nlicense: apache-2.0\nlanguage:\n- en\n- fr\n---\n# a corpus\n"
    sample = Path(__file__).resolve().parents[2] / "src" / "prep" / "sample"
    files = {f"data/{p.name}": p.read_bytes() for p in sorted(sample.glob("*.parquet"))}
    source = hub.commit("dataset", "acme/corpus", {**files, "README.md": card},
                        git_files=("README.md",))
    new_repo(hub)
    template = tmp_path / "extra.md"
    template.write_text("## Intended use\n\nResearch only.\n\n{{generated}}\n")
    env = env_for(hub, tmp_path / "hf")
    r = subprocess.run(
        [sys.executable, "-m", "prep", "prepare", "--source", "hf://datasets/acme/corpus",
         "--tokenizer", "byte", "--out", OUT, "--staging", tmp_path / "stg",
         "--card-template", template], env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    text = hub.head_files(OUT_REPO)["README.md"].decode()
    meta = yaml.safe_load(text.removeprefix("---\n").split("\n---\n")[0])
    assert meta["license"] == "apache-2.0" and meta["language"] == ["en", "fr"]
    assert meta["source_datasets"] == ["acme/corpus"]
    body = text.split("\n---\n", 1)[1]
    assert body.index("## Intended use") < body.index("## Tokenizer")
    assert f"| revision | {source} |" in body
    manifest = json.loads(hub.head_files(OUT_REPO)["_MANIFEST.json"])
    assert manifest["source"]["revision"] == source


def test_parts_merged_into_the_hub_without_moving_a_shard(hub: FakeHub, tmp_path: Path) -> None:
    """Two parts published from two machines (``--part I/2``), merged by ``prep merge``:
    one commit naming the parts' objects under the merged names; nothing is uploaded or
    downloaded but manifests; every file is the bytes its manifest entry names."""
    new_repo(hub)
    for i in range(2):
        r = publish(env_for(hub, tmp_path / f"hf{i}"), "--out", f"{OUT}/m", "--staging",
                    tmp_path / f"s{i}", "--part", f"{i}/2")
        assert r.returncode == 0, r.stderr
    parts = {p: d for p, d in hub.head_files(OUT_REPO).items()
             if p.startswith("m.parts/") and p.endswith(".bin")}
    commits = len(hub.history(OUT_REPO))
    hub.clear_log()
    r = prep_cli(env_for(hub, tmp_path / "hf-merge"), "merge", f"{OUT}/m")
    assert r.returncode == 0, r.stderr
    assert len(hub.history(OUT_REPO)) == commits + 1
    assert not hub.requests("PUT") and not hub.requests(contains="/info/lfs/")
    assert not [q for q in hub.requests("GET", "/resolve/") if q.path.endswith(".bin")]
    files = published(hub, "m")
    manifest = json.loads(files["_MANIFEST.json"])
    assert [sha(files[e["name"]]) for e in manifest["files"]] == [
        e["sha256"] for e in manifest["files"]]
    assert sorted(d for n, d in files.items() if n.endswith(".bin")) == sorted(parts.values())
    assert "README.md" in files
