"""``--parts N --out hf://datasets/...`` with the real CLI and huggingface_hub against the
loopback Hub: every part published into ``PATH.parts/`` of the repository, then merged in
the same command; the bytes are the same run's with a local ``--out``. Killed in the middle
of a part, the same command with ``--resume`` keeps the published parts and resumes the
other. A part whose commit comes after a sibling's (concurrent parts) is made again on the
head; a commit of anything but a sibling stops it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import dir_bytes

from .fakehub import FakeHub
from .publish import (
    ARGS,
    OUT,
    OUT_REPO,
    SLOW,
    env_for,
    killed_when,
    new_repo,
    prep_cli,
    publish,
    published,
    sha,
    spawn,
    uploaded,
)


@pytest.fixture(scope="module")
def local_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample prepared with ``--parts 2`` into a local directory ``m``."""
    out = tmp_path_factory.mktemp("local-parts") / "m"
    r = subprocess.run([sys.executable, "-m", "prep", "prepare", *ARGS, "--out", str(out),
                        "--parts", "2"], capture_output=True, text=True, timeout=120,
                       check=False)
    assert r.returncode == 0, r.stderr
    return out


def _same_as_local(hub: FakeHub, local: Path) -> None:
    files = published(hub, "m")
    expected = dir_bytes(local)
    assert len(expected) > 10 and {n: files.get(n) for n in expected} == expected


def test_parts_into_the_hub_then_merged_give_the_local_runs_bytes(
        hub: FakeHub, tmp_path: Path, local_parts: Path) -> None:
    r = publish(env_for(hub, tmp_path / "hf"), "--out", f"{OUT}/m", "--staging",
                tmp_path / "s", "--parts", "2", "--license", "odc-by", "--create-repo")
    assert r.returncode == 0, r.stderr
    _same_as_local(hub, local_parts)
    head = hub.head_files(OUT_REPO)
    for part in ("0-of-2", "1-of-2"):  # each part published as a --part I/2 run publishes it
        assert dir_bytes(local_parts.with_name("m.parts") / part) == {
            n: head[f"m.parts/{part}/{n}"] for n in dir_bytes(local_parts.with_name("m.parts")
                                                                / part)}
    assert 'license: "odc-by"' in head["m/README.md"].decode()  # the driver's card options
    assert not any(p.startswith("m.parts/") and ".incomplete/" in p for p in head)


def test_killed_in_a_part_then_resumed_keeps_the_published_part(
        hub: FakeHub, tmp_path: Path, local_parts: Path) -> None:
    """SIGKILL while part 1 uploads a shard (part 0 published); the same command with
    --resume on another machine (another staging, an empty cache) uploads none of part 0's
    shards, resumes part 1 from the Hub and merges: the local run's bytes."""
    new_repo(hub)
    part1 = local_parts.with_name("m.parts") / "1-of-2"
    held = sha((part1 / "train-00005.bin").read_bytes())
    arrived, release = hub.hold(f"/{held}/", "PUT")
    proc = spawn(env_for(hub, tmp_path / "hf-a"), "--out", f"{OUT}/m", "--staging",
                 tmp_path / "a", "--parts", "2", *SLOW)
    killed_when(proc, arrived, release, "part 1's upload of train-00005.bin")
    head = hub.head_files(OUT_REPO)
    assert "m.parts/0-of-2/_MANIFEST.json" in head
    assert "m.parts/1-of-2/_MANIFEST.json" not in head and "m/_MANIFEST.json" not in head
    part0 = {p: d for p, d in head.items() if p.startswith("m.parts/0-of-2/")}

    hub.clear_log()
    r = publish(env_for(hub, tmp_path / "hf-b"), "--out", f"{OUT}/m", "--staging",
                tmp_path / "b", "--parts", "2", "--resume", commit_seconds=0)
    assert r.returncode == 0, r.stderr
    assert "restoring it from the remote checkpoint" in r.stderr  # part 1, from the Hub
    kept = {sha(d) for p, d in part0.items() if p.endswith(".bin")}
    assert kept and not uploaded(hub) & kept
    assert {p: d for p, d in hub.head_files(OUT_REPO).items()
            if p.startswith("m.parts/0-of-2/")} == part0
    _same_as_local(hub, local_parts)


