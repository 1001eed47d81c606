"""``python scripts/prepare.py --source hf://...`` end to end against the loopback Hub: the
same bytes as the local files, a commit pin that survives a moving branch, lazy downloads,
refused corruption, retries and exit 75, tokens, Hub tokenizers, globs, encoded revisions."""

from __future__ import annotations

import hashlib
import signal
from pathlib import Path

from conftest import GPT2_DIR

from .fakehub import FOREVER, RESET, FakeHub
from .helpers import (
    COMMON,
    CORPUS,
    DATASET,
    EXTRAS,
    GIT_FILE,
    ORDER,
    SETTINGS,
    TOKENIZER_REPO,
    URI,
    assert_same_dataset,
    bins,
    hub_env,
    manifest,
    parquet_bytes,
    prepare,
    rows_committed,
    spawn,
    tokenizer_files,
    wait_for,
    write_local,
)


def test_hub_source_gives_the_local_bytes(
    hub: FakeHub, corpus_commit: str, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    r = prepare(["--source", URI, "--out", out, *COMMON], hub_env(hub, tmp_path / "hf"))
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=corpus_commit)
    m = manifest(out)
    assert m["source"]["uri"] == URI
    assert [f["path"] for f in m["source"]["files"]] == ORDER
    for f in m["source"]["files"]:  # the LFS SHA-256, which is the bytes' SHA-256
        assert f["sha256"] == hashlib.sha256(CORPUS[f["path"]]).hexdigest()
        assert f["size"] == len(CORPUS[f["path"]])
    assert len(hub.requests(contains="/revision/main")) == 1
    assert all(corpus_commit in r.path for r in hub.requests(contains="/resolve/"))
    assert len(hub.requests("GET", "/resolve/")) == 3  # each file once


def test_hub_uri_spellings_give_one_manifest(
    hub: FakeHub, corpus_commit: str, tmp_path: Path
) -> None:
    """Issue 8 point 7: the revision is recorded as the commit, so the URI is recorded in one
    spelling whether typed bare, with a trailing slash or with @main."""
    env = hub_env(hub, tmp_path / "hf")
    manifests = []
    for i, spelled in enumerate([URI, URI + "/", URI + "@main"]):
        out = tmp_path / f"out{i}"
        r = prepare(["--source", spelled, "--out", out, *COMMON], env)
        assert r.returncode == 0, r.stderr
        manifests.append((out / "_MANIFEST.json").read_bytes())
    assert manifests[0] == manifests[1] == manifests[2]
    recorded = manifest(tmp_path / "out0")["source"]
    assert recorded["uri"] == f"hf://datasets/{DATASET}"
    assert recorded["revision"] == corpus_commit
    # and a resume of the complete dataset accepts each spelling as the same source
    for spelled in [URI + "/", URI + "@main"]:
        r = prepare(["--source", spelled, "--out", tmp_path / "out0", "--resume"], env)
        assert r.returncode == 0, r.stderr
        assert "already complete" in r.stderr


def test_revision_pin_survives_a_branch_move(
    hub: FakeHub, corpus_commit: str, reference: Path, tmp_path: Path
) -> None:
    env = hub_env(hub, tmp_path / "hf")
    out = tmp_path / "out"
    second, third = ORDER[1], ORDER[2]
    gate = hub.gate(second)
    proc = spawn(
        [
            "--source",
            URI,
            "--out",
            out,
            *COMMON,
            "--batch-size",
            "16",
            "--checkpoint-interval",
            "0.000001",  # a checkpoint after every batch, on any machine
        ],
        env,
    )
    try:
        wait_for(lambda: hub.requests("GET", second) and rows_committed(out) >= 16, proc)
        assert not hub.requests(contains=third)  # one file at a time, when reached
        proc.send_signal(signal.SIGTERM)
    finally:
        gate.set()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 75, err
    assert 16 <= rows_committed(out) < 360

    moved = {
        "data/train-00000.parquet": parquet_bytes(["moved"] * 5),
        "data/z-new.parquet": parquet_bytes(["new"] * 5),
    }
    new_commit = hub.commit("dataset", DATASET, moved)  # main now points elsewhere
    hub.clear_log()
    r = prepare(["--out", out, "--resume"], env)
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=corpus_commit)
    assert hub.requests()  # the resume did list and download
    assert not hub.requests(contains=new_commit)
    assert not hub.requests(contains="/revision/")  # the pin is not resolved again
    assert all(corpus_commit in r.path for r in hub.requests())


