"""A rolled-over shard is sealed in a background thread while the committing thread goes on
with the next one. A real ``prepare`` subprocess is parked inside that seal (a gate at its
call site), shown to have written ids into the next shard meanwhile without a checkpoint
naming the parked shard as sealed, then killed with SIGKILL there; ``--resume`` publishes
bytes identical to an uninterrupted run."""

from __future__ import annotations

import dataclasses
import signal
import time
from pathlib import Path

import harness as h
import pytest

FSYNC = "prep.formats.idfile.os.fsync"  # the .bin's fsync, after its final header
REPLACE = "prep.fsio.os.replace"  # megatron: the .idx's atomic write, after the .bin
HEADER_BYTES = {"llmc": 1024, "megatron": 0}  # a new shard's size before any id

PARKED = [
    pytest.param("llmc", FSYNC, id="llmc-header-written-not-fsynced"),
    pytest.param("megatron", FSYNC, id="megatron-bin-not-fsynced"),
    pytest.param("megatron", REPLACE, id="megatron-bin-sealed-idx-not-in-place"),
]


@pytest.mark.parametrize(("fmt", "target"), PARKED)
def test_sigkill_while_a_shard_seals_in_the_background_then_resume_is_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, fmt: str, target: str
) -> None:
    w = h.world(tmp_path_factory, dataclasses.replace(h.SMALL, format=fmt))
    out = tmp_path / "out"
    # Parked for longer than the test waits: a seal on the committing thread would park
    # the run itself, and no id would reach the next shard in time.
    fault = {**h.gate(target, tmp_path, when="before"), "within": ["seal", "_roll"],
             "timeout": 3 * h.TIMEOUT}
    proc = h.spawn(w.args(out, *h.EVERY_BATCH), faults=fault)
    h.wait_for((tmp_path / "reached").exists, "the first rollover's seal", proc)
    staging = h.staging_of(out)

    def next_shard_has_ids() -> bool:
        return any(p.stat().st_size > HEADER_BYTES[fmt] for p in staging.glob("*-00001.bin"))

    h.wait_for(next_shard_has_ids, "ids in the next shard while the seal is parked", proc)
    # A checkpoint after every batch: had the committing thread checkpointed past the
    # rollover without waiting for the seal, one would be on disk by now.
    time.sleep(1.0)
    cp = h.read_checkpoint(out)
    assert cp is not None
    sealed = [r["name"] for s in cp["splits"].values() for r in s["sealed"]]
    assert sealed == [], f"a checkpoint lists {sealed} before their seal finished"
    opened = [s["open"]["name"] for s in cp["splits"].values() if s["open"]]
    assert all("-00000" in name for name in opened), (
        f"a checkpoint after the rollover ({opened}) was written before the seal finished")
    proc.kill()
    code, err = proc.finish()
    assert code == -signal.SIGKILL, err
    done = h.run(["--out", out, "--resume", *h.FAST])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