def test_a_part_builds_on_a_siblings_commit_and_stops_at_anothers(
        hub: FakeHub, tmp_path: Path, local_parts: Path) -> None:
    """Part 0 alone, while "part 1" commits to the branch right after part 0's second
    commit: part 0's next commit is refused (HTTP 412), made again on the head, and the
    part publishes, keeping the sibling's file. A file outside the parts committed the same
    way stops part 1 with exit 1, overwriting nothing."""
    new_repo(hub)
    sibling = {"m.parts/1-of-2.incomplete/remote-checkpoint.json": b"{}"}
    hub.interject(OUT_REPO, after=2, files=sibling)
    env = env_for(hub, tmp_path / "hf")
    r = publish(env, "--out", f"{OUT}/m", "--staging", tmp_path / "s", "--part", "0/2",
                commit_seconds=0)
    assert r.returncode == 0, r.stderr
    assert "moved by sibling parts' commits" in r.stderr
    head = hub.head_files(OUT_REPO)
    assert head["m.parts/1-of-2.incomplete/remote-checkpoint.json"] == b"{}"
    part0 = local_parts.with_name("m.parts") / "0-of-2"
    assert {n: head[f"m.parts/0-of-2/{n}"] for n in dir_bytes(part0)} == dir_bytes(part0)

    hub.interject(OUT_REPO, after=2, files={"NOTES.md": b"another writer\n"})
    r = publish(env, "--out", f"{OUT}/m", "--staging", tmp_path / "s", "--part", "1/2",
                commit_seconds=0)
    assert r.returncode == 1, r.stderr
    assert "moved while this run was publishing" in r.stderr
    assert "another writer committed to the branch (NOTES.md changed, which no sibling part " \
           "writes)" in r.stderr
    assert hub.head_files(OUT_REPO)["NOTES.md"] == b"another writer\n"
    assert "m.parts/1-of-2/_MANIFEST.json" not in hub.head_files(OUT_REPO)


@pytest.mark.soak  # starting a local Ray takes ~10 s
def test_parts_run_at_once_by_ray_commit_side_by_side(
        hub: FakeHub, tmp_path: Path, local_parts: Path) -> None:
    """``--executor ray`` on a real local Ray: the parts commit to one branch at once (each
    refused commit made again on a sibling's head), the merge gives the local run's bytes,
    and the driver's check file is gone."""
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")
    new_repo(hub)
    r = publish(env_for(hub, tmp_path / "hf", RAY_ADDRESS=""), "--out", f"{OUT}/m",
                "--staging", tmp_path / "s", "--parts", "2", "--executor", "ray",
                commit_seconds=0, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    _same_as_local(hub, local_parts)
    assert "m.parts/.shared-fs-check" not in hub.head_files(OUT_REPO)
    repo = hub.repos[("dataset", OUT_REPO)]
    assert any("m.parts/.shared-fs-check" in repo.commits[c] for c in hub.history(OUT_REPO))


def test_fixed_packing_parts_merge_into_the_hub_as_into_a_directory(
        hub: FakeHub, tmp_path: Path) -> None:
    """``--pack fixed`` parts published by ``--part I/2``, then ``prep merge``: the files
    that sit where the merged cut puts them are copies on the Hub, the others are cut again
    from local copies of only the part files they come from and uploaded; the bytes are
    those of ``--parts 2`` into a directory."""
    fixed = ("--pack", "fixed", "--format", "megatron")  # its index: where documents start
    local = tmp_path / "local" / "m"
    r = subprocess.run([sys.executable, "-m", "prep", "prepare", *ARGS, *fixed, "--out",
                        str(local), "--parts", "2"], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    new_repo(hub)
    for i in range(2):
        r = publish(env_for(hub, tmp_path / f"hf{i}"), "--out", f"{OUT}/m", "--staging",
                    tmp_path / f"s{i}", "--part", f"{i}/2", *fixed)
        assert r.returncode == 0, r.stderr
    part_files = {p: sha(d) for p, d in hub.head_files(OUT_REPO).items()
                  if p.startswith("m.parts/") and p.endswith((".bin", ".idx"))}
    parts = set(part_files.values())
    hub.clear_log()
    cache = tmp_path / "cache"  # the merge's default staging root: where it cuts files
    r = prep_cli(env_for(hub, tmp_path / "hf-merge", XDG_CACHE_HOME=str(cache)), "merge",
                 f"{OUT}/m")
    assert r.returncode == 0, r.stderr
    assert f"into {cache}/prep/staging/hf/acme/tokens/m.parts/recut" in r.stderr
    assert not list(cache.glob("**/recut"))  # removed once published
    _same_as_local(hub, local)
    merged = {sha(d) for n, d in published(hub, "m").items() if n.endswith((".bin", ".idx"))}
    assert uploaded(hub) == merged - parts and merged & parts  # some cut again, some kept
    read = {q.path.split("/resolve/")[1].partition("/")[2]  # .../resolve/COMMIT/PATH
            for q in hub.requests("GET", "/resolve/") if q.path.endswith((".bin", ".idx"))}
    assert read == {p for p, d in part_files.items() if d not in merged}  # the cut ones only
