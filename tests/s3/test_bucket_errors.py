"""A bucket source that cannot be read: exit 1 (2 for a malformed URI) with what failed,
where and how to fix it, no traceback, no credential, nothing created. Against the real S3
server, in-process through ``cli.main``; ``gs://`` (no local server) with no credentials
anywhere, its metadata-server look-up sent to a closed loopback port so it cannot hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import GPT2_DIR, make_corpus
from s3server import S3Server, free_ports

from prep.sources import canonical_source


@pytest.fixture
def prepare(cli, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``prepare --source URI`` in-process as ``identity``, with ``env`` on top; asserts
    the refusal's form and returns its message."""

    def attempt(uri: str, identity: str = "rw", code: int = 1, **env: str) -> str:
        for name, value in {**s3_server.env(identity), **env}.items():
            monkeypatch.setenv(name, value)
        out = tmp_path / "out"
        r = cli("prepare", "--source", uri, "--tokenizer", GPT2_DIR, "--out", out)
        assert r.code == code, r.err
        assert "Traceback" not in r.err
        assert not out.exists() and not (tmp_path / "out.incomplete").exists()
        for secret in (*s3_server.secrets(), "wrong-secret-0042"):
            assert secret not in r.err
        return str(r.err)

    return attempt


def test_wrong_endpoint(prepare) -> None:  # type: ignore[no-untyped-def]
    closed = f"http://127.0.0.1:{free_ports(1)[0]}"
    # AWS_MAX_ATTEMPTS=1, the SDKs' own setting, which prep passes on: no retry, so the
    # refusal comes at once instead of after the default tries' backoff (~10 s).
    err = prepare("s3://prep-tests/x/", AWS_ENDPOINT_URL=closed, AWS_MAX_ATTEMPTS="1")
    assert f"listing s3://prep-tests/x: cannot reach the S3 endpoint {closed}" in err
    assert "check AWS_ENDPOINT_URL" in err


@pytest.mark.parametrize("value", ["0", "three"])
def test_max_attempts_that_is_no_count(prepare, value: str) -> None:  # type: ignore[no-untyped-def]
    err = prepare("s3://prep-tests/x/", AWS_MAX_ATTEMPTS=value)
    assert f"AWS_MAX_ATTEMPTS is {value!r}, not a number of tries; set it to an integer" in err


def test_bad_credentials(prepare) -> None:  # type: ignore[no-untyped-def]
    err = prepare("s3://prep-tests/x/", AWS_SECRET_ACCESS_KEY="wrong-secret-0042")
    assert "has no valid credentials for it (SIGNATURE_DOES_NOT_MATCH" in err
    assert "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in err


def test_no_such_bucket(prepare) -> None:  # type: ignore[no-untyped-def]
    err = prepare("s3://prep-no-such-bucket/corpus/")
    assert "has no bucket 'prep-no-such-bucket'" in err and "check the bucket's name" in err


def test_empty_prefix(prepare, s3_bucket: str) -> None:  # type: ignore[no-untyped-def]
    err = prepare(f"s3://{s3_bucket}/nothing-here/")
    assert ("holds no Parquet, Arrow or JSON Lines objects under "
            f"s3://{s3_bucket}/nothing-here/") in err


def test_access_denied(prepare, s3_bucket: str) -> None:  # type: ignore[no-untyped-def]
    err = prepare(f"s3://{s3_bucket}/x/", identity="elsewhere")
    assert "access denied by the S3 endpoint" in err
    assert f"grant this identity s3:ListBucket and s3:GetObject on bucket '{s3_bucket}'" in err


def test_malformed_uri_is_a_usage_error(prepare) -> None:  # type: ignore[no-untyped-def]
    err = prepare("s3://Not_A_Bucket/x", code=2)
    assert "--source s3://Not_A_Bucket/x: not a bucket URI" in err
    assert "write s3://BUCKET/PREFIX/ (a prefix: every data file under it)" in err


def test_gcs_without_credentials(prepare, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
                                 tmp_path: Path) -> None:
    assert canonical_source("gs://some-bucket/corpus/") == "gs://some-bucket/corpus"
    monkeypatch.setattr("prep.buckets.connect.GCS_RETRY_SECONDS", 1.0)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    closed = f"127.0.0.1:{free_ports(1)[0]}"
    err = prepare("gs://some-bucket/corpus/", HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path),
                  GCE_METADATA_ROOT=closed, GCE_METADATA_HOST=closed)
    assert "listing gs://some-bucket/corpus: Google Cloud Storage has no valid credentials" in err
    assert "set GOOGLE_APPLICATION_CREDENTIALS" in err


def test_gcs_key_file_missing(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """GOOGLE_APPLICATION_CREDENTIALS naming no file: the GCS client cannot build its
    credentials (pyarrow raises a plain ArrowException there, not an OSError). Every command
    and the reader refuse it naming the file, without a traceback; nothing is created."""
    from prep import TokenStream
    from prep.errors import InputError

    key = tmp_path / "no-key.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    corpus = make_corpus(tmp_path / "src", [["one document", "another one"]])
    out, ds = tmp_path / "out", "gs://some-bucket/tokens/ds"
    said = ("Google Cloud Storage has no valid credentials for it (Cannot open credentials "
            f"file {key})")
    for args in (
        ("prepare", "--source", "gs://some-bucket/corpus/", "--tokenizer", GPT2_DIR, "--out", out),
        ("prepare", "--source", corpus, "--tokenizer", GPT2_DIR, "--out", ds, "--staging", out),
        ("verify", ds), ("inspect", ds), ("merge", ds),
    ):
        r = cli(*args)
        assert r.code == 1, r.err
        assert said in r.out + r.err and "set GOOGLE_APPLICATION_CREDENTIALS" in r.err
        assert "Traceback" not in r.err
    assert not (out / "ds.incomplete").exists() and not out.with_suffix(".incomplete").exists()
    with pytest.raises(InputError, match="no valid credentials"):
        TokenStream(ds, "train")


def test_malformed_out_uri_is_a_usage_error(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    corpus = make_corpus(tmp_path / "src", [["one document"]])
    r = cli("prepare", "--source", corpus, "--tokenizer", GPT2_DIR, "--out", "http://b1/x/ds")
    assert r.code == 2, r.err
    assert ("--out http://b1/x/ds: not a bucket URI (s3:// or gs://); write "
            "s3://BUCKET/PREFIX/NAME, with the bucket name") in r.err
