"""The cores a process may use (``prep.procs.cores``): its affinity, capped by its cgroup's CPU
quota, the tightest of its cgroup and their ancestors', in cgroup v2's and v1's own file
formats (written here as the kernel writes them); ``os.cpu_count()`` is never the answer
when either says less."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prep.procs.cores import available_cores, cgroup_quota

AFFINITY = len(os.sched_getaffinity(0))


def tree(tmp_path: Path, cgroup: str, files: dict[str, str]) -> tuple[Path, Path]:
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text(cgroup)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return proc, root


@pytest.mark.parametrize(("files", "quota"), [
    ({"cpu.max": "max 100000\n", "job/cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "50000 100000\n", "job/cpu.max": "max 100000\n"}, 0.5),  # a parent's cap
    ({"job/cpu.max": "max 100000\n"}, None),
    ({}, None),
])
def test_cgroup_v2(tmp_path: Path, files: dict[str, str], quota: float | None) -> None:
    proc, root = tree(tmp_path, "0::/job\n", files)
    assert cgroup_quota(proc, root) == quota


@pytest.mark.parametrize(("quota_us", "quota"), [("250000", 2.5), ("-1", None)])
def test_cgroup_v1(tmp_path: Path, quota_us: str, quota: float | None) -> None:
    proc, root = tree(tmp_path, "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n", {
        "cpu,cpuacct/docker/abc/cpu.cfs_quota_us": f"{quota_us}\n",
        "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n",
    })
    assert cgroup_quota(proc, root) == quota


def test_a_quota_caps_the_affinity_and_rounds_up(tmp_path: Path) -> None:
    proc, root = tree(tmp_path, "0::/job\n", {"job/cpu.max": "50000 100000\n"})
    assert available_cores(proc, root) == 1  # half a core still runs one worker
    proc2, root2 = tree(tmp_path / "b", "0::/job\n", {"job/cpu.max": f"{AFFINITY * 400000} "
                                                                     "100000\n"})
    assert available_cores(proc2, root2) == AFFINITY  # a quota above the CPUs changes nothing


def test_unreadable_cgroup_files_mean_no_quota(tmp_path: Path) -> None:
    assert cgroup_quota(tmp_path / "nowhere", tmp_path) is None
    assert available_cores(tmp_path / "nowhere", tmp_path) == AFFINITY


def test_a_process_pinned_to_one_cpu_has_one_core() -> None:
    """A real affinity, set by util-linux's taskset."""
    probe = "from prep.procs.cores import available_cores; print(available_cores())"
    out = subprocess.run(["taskset", "-c", str(min(os.sched_getaffinity(0))), sys.executable,
                          "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
