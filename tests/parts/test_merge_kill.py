"""``prep merge`` killed (SIGKILL) at each step — verifying, linking, writing the manifest,
renaming into place, syncing — then run again, publishes the same dataset as a merge that
was never interrupted, and leaves nothing behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harness import run, tree

from parts.partskit import part_args, uneven_corpus

SITES = [
    # (target as seen from its import site, nth call, before/after the call)
    ("prep.merge.verify_output", 2, "before"),
    ("prep.outputs.local.os.link", 1, "before"),
    ("prep.outputs.local.os.link", 3, "after"),
    ("prep.fsio.os.replace", 1, "after"),  # _PROVENANCE.json written
    ("prep.fsio.os.replace", 2, "before"),  # before _MANIFEST.json lands
    ("prep.outputs.local.rename_noreplace", 1, "before"),
    ("prep.outputs.local.rename_noreplace", 1, "after"),  # published, parent not synced
]


def _parts_and_merge(tmp_path_factory: pytest.TempPathFactory, name: str,
                     extra: tuple[str, ...] = ()) -> tuple[Path, dict[str, str]]:
    """Three published parts (kept pristine) and the tree of their uninterrupted merge."""
    from prep.cli.commands import main

    root = tmp_path_factory.mktemp(name)
    corpus = uneven_corpus(root / "c")
    out = root / "pristine" / "ds"
    for i in range(3):
        assert main(part_args(corpus, out, f"{i}/3", extra)) == 0
    ref = root / "ref" / "ds"
    shutil.copytree(out.with_name("ds.parts"), ref.with_name("ds.parts"))
    assert main(["merge", str(ref)]) == 0
    return out, _published(ref)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return _parts_and_merge(tmp_path_factory, "mergekill")


def _published(out: Path) -> dict[str, str]:
    """Every file's hash but the provenance (its timings differ between merges)."""
    return {k: v for k, v in tree(out).items() if k != "_PROVENANCE.json"}


@pytest.mark.parametrize(("target", "nth", "when"), SITES)
def test_killed_merge_reruns_to_the_same_dataset(
    tmp_path: Path, built: tuple[Path, dict[str, str]], target: str, nth: int, when: str
) -> None:
    pristine, expected = built
    out = tmp_path / "ds"
    shutil.copytree(pristine.with_name("ds.parts"), out.with_name("ds.parts"))
    mark = tmp_path / "mark"
    fault = {"target": target, "nth": nth, "when": when, "action": "kill"}
    killed = run(["merge", out], faults=[fault], mark=mark)
    assert killed.returncode == -9, killed.stderr
    assert mark.exists()  # the fault fired where it was meant to
    from prep.cli.commands import main

    assert main(["merge", str(out)]) == 0
    assert _published(out) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "ds.lock", "ds.parts", "mark"]


FIXED = ("--pack", "fixed", "--max-file-tokens", "700")


@pytest.fixture(scope="module")
def built_fixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The same, packed --pack fixed: the merge writes files anew."""
    return _parts_and_merge(tmp_path_factory, "mergekill-fixed", FIXED)


@pytest.mark.parametrize(("target", "nth", "when"), [
    ("prep.formats.idfile.IdFileWriter.seal", 2, "after"),  # re-cutting the parts' files
    pytest.param("prep.outputs.local.os.link", 2, "after", marks=pytest.mark.soak),
])
def test_a_fixed_merge_killed_while_re_cutting_or_linking_reruns_to_the_same_dataset(
    tmp_path: Path, built_fixed: tuple[Path, dict[str, str]], target: str, nth: int,
    when: str,
) -> None:
    test_killed_merge_reruns_to_the_same_dataset(tmp_path, built_fixed, target, nth, when)
