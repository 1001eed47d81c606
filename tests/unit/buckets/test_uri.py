"""Bucket URIs (``prep.buckets.uri``): parsed once, spelled one way, and refused with a
message that names the flag, the form to write and never a credential."""

from __future__ import annotations

import pytest

from prep.buckets.uri import BucketPath, is_bucket_uri, parse_bucket_uri
from prep.errors import UsageError


@pytest.mark.parametrize(("spec", "scheme", "bucket", "key"), [
    ("s3://my-bucket/data/en/", "s3", "my-bucket", "data/en"),
    ("gs://b.with.dots/x.parquet", "gs", "b.with.dots", "x.parquet"),
    ("s3://abc", "s3", "abc", ""),
    ("s3://abc/", "s3", "abc", ""),
    ("s3://abc//deep//", "s3", "abc", "deep"),
    ("gs://under_score/a/*.parquet", "gs", "under_score", "a/*.parquet"),
])
def test_a_bucket_uri_parses_into_scheme_bucket_and_key(spec: str, scheme: str, bucket: str,
                                                        key: str) -> None:
    assert parse_bucket_uri(spec) == BucketPath(scheme, bucket, key)


def test_one_spelling_without_a_trailing_slash() -> None:
    assert parse_bucket_uri("s3://abc/p/q/").uri == "s3://abc/p/q"
    assert parse_bucket_uri("s3://abc/").uri == "s3://abc"
    assert parse_bucket_uri("gs://abc/p").fs_path == "abc/p"
    assert parse_bucket_uri("gs://abc").fs_path == "abc"


def test_at_names_another_object_of_the_same_bucket() -> None:
    base = parse_bucket_uri("s3://abc/prefix")
    assert base.at("abc/prefix/part-0.parquet") == BucketPath("s3", "abc", "prefix/part-0.parquet")
    assert base.at("abc/prefix/part-0.parquet").uri == "s3://abc/prefix/part-0.parquet"


@pytest.mark.parametrize(("spec", "yes"), [
    ("s3://b/k", True), ("gs://b", True), ("S3://b/k", False), ("s3:/b", False),
    ("hf://datasets/x", False), ("/data/s3://x", False), ("file://x", False),
])
def test_is_bucket_uri_is_the_scheme_only(spec: str, yes: bool) -> None:
    assert is_bucket_uri(spec) is yes


@pytest.mark.parametrize("spec", [
    "s3://ab/k",  # 2 characters
    "s3://Upper/k", "s3://-dash/k", "s3://dash-/k", "s3://a..b/k", "s3:///k",
    "s3://" + "a" * 223 + "/k",
])
def test_a_malformed_bucket_name_is_a_usage_error_naming_the_form(spec: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_bucket_uri(spec)
    assert str(e.value) == (
        f"--source {spec}: not a bucket URI; write s3://BUCKET/PREFIX/ (a prefix: every "
        "data file under it), .../GLOB or .../OBJECT, with the bucket name in lower-case "
        "letters, digits, dots and dashes")
    assert e.value.exit_code == 2


def test_an_output_uri_is_told_its_own_form_and_an_unknown_scheme_the_schemes() -> None:
    with pytest.raises(UsageError) as e:
        parse_bucket_uri("gs://X/out", flag="--out")
    assert str(e.value).startswith("--out gs://X/out: not a bucket URI; write "
                                   "gs://BUCKET/PREFIX/NAME, with")
    with pytest.raises(UsageError) as e:
        parse_bucket_uri("az://box/k")
    assert str(e.value).startswith("--source az://box/k: not a bucket URI (s3:// or gs://); "
                                   "write s3://BUCKET/PREFIX/")


@pytest.mark.parametrize(("spec", "shown", "where"), [
    ("s3://AKIAXX:secret@bucket/k", "s3://bucket/k", "AWS_ACCESS_KEY_ID"),
    ("s3://bucket/k?access_key=AKIAXX&secret_key=zz", "s3://bucket/k", "AWS_ACCESS_KEY_ID"),
    ("gs://tok@bucket/p/q", "gs://bucket/p/q", "GOOGLE_APPLICATION_CREDENTIALS"),
])
def test_a_credential_in_the_uri_is_refused_without_repeating_it(spec: str, shown: str,
                                                                  where: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_bucket_uri(spec)
    message = str(e.value)
    assert message.startswith(f"--source {shown} (as typed, less a credential): a key or "
                              "secret in the URI is refused"), message
    assert where in message
    for secret in ("AKIAXX", "secret", "zz", "tok@"):
        assert secret not in message.replace("secret in the URI", ""), message
