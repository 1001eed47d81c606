"""The restore plan (``prep.run.resume.restore``): every check reads only, the plan says exactly
what applying it will change, and applying it continues to the bytes of a run that never
stopped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from run_helpers import FMT, Setup, killed, setup, started, tree

from prep.errors import IntegrityError, Interrupted
from prep.run.loop import execute
from prep.run.resume.restore import apply_restore, plan_restore, replay
from prep.state import checkpoint as ckpt
from prep.state.manifest import MANIFEST_NAME
from prep.stream.order import Preparer


def plan(s: Setup, typed: dict[str, object] | None = None):  # type: ignore[no-untyped-def]
    return plan_restore(s.paths, s.opts, typed or {}, never)


def never() -> bool:
    return False


def test_plan_only_reads_and_names_what_apply_changes(tmp_path: Path) -> None:
    s = setup(tmp_path)
    killed(s)
    staging = s.paths.staging
    (staging / ".checkpoint.json.abc123.tmp").write_bytes(b"{")  # an interrupted write
    cp = ckpt.load(staging)
    before = tree(staging)
    p = plan(s)
    assert tree(staging) == before, "planning changed staging"
    named = {n for st in cp.splits.values() for n in st.names()}
    on_disk = {n for n in before if FMT.owns_file(n)}
    assert {x.name for x in p.stray} == (on_disk - named) | {".checkpoint.json.abc123.tmp"}
    assert on_disk - named, "the uncommitted batches rolled over into a new shard"
    assert p.cursor.rows_visited == cp.progress.rows_visited
    for split, st in cp.splits.items():
        verified = p.opened[split]
        assert st.open is not None and verified is not None
        assert (verified.name, verified.n) == (st.open.name, st.open.n_tokens)

    state = apply_restore(p, s.paths, s.opts)
    after = tree(staging)
    assert set(after) == set(before) - {x.name for x in p.stray}
    for st in cp.splits.values():
        assert st.open is not None
        assert len(after[st.open.name]) == 1024 + 2 * st.open.n_tokens  # cut to the commit
    assert state.cursor.rows_visited == cp.progress.rows_visited and not state.fresh
    manifest = execute(state, p.stream, never)
    assert (staging / MANIFEST_NAME).read_bytes() == manifest.to_bytes()

    whole = setup(tmp_path, name="whole")
    execute(*started(whole), never)
    resumed = {n: b for n, b in tree(staging).items() if FMT.owns_file(n)}
    straight = {n: b for n, b in tree(whole.paths.staging).items() if FMT.owns_file(n)}
    assert resumed == straight


def test_plan_refuses_a_modified_sealed_shard(tmp_path: Path) -> None:
    s = setup(tmp_path)
    killed(s, committed=8, after=0)
    cp = ckpt.load(s.paths.staging)
    sealed = cp.splits["train"].sealed[0].name
    path = s.paths.staging / sealed
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    before = tree(s.paths.staging)
    with pytest.raises(IntegrityError, match=rf"{sealed}: SHA-256 .* modified after it was sealed"):
        plan(s)
    assert tree(s.paths.staging) == before


def test_plan_refuses_a_changed_source_listing(tmp_path: Path) -> None:
    s = setup(tmp_path)
    killed(s)
    (Path(s.recipe.source) / "part-00001.parquet").rename(
        Path(s.recipe.source) / "part-00009.parquet"
    )
    before = tree(s.paths.staging)
    with pytest.raises(IntegrityError) as e:
        plan(s)
    assert (
        "the source changed since the run started:\n  part-00001.parquet: removed\n"
        "  part-00009.parquet: added\n" in str(e.value)
    )
    assert tree(s.paths.staging) == before


def test_plan_refuses_typed_options_that_contradict(tmp_path: Path) -> None:
    s = setup(tmp_path)
    killed(s)
    with pytest.raises(IntegrityError, match=r"--seed: typed 5, the run was started with 1337"):
        plan(s, {"seed": 5})


def test_replay_refuses_a_different_prefix(tmp_path: Path) -> None:
    s = setup(tmp_path)
    killed(s)
    cp = ckpt.load(s.paths.staging)
    state, _ = started(setup(tmp_path, name="other"))
    state.close()  # only its read order is used
    rows = cp.progress.rows_visited
    prep_rows = Preparer(cp.recipe, state.files)
    other = iter([("not the text", None, 0, i) for i in range(rows)])
    with pytest.raises(IntegrityError, match=r"prefix digest mismatch"):
        replay(other, prep_rows, cp, never, s.paths.final)
    short = iter([("x", None, 0, 0)])
    with pytest.raises(IntegrityError, match=rf"ends after 1 rows, but {rows:,} were"):
        replay(short, prep_rows, cp, never, s.paths.final)
    with pytest.raises(Interrupted, match=r"stopped on request while replaying") as e:
        replay(iter([]), prep_rows, cp, lambda: True, s.paths.final)
    # The resume arguments are data; the message still ends with the command they make.
    assert e.value.reason == "stopped on request while replaying the source; nothing was changed."
    assert e.value.resume == ("--out", str(s.paths.final), "--resume")
    assert str(e.value) == (f"{e.value.reason} Resume with: prep prepare --out {s.paths.final} "
                            "--resume")


def test_datatroves_split_folders_lose_what_came_after_the_checkpoint(tmp_path: Path) -> None:
    """A shard rolled over into ``train/`` after the last checkpoint is removed from its
    folder, and the run continues to the bytes of one that never stopped."""

    def trove(name: str) -> Setup:
        s = setup(tmp_path, name=name)
        return Setup(dataclasses.replace(s.recipe, format="datatrove"), s.opts, s.paths)

    s = trove("out")
    killed(s)
    staging = s.paths.staging
    cp = ckpt.load(staging)
    named = {f for st in cp.splits.values() for n in st.names() for f in (n, f"{n}.index")}
    p = plan(s)
    stray = {x.relative_to(staging).as_posix() for x in p.stray}
    assert stray and all(n.startswith(("train/", "val/")) for n in stray)
    assert not stray & named
    state = apply_restore(p, s.paths, s.opts)
    assert not any((staging / n).exists() for n in stray)
    execute(state, p.stream, never)
    whole = trove("whole")
    execute(*started(whole), never)
    assert in_folders(staging) == in_folders(whole.paths.staging)
    assert len(in_folders(staging)) > 3 * 2  # several shards of three files in each folder


def in_folders(directory: Path) -> dict[str, bytes]:
    """Every file in the split folders below ``directory``, by its path from it."""
    return {q.relative_to(directory).as_posix(): q.read_bytes()
            for folder in ("train", "val") for q in (directory / folder).iterdir()}
