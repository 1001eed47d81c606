"""The kill/resume guarantees for every output format: real ``prepare`` subprocesses killed
with SIGKILL at random moments and at the exact calls that seal a shard, then resumed,
publish bytes identical to an uninterrupted run of the same format (``.idx`` included)."""

from __future__ import annotations

import dataclasses
import json
import signal
from pathlib import Path

import harness as h
import pytest
from harness import World

# llmc: tests/faults/test_kill_resume.py
FORMATS = ["datatrove", "llmc-llama3", "megatron", "npy", "olmo", "raw"]
# Random kills land in code that no format owns (the loop, the commit, the replay); the
# format's own moments are the seal sites below. By default random kills run for llmc (in
# tests/faults/test_kill_resume.py); every other format's cost about 8 s each and run with
# the soak (pytest -m soak).
RANDOM_FORMATS = [pytest.param(fmt, marks=pytest.mark.soak) for fmt in FORMATS]
# 4,500 batches of 8 take at least 2.25 s on any machine: more than the 2 x 0.6 s of the
# longest delays before the two kills the random test counts on.
PACE = h.paced(0.0005)


def world_of(tmp_path_factory: pytest.TempPathFactory, fmt: str, size: h.Corpus) -> World:
    fmt, _, pack = fmt.partition("+")  # "megatron+fixed": --format megatron --pack fixed
    return h.world(tmp_path_factory, dataclasses.replace(size, format=fmt,
                                                         pack=pack or "whole"))


# --pack fixed: random kills of every format behind -m soak; the default suite kills an
# indexed format's fixed run at a seal (SEAL_SITES), documents crossing its files.
FIXED = [pytest.param(f"{fmt}+fixed", marks=pytest.mark.soak)
         for fmt in ("llmc", "datatrove", "megatron", "npy", "olmo", "raw")]


@pytest.mark.parametrize("fmt", RANDOM_FORMATS + FIXED)
def test_sigkill_at_random_moments_then_resume_is_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, fmt: str
) -> None:
    w = world_of(tmp_path_factory, fmt, h.KILL)
    assert w.reference_dir is not None
    recipe = json.loads((w.reference_dir / "_MANIFEST.json").read_bytes())["recipe"]
    assert f"{recipe['format']}+{recipe.get('pack', 'whole')}".removesuffix("+whole") == fmt
    out = tmp_path / "out"
    h.kill_until_done(w.fresh_args(out), out, fmt, 2, PACE, delays=(0.6, 0.6), new_workers=False)
    h.assert_identical(w, out)


SEAL = "prep.formats.idfile.IdFileWriter.seal"  # the .bin's final header and fsync
REPLACE = "prep.fsio.os.replace"  # an indexed format's companions' atomic writes, right after
# By default each kind of writer is killed at one side of its seal: a one-file format (npy)
# after it, an indexed one (megatron) before it; megatron's and olmo's companions (an index,
# a .csv.gz) at one side of their replace. The formats of a kind share their writer (a
# Layout row is data), and every other site runs with the soak (pytest -m soak).
_SEAL_DEFAULT = {("megatron", "before"), ("npy", "after")}
_REPLACE_DEFAULT = {("megatron", "before"), ("olmo", "after")}


def _default_or_soak(site: tuple[str, str], default: set[tuple[str, str]]
                     ) -> tuple[pytest.MarkDecorator, ...]:
    return () if site in default else (pytest.mark.soak,)


SEAL_SITES = [
    pytest.param(fmt, SEAL, when, id=f"{fmt}-seal-{when}",
                 marks=_default_or_soak((fmt, when), _SEAL_DEFAULT))
    for fmt in FORMATS
    for when in ("before", "after")
] + [
    pytest.param(fmt, REPLACE, when, id=f"{fmt}-index-replace-{when}",
                 marks=_default_or_soak((fmt, when), _REPLACE_DEFAULT))
    for fmt in ("datatrove", "megatron", "olmo")
    for when in ("before", "after")
] + [
    pytest.param(f"{fmt}+fixed", target, when, id=f"{fmt}-fixed-{name}-{when}",
                 marks=() if (fmt, name, when) == ("olmo", "seal", "after") else pytest.mark.soak)
    for fmt in ("llmc", "megatron", "olmo")
    for target, name in ((SEAL, "seal"), (REPLACE, "index-replace"))
    for when in ("before", "after")
    if target == SEAL or fmt != "llmc"
]


@pytest.mark.parametrize(("fmt", "target", "when"), SEAL_SITES)
def test_sigkill_while_sealing_a_shard_then_resume_is_identical(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, fmt: str, target: str, when: str
) -> None:
    w = world_of(tmp_path_factory, fmt, h.SMALL)
    out = tmp_path / "out"
    fault = {"target": target, "when": when, "nth": 3, "action": "kill", "within": "_roll"}
    killed = h.run(w.fresh_args(out), faults=fault)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = h.run(["--out", out, "--resume", *h.FAST])
    assert done.returncode == 0, done.stderr
    h.assert_identical(w, out)
