"""The error hierarchy (``prep.errors``): each kind is also the builtin a caller would catch,
carries the exit code the CLI maps it to, and the OS failure and lost-file messages say
what failed, what survives and what to run next."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from prep import errors as e


@pytest.mark.parametrize(("kind", "builtin", "code"), [
    (e.UsageError, ValueError, 2),
    (e.InputError, ValueError, 1),
    (e.FormatError, ValueError, 1),
    (e.OutputError, OSError, 1),
    (e.MissingRecipe, ValueError, 1),
    (e.IntegrityError, ValueError, 1),
    (e.LockedError, TimeoutError, 75),
    (e.TransientError, ConnectionError, 75),
    (e.Interrupted, Exception, 75),
])
def test_each_kind_is_its_builtin_and_carries_its_exit_code(kind: type[e.PrepError],
                                                            builtin: type, code: int) -> None:
    err = kind("it broke", path=Path("/d/x.parquet"), row=12)
    assert isinstance(err, e.PrepError) and isinstance(err, builtin)
    assert err.exit_code == code
    assert (str(err), err.path, err.row) == ("it broke", "/d/x.parquet", 12)


def test_exit_codes_follow_sysexits() -> None:
    assert (e.EXIT_OK, e.EXIT_ERROR, e.EXIT_USAGE, e.EXIT_TEMPFAIL) == (0, 1, 2, 75)
    assert e.FormatError("x").exit_code == e.InputError("x").exit_code


def test_a_hint_goes_on_its_own_line_and_keeps_kind_and_context() -> None:
    err = e.InputError("a.parquet row 3: not a string", path="a.parquet", row=3)
    hinted = err.with_hint("choose the text column with --text-column")
    assert type(hinted) is e.InputError
    assert str(hinted) == "a.parquet row 3: not a string\nchoose the text column with --text-column"
    assert (hinted.path, hinted.row) == ("a.parquet", 3)


def test_a_full_disk_without_a_run_says_to_free_space(tmp_path: Path) -> None:
    err = e.os_failure(OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "f")))
    assert isinstance(err, e.OutputError)
    assert str(err) == (f"no space left on the device writing {tmp_path / 'f'} "
                        "(No space left on device); free some space, then rerun")
    assert err.path == str(tmp_path / "f")


def test_a_full_disk_in_a_run_with_a_checkpoint_says_resume(tmp_path: Path) -> None:
    staging = tmp_path / "out.incomplete"
    staging.mkdir()
    err = e.os_failure(OSError(errno.EDQUOT, "Disk quota exceeded"), tmp_path / "out", staging)
    assert str(err) == (
        f"no space left on the device writing {staging} (Disk quota exceeded); the last "
        f"checkpoint in {staging} is intact: free some space, then rerun with --resume "
        f"(prep prepare --out {tmp_path / 'out'} --resume)")


def test_another_failure_before_any_commit_says_rerun_the_same_command(tmp_path: Path) -> None:
    err = e.os_failure(OSError(errno.EIO, "Input/output error"), tmp_path / "out",
                       tmp_path / "out.incomplete")
    assert str(err) == (f"{tmp_path / 'out'}: Input/output error; nothing was committed yet: "
                        "fix the cause, then rerun the same command")
    bare = e.os_failure(OSError("no errno"))
    assert str(bare) == "no errno; fix the cause, then rerun" and bare.path is None


def test_a_lost_file_names_both_causes_and_the_way_out(tmp_path: Path) -> None:
    err = e.lost_file(tmp_path / "s" / "train-00000.bin", "is missing", tmp_path / "s")
    assert isinstance(err, e.IntegrityError) and err.path == str(tmp_path / "s" / "train-00000.bin")
    message = str(err)
    assert message.startswith(f"{tmp_path / 's' / 'train-00000.bin'} is missing. A power loss ")
    assert "a change made by hand" in message
    assert f"Delete {tmp_path / 's'} to start over" in message
    assert message.endswith("check that its disks honour fsync first")
