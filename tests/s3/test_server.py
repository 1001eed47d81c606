"""The S3 test server itself (tests/s3server.py): pyarrow's own client writes, lists and
reads through it, the read-only identity is refused a write, and the environment it gives a
subprocess reaches a client that pyarrow builds from a URI alone."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest
from s3server import S3Server


def test_pyarrow_writes_lists_and_reads(s3_server: S3Server, s3_bucket: str) -> None:
    fs = s3_server.filesystem()
    for name, data in (("a/one.parquet", b"one"), ("a/b/two.parquet", b"two two")):
        with fs.open_output_stream(f"{s3_bucket}/server/{name}") as out:
            out.write(data)
    listed = fs.get_file_info(pafs.FileSelector(f"{s3_bucket}/server", recursive=True))
    files = {i.path: i.size for i in listed if i.type == pafs.FileType.File}
    assert files == {f"{s3_bucket}/server/a/one.parquet": 3,
                     f"{s3_bucket}/server/a/b/two.parquet": 7}
    with s3_server.filesystem("ro").open_input_stream(f"{s3_bucket}/server/a/b/two.parquet") as f:
        assert f.read() == b"two two"
        assert f.metadata()["ETag"]  # the GET's own headers carry the ETag prep pins
    with pytest.raises(OSError, match="ACCESS_DENIED"), \
            s3_server.filesystem("ro").open_output_stream(f"{s3_bucket}/server/no") as out:
        out.write(b"x")


def test_environment_reaches_a_client_built_from_a_uri(s3_server: S3Server, s3_bucket: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with s3_server.filesystem().open_output_stream(f"{s3_bucket}/env/one.parquet") as out:
        out.write(b"one")
    for name, value in s3_server.env("ro", base={}).items():
        monkeypatch.setenv(name, value)
    fs, path = pafs.FileSystem.from_uri(f"s3://{s3_bucket}/env/")
    assert path == f"{s3_bucket}/env"
    with fs.open_input_stream(f"{s3_bucket}/env/one.parquet") as f:
        assert f.read() == b"one"

