"""How prep reaches a bucket: the environment read as the AWS SDKs read it, and the one
translation of store errors into messages (a real refused connection for the unreachable
case; pyarrow's wording for the others), each message checked whole."""

from __future__ import annotations

import socket

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from prep.buckets.connect import (
    S3_ATTEMPTS,
    STORE_ERRORS,
    Store,
    open_store,
    s3_attempts,
    s3_endpoint,
    store_error,
)
from prep.errors import InputError, TransientError

S3 = Store("s3", "the S3 endpoint http://h:9", pafs.LocalFileSystem())
GS = Store("gs", "Google Cloud Storage", pafs.LocalFileSystem())
URI = "s3://bkt/data/x.parquet"


def test_the_endpoint_and_the_tries_come_from_the_sdks_variables() -> None:
    assert s3_endpoint({"AWS_ENDPOINT_URL": "http://a", "AWS_ENDPOINT_URL_S3": "http://b"}) \
        == "http://b"
    assert s3_endpoint({"AWS_ENDPOINT_URL": "http://a"}) == "http://a"
    assert s3_endpoint({"AWS_ENDPOINT_URL": ""}) is None
    assert s3_attempts({}) == S3_ATTEMPTS == 5
    assert s3_attempts({"AWS_MAX_ATTEMPTS": ""}) == 5
    assert s3_attempts({"AWS_MAX_ATTEMPTS": "1"}) == 1


@pytest.mark.parametrize("value", ["0", "-2", "three", "1.5"])
def test_a_number_of_tries_that_is_not_one(value: str) -> None:
    with pytest.raises(InputError) as e:
        s3_attempts({"AWS_MAX_ATTEMPTS": value})
    assert str(e.value) == (f"AWS_MAX_ATTEMPTS is {value!r}, not a number of tries; set it to "
                            "an integer >= 1 (1: no retry), or unset it for 5")


def test_an_endpoint_names_where_the_store_points_with_a_default_region() -> None:
    store = open_store("s3", "bkt", {"AWS_ENDPOINT_URL": "https://minio.local:9000/"})
    assert store.s3 and store.where == "the S3 endpoint https://minio.local:9000 (region us-east-1)"
    assert isinstance(store.fs, pafs.S3FileSystem)
    store = open_store("s3", "bkt", {"AWS_ENDPOINT_URL": "http://h:1", "AWS_REGION": "eu-west-3"})
    assert store.where == "the S3 endpoint http://h:1 (region eu-west-3)"


@pytest.mark.parametrize(("env", "name"), [
    ({"AWS_ENDPOINT_URL": "minio.local:9000"}, "AWS_ENDPOINT_URL"),
    ({"AWS_ENDPOINT_URL_S3": "ftp://h"}, "AWS_ENDPOINT_URL_S3"),
    ({"AWS_ENDPOINT_URL": "http:///"}, "AWS_ENDPOINT_URL")])
def test_an_endpoint_that_is_no_url(env: dict[str, str], name: str) -> None:
    with pytest.raises(InputError) as e:
        open_store("s3", "bkt", env)
    value = next(iter(env.values()))
    assert str(e.value) == (f"{name} is {value!r}, not an endpoint URL; set it to "
                            "http(s)://HOST[:PORT]")


def refused_port() -> int:
    with socket.socket() as s:  # bound, never listening: a connection is refused at once
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_store_that_cannot_be_reached_before_and_after_the_run_reached_it() -> None:
    port = refused_port()
    store = open_store("s3", "bkt", {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                                     "AWS_MAX_ATTEMPTS": "1"})
    with pytest.raises(STORE_ERRORS) as caught:
        store.fs.get_file_info(pafs.FileSelector("bkt/data"))
    before = store_error(caught.value, "listing", URI, store, started=False)
    assert type(before) is InputError
    where = f"the S3 endpoint http://127.0.0.1:{port} (region us-east-1)"
    assert str(before).startswith(f"listing {URI}: cannot reach {where} (")
    assert str(before).endswith("); check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3) and that "
                                "the server is up")
    after = store_error(caught.value, "listing", URI, store, started=True)
    assert type(after) is TransientError and after.exit_code == 75
    assert str(after).endswith("; nothing committed is lost: rerun with --resume once it "
                               "answers again")


