"""Arrow IPC files as pyarrow's IPC writer (and so ``datasets``) writes them, file and
stream forms: rows in order from any start, a dotted name into a struct column, and a
missing or non-string column refused by name."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from prep.errors import InputError
from prep.sources import iter_batches, resolve_local, unit_batches, units_of
from prep.sources.base import signature_of

TEXTS = [f"doc {i}" for i in range(2_500)]


def write(path: Path, table: pa.Table, stream: bool) -> Path:
    with (pa.ipc.new_stream if stream else pa.ipc.new_file)(path, table.schema) as w:
        w.write_table(table, max_chunksize=300)
    return path


def read(path: Path, column: str = "text") -> list[str]:
    src = resolve_local(str(path))
    return [t for texts, _ in iter_batches(src, src.files[0], column, None) for t in texts]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "file"])
def test_rows_read_in_order_from_any_start(tmp_path: Path, stream: bool) -> None:
    path = write(tmp_path / "d.arrow", pa.table({"text": TEXTS, "n": range(2_500)}), stream)
    assert read(path) == TEXTS
    src = resolve_local(str(path))
    f = src.files[0]
    with open(path, "rb") as fobj:
        f.signature = signature_of(fobj)
        [unit] = units_of(fobj, f)
        assert unit.rows == 2_500
        got = [t for texts, _ in unit_batches(fobj, f, ("text", None), unit, 0, 1_234, 2_001)
               for t in texts]
    assert got == TEXTS[1_234:2_001]


def test_a_dotted_name_reaches_into_a_struct_column(tmp_path: Path) -> None:
    meta = pa.array([{"text": t, "id": i} for i, t in enumerate(TEXTS[:10])])
    path = write(tmp_path / "s.arrow", pa.table({"metadata": meta}), stream=True)
    assert read(path, "metadata.text") == TEXTS[:10]


def test_a_missing_or_non_string_column_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "n.arrow", pa.table({"body": TEXTS[:3], "n": [1, 2, 3]}), True)
    with pytest.raises(InputError, match=r'^n.arrow: no column "text"; it has "body", "n". '
                       "Choose the column with --text-column$"):
        read(path)
    with pytest.raises(InputError, match=r'^n.arrow row 0: column "n" holds int64, expected a '
                       "string; choose the column with --text-column$"):
        read(path, "n")


def test_a_damaged_file_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "d.arrow", pa.table({"text": TEXTS}), stream=True)
    path.write_bytes(path.read_bytes()[:5_000])
    with pytest.raises(InputError, match=r"^d.arrow: .*remove or replace the file$"):
        read(path)