def test_files_are_downloaded_only_when_reached(
    hub: FakeHub, corpus_commit: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    r = prepare(
        ["--source", URI, "--out", out, *COMMON, "--max-documents", "5"],
        hub_env(hub, tmp_path / "hf"),
    )
    assert r.returncode == 0, r.stderr
    assert manifest(out)["source"]["rows_visited"] == 5  # all in the first file
    # The first file is read; the file stored in git has no hash in the listing, so it is
    # fetched to hash it for the manifest; the unread LFS file is never downloaded.
    fetched = [g.path.rsplit("/resolve/", 1)[1] for g in hub.requests("GET", "/resolve/")]
    assert fetched == [f"{corpus_commit}/{ORDER[0]}", f"{corpus_commit}/{GIT_FILE}"]
    files = manifest(out)["source"]["files"]
    assert [f["sha256"] for f in files] == [hashlib.sha256(CORPUS[p]).hexdigest() for p in ORDER]


def test_corrupted_download_is_refused(hub: FakeHub, corpus_commit: str, tmp_path: Path) -> None:
    hub.corrupt(corpus_commit, ORDER[1])
    out = tmp_path / "out"
    r = prepare(["--source", URI, "--out", out, *COMMON], hub_env(hub, tmp_path / "hf"))
    assert r.returncode == 1, r.stderr
    assert f"downloading {ORDER[1]} from hf://datasets/{DATASET}@{corpus_commit[:12]}" in r.stderr
    assert "SHA-256" in r.stderr and "not used" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_transient_failures_are_retried(
    hub: FakeHub, corpus_commit: str, reference: Path, tmp_path: Path
) -> None:
    hub.fail("/revision/main", RESET, times=1)
    hub.fail(ORDER[2], 503, times=2, method="GET")
    out = tmp_path / "out"
    r = prepare(
        ["--source", URI, "--out", out, *COMMON], hub_env(hub, tmp_path / "hf"), fast_retry=True
    )
    assert r.returncode == 0, r.stderr
    assert "retrying" in r.stderr
    assert len(hub.requests("GET", ORDER[2])) == 3
    assert_same_dataset(out, reference, revision=corpus_commit)


def test_persistent_failure_exits_75_and_resumes(
    hub: FakeHub, corpus_commit: str, reference: Path, tmp_path: Path
) -> None:
    env = hub_env(hub, tmp_path / "hf")
    hub.fail(ORDER[1], 503, times=FOREVER, method="GET")
    out = tmp_path / "out"
    r = prepare(["--source", URI, "--out", out, *COMMON], env, fast_retry=True)
    assert r.returncode == 75, r.stderr
    assert f"downloading {ORDER[1]}" in r.stderr and "HTTP 503" in r.stderr
    assert "gave up after 3 attempts" in r.stderr and "--resume" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()
    hub.clear_faults()
    r = prepare(["--out", out, "--resume"], env)
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=corpus_commit)


def test_private_dataset_token(hub: FakeHub, tmp_path: Path, reference: Path) -> None:
    commit = hub.commit(
        "dataset", DATASET, {**CORPUS, **EXTRAS}, git_files=(GIT_FILE,), token="hf_secret"
    )
    out = tmp_path / "out"
    r = prepare(["--source", URI, "--out", out, *COMMON], hub_env(hub, tmp_path / "hf"))
    assert r.returncode == 1
    assert "401" in r.stderr and "--token" in r.stderr and "HF_TOKEN" in r.stderr
    assert "Traceback" not in r.stderr
    r = prepare(
        ["--source", URI, "--out", out, *COMMON],
        hub_env(hub, tmp_path / "hf", HF_TOKEN="hf_secret"),
    )
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=commit)
    assert {q.auth for q in hub.requests()} == {None, "Bearer hf_secret"}


def test_hub_tokenizer(hub: FakeHub, corpus_commit: str, tmp_path: Path) -> None:
    v1 = hub.commit("model", TOKENIZER_REPO, tokenizer_files(), ref="v1")
    hub.commit("model", TOKENIZER_REPO, {"tokenizer.json": b"{}"})  # main: not a tokenizer
    local_src = write_local(tmp_path / "src", CORPUS)
    common = [*SETTINGS, "--tokenizer-id", "gpt2"]
    hub_out, local_out = tmp_path / "hub", tmp_path / "local"
    r = prepare(
        ["--source", URI, "--tokenizer", f"hf:{TOKENIZER_REPO}@v1", "--out", hub_out, *common],
        hub_env(hub, tmp_path / "hf"),
    )
    assert r.returncode == 0, r.stderr
    r = prepare(["--source", local_src, "--tokenizer", GPT2_DIR, "--out", local_out, *common])
    assert r.returncode == 0, r.stderr
    assert_same_dataset(hub_out, local_out, revision=corpus_commit)
    m = manifest(hub_out)
    assert (m["doc_sep_id"], m["vocab_size"]) == (50256, 50257)
    assert (
        m["tokenizer_sha256"]
        == hashlib.sha256((GPT2_DIR / "tokenizer.json").read_bytes()).hexdigest()
    )
    assert hub.requests("GET", f"{v1}/generation_config.json")
    assert not [
        q
        for q in hub.requests(contains="/resolve/")
        if v1 not in q.path and TOKENIZER_REPO in q.path
    ]


def test_glob_selects_a_subset(hub: FakeHub, corpus_commit: str, tmp_path: Path) -> None:
    local_src = write_local(tmp_path / "src", CORPUS)
    hub_out, local_out = tmp_path / "hub", tmp_path / "local"
    r = prepare(
        ["--source", f"{URI}/data/train-*.parquet", "--out", hub_out, *COMMON],
        hub_env(hub, tmp_path / "hf"),
    )
    assert r.returncode == 0, r.stderr
    r = prepare(["--source", local_src / "data" / "train-*.parquet", "--out", local_out, *COMMON])
    assert r.returncode == 0, r.stderr
    assert bins(hub_out) == bins(local_out)
    files = manifest(hub_out)["source"]["files"]
    assert [f["path"] for f in files] == ["data/train-00000.parquet", "data/train-00001.parquet"]
    assert not hub.requests(contains=ORDER[0])  # data/extra/... is outside the glob


def test_url_encoded_revision(hub: FakeHub, tmp_path: Path, reference: Path) -> None:
    hub.commit("dataset", DATASET, {"README.md": b"the Parquet is on another ref"})
    converted = hub.commit("dataset", DATASET, {**CORPUS, **EXTRAS}, ref="refs/convert/parquet")
    out = tmp_path / "out"
    uri = f"{URI}@refs%2Fconvert%2Fparquet"
    r = prepare(["--source", uri, "--out", out, *COMMON], hub_env(hub, tmp_path / "hf"))
    assert r.returncode == 0, r.stderr
    assert_same_dataset(out, reference, revision=converted)
    assert manifest(out)["source"]["uri"] == URI  # the ref is recorded as its commit
