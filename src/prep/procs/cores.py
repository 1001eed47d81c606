"""How many cores this process may use: the CPUs it may run on (its affinity: ``taskset``,
a container's cpuset), fewer when its cgroup caps its CPU time (a container's ``--cpus``, a
systemd unit's ``CPUQuota=``, a Kubernetes limit). ``os.cpu_count()`` counts the machine's,
which a container may see all of and be allowed a fraction.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cores(proc_self: Path = Path("/proc/self"), root: Path = CGROUP_ROOT) -> int:
    """The cores this process may keep busy (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_quota(proc_self, root)
    return max(1, min(cpus, math.ceil(quota))) if quota is not None else cpus


def cgroup_quota(proc_self: Path = Path("/proc/self"), root: Path = CGROUP_ROOT) -> float | None:
    """The tightest CPU quota (in cores) of this process's cgroup and its ancestors, or None
    when none is set or none can be read. cgroup v2's ``cpu.max`` (``QUOTA PERIOD``, or
    ``max``), else v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1: none)."""
    try:
        lines = (proc_self / "cgroup").read_text().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            found += _walk(root, path, _v2_quota)
        elif "cpu" in controllers.split(","):
            base = next((root / d for d in (controllers, "cpu,cpuacct", "cpu")
                         if (root / d).is_dir()), None)
            if base is not None:
                found += _walk(base, path, _v1_quota)
    return min(found) if found else None


def _walk(base: Path, path: str, read: Callable[[Path], float | None]) -> list[float]:
    """The quotas ``read`` finds in ``base/path`` and each of its parents up to ``base``."""
    out = []
    parts = [p for p in path.split("/") if p]
    for depth in range(len(parts), -1, -1):
        quota = read(base.joinpath(*parts[:depth]))
        if quota is not None:
            out.append(quota)
    return out


def _v2_quota(directory: Path) -> float | None:
    try:
        quota, period = (directory / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return _ratio(quota, period)


def _v1_quota(directory: Path) -> float | None:
    try:
        quota = (directory / "cpu.cfs_quota_us").read_text().strip()
        period = (directory / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return None if quota.startswith("-") else _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None
