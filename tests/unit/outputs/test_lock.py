"""The run lock on real files: its info file, a second holder refused with the first's
name, the stop request, the probe ``prep inspect`` uses, a lock file deleted under a run, and a
lock file that cannot be created (a pseudo filesystem: exit 1 with the cause, never 75)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from prep.errors import Interrupted, LockedError, OutputError
from prep.outputs.lock import LockPaths, describe_holder, hold_lock, lock_holder


def paths(tmp_path: Path) -> LockPaths:
    return LockPaths(tmp_path / "out" / "ds.lock", tmp_path / "out" / ".ds.staging", "out/ds")


def holder_text(p: LockPaths) -> str:
    info = json.loads(p.info.read_text())
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"]))
    return f"pid {os.getpid()} on {socket.gethostname()}, started {started}"


def test_holding_writes_who_holds_it_and_releasing_removes_it(tmp_path: Path) -> None:
    p = paths(tmp_path)
    assert p.info == tmp_path / "out" / "ds.lock.json"
    assert lock_holder(p) is None  # no lock file yet: free, and the probe creates nothing
    assert not p.lock.exists()
    with hold_lock(p, wait=0) as held:
        info = json.loads(p.info.read_text())
        assert (info["pid"], info["host"]) == (os.getpid(), socket.gethostname())
        assert lock_holder(p) == f"ds.lock held by {holder_text(p)}"
        held.check()
    assert not p.info.exists()
    assert lock_holder(p) is None


def test_a_second_run_is_refused_naming_the_first(tmp_path: Path) -> None:
    p = paths(tmp_path)
    with hold_lock(p, wait=0):
        expected = (f"another run holds {p.lock} ({holder_text(p)}); wait for it to finish, or "
                    "pass --wait-lock SECONDS to wait")
        with pytest.raises(LockedError) as e, hold_lock(p, wait=0):
            pass
        assert str(e.value) == expected
        assert p.info.exists()  # the refused run left the holder's info alone


def test_a_stop_request_before_the_lock_is_taken(tmp_path: Path) -> None:
    p = paths(tmp_path)
    with pytest.raises(Interrupted) as e, hold_lock(p, wait=0, stop=lambda: True):
        pass
    assert str(e.value) == (f"stopped on request before taking {p.lock}; nothing was changed. "
                            "Rerun the same command")


def test_a_stray_info_temp_is_removed_when_the_lock_is_taken(tmp_path: Path) -> None:
    p = paths(tmp_path)
    p.lock.parent.mkdir(parents=True)
    stray = p.lock.parent / ".ds.lock.json.x1y2.tmp"
    stray.write_text("{")
    with hold_lock(p, wait=0):
        assert not stray.exists()


def test_a_lock_file_deleted_under_the_run_stops_it(tmp_path: Path) -> None:
    p = paths(tmp_path)
    with hold_lock(p, wait=0) as held:
        p.lock.unlink()
        p.lock.write_text("")  # another run's new lock file at the same path
        with pytest.raises(OutputError) as e:
            held.check()
        assert held.lost
    assert str(e.value) == (
        f"{p.lock} was deleted or replaced while this run held it; another run could now work "
        f"on {p.staging} beside this one, so this run stopped without committing ({p.staging} "
        "stays at its last checkpoint). Find what removes ds.lock (a cleanup job?), make sure "
        "no other prep runs on out/ds, then rerun with --resume")
    assert p.info.exists()  # a lost lock leaves the info: it may be the other run's now


@pytest.mark.parametrize("content", [None, "{", '{"pid": 1}', '{"pid": 1, "host": "h", '
                                     '"started": "noon"}'])
def test_an_unreadable_info_file_gives_holder_unknown(tmp_path: Path, content: str | None
                                                     ) -> None:
    p = paths(tmp_path)
    p.lock.parent.mkdir(parents=True)
    if content is not None:
        p.info.write_text(content)
    assert describe_holder(p) == "holder unknown"


def paths_at(lock: Path) -> LockPaths:
    return LockPaths(lock, lock.with_name("ds.incomplete"), str(lock.with_suffix("")))


@pytest.mark.parametrize("where", ["/proc/prep-test", "/sys/prep-test"])
def test_a_lock_file_on_a_pseudo_filesystem_is_an_output_error(where: str) -> None:
    with pytest.raises(OutputError) as info, hold_lock(paths_at(Path(where + ".lock")), 0):
        pass  # pragma: no cover - never entered
    assert not isinstance(info.value, LockedError) and info.value.exit_code == 1
    msg = str(info.value)
    assert msg.startswith(f"cannot create the lock file {where}.lock (")
    assert "choose another --out" in msg


def test_a_held_lock_is_locked_and_names_its_holder(tmp_path: Path) -> None:
    p = paths_at(tmp_path / "ds.lock")
    with hold_lock(p, 0):
        assert lock_holder(p) is not None
        with pytest.raises(LockedError, match=r"another run holds .*ds\.lock") as info, \
                hold_lock(p, 0):
            pass  # pragma: no cover - never entered
        assert info.value.exit_code == 75
    assert lock_holder(p) is None
