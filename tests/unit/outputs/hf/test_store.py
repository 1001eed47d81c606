"""A Hub repository as a bucket's object calls: a pre-upload is checked against the seal's
SHA-256 and is visible only after the next commit; an object the Hub stores already is not
sent again (the LFS batch API answers so); a range of a file goes up as its own object."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hub.fakehub import FakeHub

from prep.errors import IntegrityError
from prep.hub.calls import HubOptions
from prep.outputs.hf.store import HubObjects

from .conftest import REPO, TOKEN


def _objects(options: HubOptions, writer: bool = True) -> HubObjects:
    return HubObjects(REPO, "main", writer=writer, token=TOKEN, options=options)


def test_uploads_show_at_the_next_commit_and_are_read_back(
        hub: FakeHub, options: HubOptions, repo: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * 40
    local = tmp_path / "train-00000.bin"
    local.write_bytes(data)
    o = _objects(options)
    root = f"datasets/{REPO}"
    got = o.upload(local, f"{root}/d/train-00000.bin", hashlib.sha256(data).hexdigest())
    assert got == hashlib.sha256(data).hexdigest()
    o.upload(local, f"{root}/d.incomplete/open/seg", None, offset=1000, size=24)
    assert "d/train-00000.bin" not in hub.head_files(REPO)  # pre-uploaded, not committed
    o.write(f"{root}/d.incomplete/checkpoint.json", b'{"seq": 1}')
    head = hub.head_files(REPO)
    assert head["d/train-00000.bin"] == data and head["d.incomplete/open/seg"] == data[1000:1024]
    assert {i.path: i.size for i in o.listing(f"{root}/d")} == {f"{root}/d/train-00000.bin":
                                                                 len(data)}
    assert o.read(f"{root}/d.incomplete/checkpoint.json") == b'{"seq": 1}'
    assert o.read(f"{root}/d/missing.bin") is None
    copy = tmp_path / "copy"
    o.download(f"{root}/d/train-00000.bin", copy, hashlib.sha256(data).hexdigest())
    assert copy.read_bytes() == data
    with pytest.raises(IntegrityError, match="changed after it was uploaded"):
        o.download(f"{root}/d/train-00000.bin", copy, "0" * 64)

    hub.clear_log()
    again = _objects(options)
    again.upload(local, f"{root}/e/train-00000.bin", None)
    assert not hub.requests("PUT")  # the Hub stores it already: no byte sent


def test_an_upload_that_is_not_the_sealed_file_is_refused(
        options: HubOptions, repo: str, tmp_path: Path) -> None:
    local = tmp_path / "x.bin"
    local.write_bytes(b"\0\1" * 10)
    o = _objects(options)
    with pytest.raises(IntegrityError, match="changed after it was sealed"):
        o.upload(local, f"datasets/{REPO}/x.bin", "f" * 64)
    assert not o.pending_names()
