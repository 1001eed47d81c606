"""An incremental ``--refresh`` killed at any instant (while linking the published shards,
between checkpoints of the new rows, while sealing, around the swap) leaves ``DIR`` holding
a whole version, and ``--refresh --resume`` ends byte-identical to a from-scratch build of
the grown corpus, with ``DIR.previous`` the old version."""

from __future__ import annotations

import random
import re
import signal
from pathlib import Path
from typing import Any

import harness as h
import pytest

factories = h.factories

GROWING = h.Corpus(n_docs=22_000, n_files=11, max_file_tokens=20_000, tokenizer_docs=1500,
                   vocab_size=300, dataset="growing")
NEW_DOCS = 12_000


@pytest.fixture(scope="module")
def g(tmp_path_factory: pytest.TempPathFactory) -> h.Versions:
    w = h.make_world(tmp_path_factory.mktemp("growing"), GROWING)
    old = w.root / "old" / "out"
    done = h.run(w.args(old))
    assert done.returncode == 0, done.stderr
    h.write_plain(w.source / "part-00011.parquet",
                  factories.numbered_docs(NEW_DOCS, start=GROWING.n_docs))
    new = w.root / "new" / "out"
    done = h.run(w.args(new))
    assert done.returncode == 0, done.stderr
    return h.Versions(w.recipe(), old, new, h.dir_bytes(old), h.dir_bytes(new))


def finish_refresh(g: h.Versions, out: Path, trace: Path | None = None) -> tuple[str, set[str]]:
    """``--refresh --resume`` to the end (under strace when given a ``trace`` file);
    returns its log and the files it opened (none without a trace)."""
    cmd = ["--out", out, *g.args, "--refresh", "--resume"]
    done, opened = h.run_opening(cmd, trace) if trace else (h.run(cmd), set())
    assert done.returncode == 0, done.stderr
    h.no_traceback(done.stderr)
    assert g.whole_version(out) == "new"
    assert h.dir_bytes(out.with_name("out.previous")) == g.old_bytes
    note = h.provenance(out)["refresh"]
    assert note["incremental"] is True, note
    left = sorted(p.name for p in out.parent.iterdir() if not p.name.startswith("fired"))
    assert left == ["out", "out.lock", "out.previous"], left
    return done.stderr, opened


def kill(target: str, when: str = "after", nth: int = 1, **filters: Any) -> dict[str, Any]:
    return {"target": target, "when": when, "nth": nth, "action": "kill", **filters}


KILLS = {
    "while linking the published shards": (kill("prep.run.increment._reuse", nth=3), "old"),
    "after the first checkpoint": (kill("prep.run.committed.RunState.checkpoint", nth=1), "old"),
    "between checkpoints of new rows": (
        kill("prep.run.committed.RunState.checkpoint", nth=40), "old"),
    "while sealing": (kill("prep.formats.idfile.IdFileWriter.seal", nth=2), "old"),
    "before the exchange": (kill("prep.outputs.local.exchange", "before"), "old"),
    "after the exchange": (kill("prep.outputs.local.exchange", "after"), "new"),
    "while retiring the old version":
        (kill("prep.outputs.local.rename_noreplace", "before"), "new"),
}  # fmt: skip


@h.needs_strace
@pytest.mark.parametrize("case", sorted(KILLS))
def test_incremental_refresh_killed_then_resumed(g: h.Versions, tmp_path: Path, case: str) -> None:
    fault, holds = KILLS[case]
    out = g.published_old(tmp_path)
    # A checkpoint after every batch: the Nth checkpoint is a fixed row, whatever the speed.
    cmd = ["--out", out, *g.args, "--refresh", *h.FAST, "--checkpoint-interval", "1e-9",
           "--batch-size", "64"]
    done = h.run(cmd, faults=fault, mark=tmp_path / "fired")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "refreshing incrementally" in done.stderr or case.startswith("while linking")
    assert g.whole_version(out) == holds  # DIR is untouched until the swap
    log, opened = finish_refresh(g, out, tmp_path / "fired.strace")
    replayed = re.search(r"replayed ([\d,]+) rows", log)
    if "checkpoint" in case:  # a resume reads again only rows after the published ones
        assert replayed, log
        assert 0 < int(replayed.group(1).replace(",", "")) <= NEW_DOCS, log
        # ... and only the new file: the published ones are trusted by their unchanged
        # fingerprints, as the refresh trusted them, not read (their footers neither)
        source = Path(g.args[g.args.index("--source") + 1])
        assert h.opened_under(source, opened) == ["part-00011.parquet"], log


@pytest.mark.soak  # the exact moments above run by default; random kills of a refresh too
def test_incremental_refresh_killed_at_random_moments(g: h.Versions, tmp_path: Path) -> None:
    """Kills at seeded random points, each gated on an event the run must reach (the Nth
    published shard reused, the Nth checkpoint of new rows, a seal, either side of the swap),
    never on how fast the machine is; before each gated one from the second on, a kill after
    a random few milliseconds lands wherever that run is (start-up, hashing, replay) or, if
    it finished first, nowhere. Every resume continues the incremental refresh."""
    rng = random.Random(15)
    out = g.published_old(tmp_path)
    cmd = ["--out", out, *g.args, "--refresh", "--resume", *h.EVERY_BATCH, "--batch-size", "64"]
    shards = len(h.manifest(g.old)["files"])
    # Only the first run links (a resume finds staging): its kill point comes first. The
    # checkpoints stay below the ~190 batches of the new rows, so each of them is reached.
    points = [
        kill("prep.run.increment._reuse", nth=rng.randint(1, shards)),
        *(kill("prep.run.committed.RunState.checkpoint", nth=rng.randint(1, 50)) for _ in range(3)),
        kill("prep.formats.idfile.IdFileWriter.seal", nth=1),
        kill("prep.outputs.local.exchange", rng.choice(["before", "after"])),
    ]
    fired = 0
    for n, point in enumerate(points):
        if n:
            proc = h.spawn(cmd)
            killed = h.kill_after(proc, rng.uniform(0.0, 0.3))
            code, err = proc.finish()
            g.whole_version(out)
            if not killed:  # it finished first: nothing is left to kill
                assert code == 0, err
                break
        done = h.run(cmd, faults=point, mark=tmp_path / "fired")
        assert done.returncode == -signal.SIGKILL, f"{point} did not fire:\n{done.stderr}"
        h.no_traceback(done.stderr)
        swapped = point["target"] == "prep.outputs.local.exchange" and point["when"] == "after"
        assert g.whole_version(out) == ("new" if swapped else "old")
        fired += 1
    assert len((tmp_path / "fired").read_text().splitlines()) == fired
    finish_refresh(g, out)
