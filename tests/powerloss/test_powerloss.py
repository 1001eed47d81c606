"""Power cuts: recorded runs on the FUSE recorder, every crash state under the weak and the
ordered model resumed and judged (:mod:`powerloss`). CI runs the self-test and a subset;
every state of every recorded run is opt-in: ``pytest -m powerloss -s tests/powerloss``
(the counts per run and model are printed)."""

from __future__ import annotations

import os
from pathlib import Path

import crashstates as cs
import harness as h
import pytest
import scenarios
from powerloss import Runner, Scenario, check, fuse_ready, record
from toy import PAYLOAD

TOY = Path(__file__).resolve().parent / "toy.py"
why = fuse_ready() or (None if os.geteuid() == 0 else "mounting needs root")
pytestmark = pytest.mark.skipif(why is not None, reason=why or "")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> h.World:
    return scenarios.world(tmp_path_factory)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    r = Runner(tmp_path_factory.mktemp("powerloss-logs"))
    yield r
    r.close()


@pytest.mark.parametrize("buggy", [False, True], ids=["fsync-then-rename", "rename-then-fsync"])
def test_self_test_a_writer_that_renames_before_it_fsyncs_is_caught(
    tmp_path: Path, runner: Runner, buggy: bool
) -> None:
    toy = lambda volume: [str(TOY), str(volume / "toy"), *(["--buggy"] if buggy else [])]  # noqa: E731
    sc = Scenario("toy", toy, {"_MANIFEST.json": PAYLOAD}, out="toy")
    report = check(sc, record(sc, tmp_path / "rec"), tmp_path / "scratch", runner)
    print(report.line())
    if not buggy:
        assert report.failures == []
        return
    caught = [f for f in report.failures if "wrong data in the state" in f]
    assert caught, report.failures
    assert any("[weak]" in f for f in caught) and any("[ordered]" in f for f in caught)


def ci_pick(ops: list[tuple[object, ...]], states: list[cs.State]) -> list[cs.State]:
    """CI's subset: the states a cut right after a commit point can leave (a checkpoint
    replaced, staging published), where a name not yet durable shows."""
    def commit(point: int) -> bool:
        op = ops[point - 1] if point else ()
        return op[:1] == ("rename",) and op[4] in ("checkpoint.json", "out")
    return [s for s in states if commit(s.point)]


@pytest.mark.parametrize("name", ["llmc", "copiers"])
def test_power_loss_ci_subset(world: h.World, tmp_path: Path, runner: Runner,
                              name: str) -> None:
    sc = scenarios.build(name, world, tmp_path / "ref")
    report = check(sc, record(sc, tmp_path / "rec"), tmp_path / "scratch", runner,
                   pick=ci_pick)
    print(report.line())
    assert report.failures == []


@pytest.mark.powerloss
@pytest.mark.parametrize("name", scenarios.NAMES)
def test_power_loss_every_state(world: h.World, tmp_path: Path, runner: Runner,
                                name: str) -> None:
    sc = scenarios.build(name, world, tmp_path / "ref")
    report = check(sc, record(sc, tmp_path / "rec"), tmp_path / "scratch", runner)
    print(report.line())
    assert report.failures == [], "\n".join(report.failures[:20])
