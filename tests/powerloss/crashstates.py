"""The generator: every crash state a recorded run (:mod:`recorder`) can leave after each of
its operations, under two persistence models.

What survives a power cut is what reached the disk. Each file has its *durable* bytes (as of
its last fsync; none for a file never fsynced) and its current ones; each directory its
durable entries (as of its last fsync) and its current ones. The directory changes since a
directory's last fsync are its pending *units*: a create, link, unlink or same-directory
rename is one unit (a rename is atomic), ``RENAME_EXCHANGE`` is one unit, and a rename
between two directories is two (the new name in one, the old one gone from the other),
each made durable by its own directory's fsync.

``weak`` (POSIX, as ALICE and CrashMonkey take it): an fsync of a file makes its bytes
durable, an fsync of a directory its entries, and nothing else is ordered. After operation
``k`` the states are the durable entries with: no pending unit, every one, each one alone,
and each one left out (any subset would be exponential; these catch a name that one
ordering loses); file bytes durable only (so a name whose data was never fsynced comes back
empty). Plus every unit with the current bytes, and with the last write torn.

``ordered`` (journaled metadata, as ext4 ``data=ordered`` and XFS): directory changes
persist in the order they were made, so the state after operation ``k`` has all of them,
with the bytes durable only, current, or with the last write torn. A crash that kept only
a prefix of them is the state after an earlier operation: every operation is a crash point.

States are compared by what they hold (each file's inode and the version of its bytes), so
each distinct one is resumed once.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RENAME_EXCHANGE = 2
MODELS = ("weak", "ordered")

# A unit: the directory it belongs to, and its changes to that directory's entries
# (name -> inode, or None for a name removed), applied together.
Unit = tuple[int, tuple[tuple[str, "int | None"], ...]]
# A state: every path it holds, with the inode and bytes version of each file (None: a
# directory); what decides what a resume finds.
Key = frozenset[tuple[str, int, "int | None"]]


@dataclass
class State:
    """One crash state: where it first appeared (operation index, model, variant)."""

    key: Key
    point: int
    variant: str
    files: dict[str, tuple[int, int]]  # path -> (inode, bytes version)
    dirs: list[str]


@dataclass
class Replay:
    """The filesystem as the log is replayed: current and durable, per inode."""

    dirs: set[int]
    cur: dict[int, dict[str, int]] = field(default_factory=dict)
    dur: dict[int, dict[str, int]] = field(default_factory=dict)
    pending: list[Unit] = field(default_factory=list)
    data: dict[int, bytearray] = field(default_factory=dict)
    version: dict[int, int] = field(default_factory=dict)  # current bytes version
    durable: dict[int, int] = field(default_factory=dict)  # version at the last fsync
    store: dict[tuple[int, int], bytes] = field(default_factory=dict)  # kept versions
    torn: tuple[int, int] | None = None  # (inode, version) of a torn last write
    applied: int = 0  # operations replayed

    @classmethod
    def start(cls, initial: tuple[dict[str, int], dict[int, bytes], set[int]]) -> Replay:
        """The tree at mount time, all of it durable."""
        ids, data, dirs = initial
        r = cls(set(dirs))
        for d in dirs:
            r.cur[d], r.dur[d] = {}, {}
        for path, ino in ids.items():
            if path != "/":
                head, name = os.path.split(path)
                r.cur[ids[head]][name] = ino
                r.dur[ids[head]][name] = ino
        for ino, raw in data.items():
            r.data[ino] = bytearray(raw)
            r.version[ino] = r.durable[ino] = 0
            r.store[(ino, 0)] = raw
            r.store[(ino, -1)] = b""
        return r

    def keep(self, ino: int) -> int:
        v = self.version[ino]
        if (ino, v) not in self.store:
            self.store[(ino, v)] = bytes(self.data[ino])
        return v

    def _unit(self, d: int, changes: tuple[tuple[str, int | None], ...]) -> None:
        for name, ino in changes:
            if ino is None:
                self.cur[d].pop(name, None)
            else:
                self.cur[d][name] = ino
        self.pending.append((d, changes))

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        self.torn = None
        self.applied += 1
        if kind in ("mkdir", "create", "link"):
            _, parent, name, ino = op
            if kind == "mkdir":
                self.dirs.add(ino)
                self.cur[ino], self.dur[ino] = {}, {}
            elif kind == "create":
                self.data[ino] = bytearray()
                self.version[ino], self.durable[ino] = 0, -1
                self.store[(ino, -1)] = self.store[(ino, 0)] = b""
            self._unit(parent, ((name, ino),))
        elif kind == "unlink":
            self._unit(op[1], ((op[2], None),))
        elif kind == "rename":
            _, sd, sn, dd, dn, flags = op
            moving = self.cur[sd][sn]
            if flags & RENAME_EXCHANGE:
                other = self.cur[dd][dn]
                if sd == dd:
                    self._unit(sd, ((sn, other), (dn, moving)))
                else:
                    self._unit(dd, ((dn, moving),))
                    self._unit(sd, ((sn, other),))
            elif sd == dd:
                self._unit(sd, ((sn, None), (dn, moving)))
            else:
                self._unit(dd, ((dn, moving),))
                self._unit(sd, ((sn, None),))
        elif kind in ("write", "truncate"):
            ino = op[1]
            buf = self.data[ino]
            if kind == "write":
                _, _, offset, raw = op
                before = bytes(buf)
                if len(buf) < offset:
                    buf.extend(bytes(offset - len(buf)))
                buf[offset:offset + len(raw)] = raw
                if len(raw) >= 2:
                    self.torn = (ino, self._torn(ino, before, offset, raw))
            else:
                del buf[op[2]:]
                if len(buf) < op[2]:
                    buf.extend(bytes(op[2] - len(buf)))
            self.version[ino] += 1
        elif kind == "fsync":
            self.durable[op[1]] = self.keep(op[1])
        elif kind == "fsyncdir":
            d = op[1]
            self.dur[d] = dict(self.cur[d])
            self.pending = [u for u in self.pending if u[0] != d]
        else:
            raise ValueError(f"unknown operation {kind!r}")

    def _torn(self, ino: int, before: bytes, offset: int, raw: bytes) -> int:
        """Store the bytes of ``ino`` had only the first part of the write reached the
        disk (cut at a 512-byte boundary when the write spans one); returns its version."""
        cut = len(raw) // 2
        if cut >= 512:
            cut -= (offset + cut) % 512
        torn = bytearray(before)
        if len(torn) < offset:
            torn.extend(bytes(offset - len(torn)))
        end = offset + cut
        torn[offset:end] = raw[:cut]
        version = -1 - self.applied  # this write's own: the same in every model's replay
        self.store[(ino, version)] = bytes(torn)
        return version

    # -- crash states -------------------------------------------------------------------

    def _entries(self, units: list[Unit]) -> dict[int, dict[str, int]]:
        entries = {d: dict(e) for d, e in self.dur.items()}
        for d, changes in units:
            for name, ino in changes:
                if ino is None:
                    entries[d].pop(name, None)
                else:
                    entries[d][name] = ino
        return entries

    def state(self, units: list[Unit], data: str, point: int, variant: str) -> State:
        """The state of the durable entries plus ``units``, each file's bytes ``durable``,
        ``current`` or ``torn`` (current, but the last write only partly)."""
        entries = self._entries(units)
        files: dict[str, tuple[int, int]] = {}
        dirs: list[str] = []

        def walk(d: int, path: str) -> None:
            for name, ino in sorted(entries.get(d, {}).items()):
                sub = f"{path}/{name}"
                if ino in self.dirs:
                    dirs.append(sub)
                    walk(ino, sub)
                    continue
                if data == "durable":
                    v = self.durable[ino]
                elif data == "torn" and self.torn and self.torn[0] == ino:
                    v = self.torn[1]
                else:
                    v = self.keep(ino)
                files[sub] = (ino, v)

        walk(0, "")
        key: Key = frozenset(
            [(p, i, v) for p, (i, v) in files.items()] + [(p, -1, None) for p in dirs]
        )
        return State(key, point, variant, files, dirs)

    def crash_states(self, model: str, point: int) -> Iterator[State]:
        """The states a power cut right now can leave under ``model``."""
        every = list(self.pending)
        if model == "weak":
            yield self.state([], "durable", point, "no pending unit")
            for i, unit in enumerate(every):
                yield self.state([unit], "durable", point, f"only unit {i}")
                yield self.state(every[:i] + every[i + 1:], "durable", point, f"all but unit {i}")
        yield self.state(every, "durable", point, "every unit, durable bytes")
        yield self.state(every, "current", point, "every unit, current bytes")
        if self.torn is not None:
            yield self.state(every, "torn", point, "every unit, last write torn")


def load(log: Path) -> dict[str, Any]:
    with open(log, "rb") as f:
        data: dict[str, Any] = pickle.load(f)
    return data


def explore(log: dict[str, Any], model: str) -> tuple[Replay, list[State], list[State]]:
    """Every distinct crash state of a recorded run under ``model`` (in order of first
    appearance), and the distinct states after its last operation (the run had exited);
    with the replay that holds their bytes."""
    replay = Replay.start(log["initial"])
    seen: dict[Key, State] = {}
    for s in replay.crash_states(model, 0):
        seen.setdefault(s.key, s)
    for i, op in enumerate(log["ops"], 1):
        replay.apply(op)
        for s in replay.crash_states(model, i):
            seen.setdefault(s.key, s)
    final = {s.key: s for s in replay.crash_states(model, len(log["ops"]))}
    return replay, list(seen.values()), list(final.values())


def materialize(replay: Replay, state: State, root: Path) -> None:
    """Write ``state`` under ``root`` (hard links where it links one inode twice)."""
    for d in state.dirs:
        (root / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    first: dict[int, Path] = {}
    for path, (ino, v) in sorted(state.files.items()):
        dest = root / path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if ino in first:
            os.link(first[ino], dest)
            continue
        dest.write_bytes(replay.store[(ino, v)])
        first[ino] = dest
