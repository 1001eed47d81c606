"""The run's measurements (prep.run.telemetry): what a run measured of itself reaches
``_PROVENANCE.json`` and never a checkpoint, so a resume cannot inherit another process's
figures."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from run_helpers import Setup, commit, setup, started

from prep.run.loop import execute
from prep.run.telemetry import Measurements


def never() -> bool:
    return False


@pytest.mark.parametrize(("asked", "measured_workers"), [(None, 0), (1, 1)])
def test_a_run_measures_afresh_and_the_figures_reach_only_the_provenance(
    tmp_path: Path, asked: int | None, measured_workers: int
) -> None:
    """A corpus this small is tokenized in-process unless workers are asked for."""
    plain = setup(tmp_path)
    s = Setup(plain.recipe, dataclasses.replace(plain.opts, workers=asked), plain.paths)
    state, stream = started(s)
    commit(state, stream, 2)
    state.checkpoint()
    checkpoint = json.loads((s.paths.staging / "checkpoint.json").read_text())
    measured = {f.name for f in dataclasses.fields(Measurements)}
    assert not measured & set(checkpoint), "a checkpoint holds a measurement"

    execute(state, stream, never)
    provenance = json.loads((s.paths.staging / "_PROVENANCE.json").read_text())
    assert provenance["engine"] == "byte"  # the byte tokenizer is its own engine
    assert provenance["workers"] == measured_workers
    assert provenance["main_cpu_seconds"] > 0
    assert provenance["cross_check"] is None  # the reference is not checked against itself
    assert provenance["documents_by_engine"] is None  # nor does it route documents


def test_nothing_is_measured_before_the_run_measures_it() -> None:
    assert all(v is None for v in dataclasses.asdict(Measurements()).values())
