"""Executors' plain parts: the shared-filesystem check a Ray task makes before it starts, the
command line every part shares, and the local executor running a real job per part."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.errors import EXIT_TEMPFAIL
from prep.executors import PartsFailed, driver_options_removed, executor_for, part_argv
from prep.executors.ray_tasks import NotShared, _check_shared
from prep.partition import Part


def test_a_node_that_does_not_see_the_token_refuses_naming_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "ds"  # the driver marked its parts root, ds.parts/
    (tmp_path / "ds.parts").mkdir()
    (tmp_path / "ds.parts" / ".shared-fs-check").write_text("abc")
    _check_shared(str(out), "abc")  # the driver's own view passes
    with pytest.raises(NotShared, match="a filesystem every node mounts"):
        _check_shared(str(out), "other")
    with pytest.raises(NotShared, match="does not see"):
        _check_shared(str(tmp_path / "elsewhere"), "abc")


def test_driver_options_are_removed_in_both_spellings() -> None:
    argv = ["--out", "d", "--parts", "3", "--executor=ray", "--threads", "2", "--seed", "7"]
    assert driver_options_removed(argv) == ["--out", "d", "--seed", "7"]
    assert part_argv(["--out", "d"], Part(1, 3)) == ["--out", "d", "--part", "1/3", "--resume"]


def test_local_executor_runs_each_part_and_names_the_ones_that_stopped(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def job(argv: list[str]) -> int:
        seen.append(argv)
        return EXIT_TEMPFAIL if "1/2" in argv else 0

    with pytest.raises(PartsFailed, match=r"1-of-2 \(exit 75\)") as e:
        executor_for("local").run_parts(job, ["--out", "d"], tmp_path, [Part(0, 2), Part(1, 2)],
                                        1)
    assert e.value.exit_code == EXIT_TEMPFAIL
    assert seen == [["--out", "d", "--part", f"{i}/2", "--resume", "--threads", "1"]
                    for i in range(2)]
