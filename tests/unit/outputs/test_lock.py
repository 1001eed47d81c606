"""The run lock: a lock file that cannot be created is an error of its own (exit 1), never
"another run holds it" (exit 75, which a supervisor retries for ever); a held one is 75."""

from __future__ import annotations

from pathlib import Path

import pytest

from prep.errors import LockedError, OutputError
from prep.outputs.lock import LockPaths, hold_lock, lock_holder


def paths(lock: Path) -> LockPaths:
    return LockPaths(lock, lock.with_name("ds.incomplete"), str(lock.with_suffix("")))


@pytest.mark.parametrize("where", ["/proc/prep-test", "/sys/prep-test"])
def test_a_lock_file_on_a_pseudo_filesystem_is_an_output_error(where: str) -> None:
    with pytest.raises(OutputError) as info, hold_lock(paths(Path(where + ".lock")), 0):
        pass  # pragma: no cover - never entered
    assert not isinstance(info.value, LockedError) and info.value.exit_code == 1
    msg = str(info.value)
    assert msg.startswith(f"cannot create the lock file {where}.lock (")
    assert "choose another --out" in msg


def test_a_held_lock_is_locked_and_names_its_holder(tmp_path: Path) -> None:
    p = paths(tmp_path / "ds.lock")
    with hold_lock(p, 0):
        assert lock_holder(p) is not None
        with pytest.raises(LockedError, match=r"another run holds .*ds\.lock") as info, \
                hold_lock(p, 0):
            pass  # pragma: no cover - never entered
        assert info.value.exit_code == 75
    assert lock_holder(p) is None