AWS = ("When listing objects under key 'data' in bucket 'bkt': AWS Error {code} during "
       "ListObjectsV2 operation: {text}")


@pytest.mark.parametrize(("code", "writing", "kind", "message"), [
    ("INVALID_ACCESS_KEY_ID", False, InputError,
     "listing s3://bkt/data/x.parquet: the S3 endpoint http://h:9 has no valid credentials for "
     "it (INVALID_ACCESS_KEY_ID during ListObjectsV2 operation: boom); set AWS_ACCESS_KEY_ID and "
     "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary keys), or AWS_PROFILE, to an "
     "identity the endpoint knows"),
    ("NO_SUCH_BUCKET", False, InputError,
     "listing s3://bkt/data/x.parquet: the S3 endpoint http://h:9 has no bucket 'bkt' "
     "(NO_SUCH_BUCKET during ListObjectsV2 operation: boom); check the bucket's name and the "
     "endpoint or region"),
    ("ACCESS_DENIED", False, InputError,
     "listing s3://bkt/data/x.parquet: access denied by the S3 endpoint http://h:9 "
     "(ACCESS_DENIED during ListObjectsV2 operation: boom); grant this identity s3:ListBucket "
     "and s3:GetObject on bucket 'bkt', or use credentials that have them"),
    ("ACCESS_DENIED", True, InputError,
     "listing s3://bkt/data/x.parquet: access denied by the S3 endpoint http://h:9 "
     "(ACCESS_DENIED during ListObjectsV2 operation: boom); grant this identity s3:PutObject "
     "and s3:DeleteObject (with s3:ListBucket and s3:GetObject) on bucket 'bkt', or use "
     "credentials that have them"),
    ("SLOW_DOWN", False, TransientError,
     "listing s3://bkt/data/x.parquet: the S3 endpoint http://h:9 failed after retries "
     "(SLOW_DOWN during ListObjectsV2 operation: boom); nothing committed is lost: rerun with "
     "--resume"),
    ("WHATEVER", False, InputError,
     "listing s3://bkt/data/x.parquet: the S3 endpoint http://h:9 failed (WHATEVER during "
     "ListObjectsV2 operation: boom)"),
])
def test_each_kind_of_s3_failure(code: str, writing: bool, kind: type, message: str) -> None:
    e = OSError(AWS.format(code=code, text="boom"))
    got = store_error(e, "listing", URI, S3, started=True, writing=writing)
    assert type(got) is kind
    assert str(got) == message
    assert got.path == URI


def test_a_gcs_client_without_credentials_names_google_s_fix() -> None:
    e = pa.ArrowException(
        "Unknown error: google::cloud::Status(UNAUTHENTICATED: Could not create a OAuth2 "
        "access token to authenticate the request. The underlying error message was: "
        "Cannot open credentials file /nope.json error_info={reason=x})")
    got = store_error(e, "reading", "gs://bkt/a", GS, started=False)
    assert str(got) == ("reading gs://bkt/a: Google Cloud Storage has no valid credentials for "
                        "it (Cannot open credentials file /nope.json); set "
                        "GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run "
                        "`gcloud auth application-default login`")


def test_a_gcs_permission_denied_names_its_permissions_and_the_detail_is_one_line() -> None:
    e = OSError("google::cloud::Status(PERMISSION_DENIED:\n   caller lacks\tpermission)")
    got = store_error(e, "writing", "gs://bkt/a", GS, started=True, writing=True)
    assert str(got) == ("writing gs://bkt/a: access denied by Google Cloud Storage "
                        "(PERMISSION_DENIED: caller lacks permission)); grant this identity "
                        "storage.objects.create and storage.objects.delete (with "
                        "storage.objects.list and storage.objects.get) on bucket 'bkt', or use "
                        "credentials that have them")
    long = store_error(OSError("x" * 1000), "reading", "gs://bkt/a", GS, started=True)
    assert str(long) == f"reading gs://bkt/a: Google Cloud Storage failed ({'x' * 300})"
