"""Partitioned runs: which files part ``I`` of ``N`` reads, and where it writes.

The rule (docs/format.md, "Partitioned runs") is a pure function of the ordered file list's
sizes and ``N``. Part ``I`` reads the contiguous range ``files[b[I]:b[I+1]]`` of the list in
read order (after ``--shuffle-files``), with ``b[0] = 0``, ``b[N] = n`` and, for
``0 < I < N``, ``b[I]`` the ``k`` in ``[b[I-1] + 1, n - (N - I)]`` that minimises
``|N * c[k] - I * S|``, the smaller ``k`` on a tie, where ``c[k]`` is the total size of the
first ``k`` files and ``S = c[n]``. So every part holds at least one file, and each boundary
is the file boundary nearest to an equal share of the bytes. ``N`` may not exceed ``n``.

Each part is an ordinary run into ``DIR.parts/I-of-N/``; ``prep merge DIR`` joins them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from prep.errors import InputError, UsageError

PARTS_SUFFIX = ".parts"
_PART_SPEC = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Part:
    """Part ``index`` of ``count`` (0-based): ``0 <= index < count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise UsageError(
                f"--part {self.index}/{self.count}: I must be in 0..N-1 (parts are numbered "
                f"from 0), e.g. --part 0/{max(self.count, 1)}"
            )

    @classmethod
    def parse(cls, text: str) -> Part:
        """``"I/N"`` as typed after ``--part``; ``UsageError`` for anything else."""
        m = _PART_SPEC.fullmatch(text.strip())
        if m is None:
            raise UsageError(f"--part {text!r}: expected I/N, e.g. --part 0/4")
        return cls(int(m.group(1)), int(m.group(2)))

    @property
    def name(self) -> str:
        """The part's directory name under ``DIR.parts/``: ``I-of-N``."""
        return f"{self.index}-of-{self.count}"


# A part's folder name under ``NAME.parts/``: ``I-of-N`` (``.incomplete``: an unfinished
# remote run's state beside it).
PART_DIR = re.compile(r"(\d+)-of-(\d+)(\.incomplete)?")


def part_at(path: str) -> tuple[str, int] | None:
    """For the dataset path (a key, a path in a repository) of a part,
    ``.../NAME.parts/I-of-N``: the parts' folder and ``N``; None for any other path."""
    root, _, name = path.rstrip("/").rpartition("/")
    m = PART_DIR.fullmatch(name)
    if m is None or m.group(3) or not root.rpartition("/")[2].endswith(PARTS_SUFFIX):
        return None
    return root, int(m.group(2))


def parts_root(out: Path) -> Path:
    """``DIR.parts``: where the parts of ``DIR`` are built, beside ``DIR``."""
    return out.with_name(out.name + PARTS_SUFFIX)


def part_out(out: Path, part: Part) -> Path:
    """``DIR.parts/I-of-N``: the output directory of one part (an ordinary run's ``--out``)."""
    return parts_root(out) / part.name


def boundaries(sizes: Sequence[int], count: int) -> list[int]:
    """``b[0..N]`` by the rule in this module's docstring: part ``I`` is ``b[I]:b[I+1]``.

    Raises ``InputError`` when ``count`` exceeds the number of files (a part would be empty).
    """
    n = len(sizes)
    if count < 1:
        raise UsageError(f"the number of parts must be >= 1, not {count}")
    if count > n:
        raise InputError(
            f"{count} parts but the source has only {n} file(s): a part is a range of whole "
            f"files, so use at most {n} parts (or split the source into more files)"
        )
    if any(s < 0 for s in sizes):
        raise ValueError("file sizes must be >= 0")
    cum = [0, *accumulate(sizes)]
    total = cum[-1]
    bounds = [0]
    for i in range(1, count):
        lo, hi = bounds[-1] + 1, n - (count - i)
        k = min(max(_nearest(cum, i * total, count), lo), hi)
        # Clamped down to hi: empty files before it tie with it; the rule takes the first.
        while k > lo and cum[k - 1] == cum[k]:
            k -= 1
        bounds.append(k)
    bounds.append(n)
    return bounds


def _nearest(cum: list[int], target: int, count: int) -> int:
    """The smallest ``k`` minimising ``|count * cum[k] - target|`` (``cum`` non-decreasing).

    The distance falls then rises in ``k``, so clamping this unconstrained minimum into a
    range gives the minimum over that range."""
    above = bisect_left(cum, -(-target // count))  # first k with count * cum[k] >= target
    if above == 0:
        return 0
    below = bisect_left(cum, cum[above - 1])  # first k of the plateau just below target
    if above == len(cum) or target - count * cum[below] <= count * cum[above] - target:
        return below
    return above


def part_range(sizes: Sequence[int], part: Part) -> range:
    """The indices (into the ordered file list) of the files ``part`` reads."""
    b = boundaries(sizes, part.count)
    return range(b[part.index], b[part.index + 1])


def argv_without(
    argv: Sequence[str], valued: Sequence[str], flags: Sequence[str] = ()
) -> list[str]:
    """``argv`` less the options named: each of ``valued`` as ``--name VALUE`` or
    ``--name=VALUE``, each of ``flags`` alone. The one way a part's command line is cut
    from a run's (the parts an executor runs, the ``--part`` commands a run advises)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in valued or name in flags:
            skip = "=" not in arg and name in valued
            continue
        out.append(arg)
    return out
