"""A ``--refresh`` killed at random instants leaves ``DIR`` holding the old or the new complete
version, and the next ``--refresh`` finishes the job forward: ``DIR`` is the new version,
``DIR.previous`` the old one."""

from __future__ import annotations

import random
import shutil
import signal
from pathlib import Path
from typing import Any

import harness as h
import pytest

factories = h.factories


@pytest.fixture(scope="module")
def v(tmp_path_factory: pytest.TempPathFactory) -> h.Versions:
    w = h.world(tmp_path_factory)  # a build long enough for random kills to land in
    root = tmp_path_factory.mktemp("refresh")
    source = Path(shutil.copytree(w.source, root / "corpus"))
    args = w.recipe(source=source)
    old = root / "old" / "out"
    done = h.run(["--out", old, *args])
    assert done.returncode == 0, done.stderr
    factories.write_parquet(
        source / "part-99999.parquet", factories.numbered_docs(3000, start=w.corpus.n_docs)
    )
    new = root / "new" / "out"
    done = h.run(["--out", new, *args])
    assert done.returncode == 0, done.stderr
    old_bytes, new_bytes = h.dir_bytes(old), h.dir_bytes(new)
    assert old_bytes != new_bytes
    return h.Versions(args, old, new, old_bytes, new_bytes)


def assert_refreshed(v: h.Versions, out: Path) -> None:
    assert v.whole_version(out) == "new"
    previous = out.with_name(out.name + ".previous")
    assert h.dir_bytes(previous) == v.old_bytes, "the old version was not kept"
    left = sorted(p.name for p in out.parent.iterdir() if p.name != "fired")
    assert left == [out.name, out.name + ".lock", out.name + ".previous"], f"left: {left}"
    again = h.run(["--out", out, *v.args, "--refresh"])
    assert again.returncode == 0, again.stderr
    assert "up to date" in again.stderr
    assert v.whole_version(out) == "new"


def kill(target: str, when: str = "after", nth: int = 1, **filters: Any) -> dict[str, Any]:
    return {"target": target, "when": when, "nth": nth, "action": "kill", **filters}


# SIGKILL at each exact step of the swap is covered by tests/ops/test_swap.py; here the
# refresh is killed at random moments, and a kill mid-journal must leave no temp file.


def test_refresh_killed_at_random_moments(v: h.Versions, tmp_path: Path) -> None:
    """cron's one command, killed again and again: DIR is always a whole version.

    Paced: the new version's 39,000 documents in batches of 8 take at least 4,875 x 0.75 ms
    = 3.7 s on any machine, more than the 3 x 0.9 s of the longest delays before the three
    kills counted on."""
    rng = random.Random(13)
    out = v.published_old(tmp_path)
    cmd = ["--out", out, *v.args, "--refresh", *h.FAST]
    kills = 0
    for _ in range(20):
        proc = h.spawn(cmd, faults=h.paced(0.00075))
        killed = kills < 6 and h.kill_after(proc, rng.uniform(0.1, 0.9))
        code, err = proc.finish()
        v.whole_version(out)
        if not killed:
            assert code == 0, err
            break
        kills += 1
    assert kills >= 3, "too few kills landed before the refresh finished"
    assert_refreshed(v, out)


def test_refresh_killed_while_writing_the_journal_leaves_nothing_behind(
    v: h.Versions, tmp_path: Path
) -> None:
    out = v.published_old(tmp_path)
    cmd = ["--out", out, *v.args, "--refresh"]
    fault = kill("prep.fsio.os.replace", "before", arg_contains=".swap.json")
    done = h.run(cmd, faults=fault, mark=tmp_path / "fired")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert v.whole_version(out) == "old"
    done = h.run(cmd)
    assert done.returncode == 0, done.stderr
    assert_refreshed(v, out)
