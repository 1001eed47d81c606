"""The crash-state generator on hand-written logs: what each model may and may not leave."""

from __future__ import annotations

import crashstates as cs

ROOT, D = 0, 1  # the root directory, and a directory under it (both durable at the start)
INITIAL = ({"/": ROOT, "/d": D, "/d/old": 2}, {2: b"old"}, {ROOT, D})


def contents(log: dict[str, object], model: str, since: int = 0) -> list[dict[str, bytes]]:
    """Every distinct state (first seen after operation ``since`` or later) as path ->
    bytes (directories as b"<dir>")."""
    replay, states, _ = cs.explore(log, model)
    return [
        {p: replay.store[v] for p, v in s.files.items()} | {p: b"<dir>" for p in s.dirs}
        for s in states if s.point >= since
    ]


def test_weak_keeps_a_rename_without_the_create_it_needs_and_ordered_never_does() -> None:
    """A rollover's bug: a new file (``new``) and a checkpoint replaced after it
    (``tmp`` -> ``ckpt``) with no directory fsync between them."""
    ops = [("create", D, "new", 3), ("write", 3, 0, b"N" * 10), ("fsync", 3),
           ("create", D, "tmp", 4), ("write", 4, 0, b"C" * 10), ("fsync", 4),
           ("rename", D, "tmp", D, "ckpt", 0), ("fsyncdir", D)]
    log = {"initial": INITIAL, "ops": ops}
    weak = contents(log, "weak")
    assert any("/d/ckpt" in s and "/d/new" not in s for s in weak)
    assert all(s.get("/d/ckpt", b"C" * 10) == b"C" * 10 for s in weak)  # fsynced first
    ordered = contents(log, "ordered")
    assert not any("/d/ckpt" in s and "/d/new" not in s for s in ordered)
    assert {"/d": b"<dir>", "/d/old": b"old", "/d/new": b"N" * 10, "/d/ckpt": b"C" * 10} in weak


def test_a_name_whose_bytes_were_never_fsynced_comes_back_empty_and_writes_tear() -> None:
    data = bytes(range(256)) * 8  # 2048 bytes: torn at a 512-byte boundary
    log = {"initial": INITIAL, "ops": [("create", D, "f", 3), ("write", 3, 0, data)]}
    for model in cs.MODELS:
        got = {s.get("/d/f") for s in contents(log, model)}
        assert got == {None, b"", data, data[:1024]}, model


def test_an_exchange_is_atomic_and_a_move_between_directories_is_two_changes() -> None:
    ops = [("mkdir", ROOT, "e", 5), ("fsyncdir", ROOT),
           ("rename", D, "old", ROOT, "moved", 0),
           ("rename", ROOT, "e", ROOT, "d", 2)]  # exchange: /e <-> /d
    log = {"initial": INITIAL, "ops": ops}
    weak = contents(log, "weak", since=2)  # /e is durable from operation 2 on
    for s in weak:
        assert ("/e" in s) and ("/d" in s), "an exchange never loses either name"
    assert any("/moved" in s and "/d/old" in s for s in weak)  # the source not yet removed
    assert any("/moved" in s and "/e/old" in s for s in weak)  # both, after the exchange
    # Two directories, each written back on its own: the old name may go first.
    lost = [s for s in weak if "/moved" not in s and "/d/old" not in s and "/e/old" not in s]
    assert lost, "the weak model loses a file moved between directories before an fsync"
    ordered = contents(log, "ordered", since=2)
    assert all("/moved" in s or "/d/old" in s or "/e/old" in s for s in ordered)
