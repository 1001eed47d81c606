"""How prep reaches a bucket: one ``pyarrow.fs`` filesystem per scheme, configured the way
each cloud's own tools are, and the one translation of its errors into messages.

``s3://``: the AWS SDK inside pyarrow finds the credentials itself (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_PROFILE`` and the shared config
files, web identity, the instance's role), so no secret passes through prep. prep passes
what that SDK does not take from the environment when pyarrow builds the client: the
endpoint (``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``: scheme, host and port) and
the region (``AWS_REGION``, else ``AWS_DEFAULT_REGION``; with neither, the bucket's own
region is asked of AWS, or ``us-east-1`` on another endpoint), and the tries per request
(``AWS_MAX_ATTEMPTS``, the SDKs' own setting: :data:`S3_ATTEMPTS` when unset; ``1`` fails at
the first error, which is what a script that checks its configuration wants). Object opens
for writing are delayed (``allow_delayed_open``): an object smaller than the SDK's part size
goes up as one PutObject instead of a multipart upload's three requests; a failure to write
it is raised when the object is closed, where every write of prep ends anyway.

``gs://``: Google's application default credentials (``GOOGLE_APPLICATION_CREDENTIALS``,
``gcloud auth application-default login``, the VM's service account), with retries bounded
by :data:`GCS_RETRY_SECONDS` (the client's own default retries for 15 minutes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

import pyarrow as pa
import pyarrow.fs as pafs

from prep.errors import InputError, PrepError, TransientError

CONNECT_TIMEOUT = 10.0  # seconds to open a connection (a wrong address fails after this)
REQUEST_TIMEOUT = 60.0  # seconds a request may stall
S3_ATTEMPTS = 5  # tries per S3 request (the SDK's standard backoff between them)
ATTEMPTS_VARIABLE = "AWS_MAX_ATTEMPTS"
GCS_RETRY_SECONDS = 60.0
# What a failed bucket call raises: OSError for most, but a GCS client that cannot even
# build its credentials (GOOGLE_APPLICATION_CREDENTIALS naming no file, a malformed key)
# raises pyarrow's plain ArrowException ("Unknown error: google::cloud::Status(...)").
# Where a GCS message says what went wrong (after a paragraph on authentication in general).
GCS_CAUSE = "The underlying error message was: "
STORE_ERRORS: tuple[type[Exception], ...] = (OSError, pa.ArrowException)

_UNREACHABLE = ("NETWORK_CONNECTION", "curlCode: 6", "curlCode: 7", "curlCode: 28",
                "Could not connect", "Could not resolve", "CURL error [6]", "CURL error [7]")
_CREDENTIALS = ("SIGNATURE_DOES_NOT_MATCH", "INVALID_ACCESS_KEY_ID", "InvalidAccessKeyId",
                "MISSING_AUTHENTICATION_TOKEN", "EXPIRED_TOKEN", "ExpiredToken",
                "UNRECOGNIZED_CLIENT", "No credentials", "OAuth2 access token",
                "UNAUTHENTICATED", "INVALID_CLIENT_TOKEN_ID", "InvalidToken")
_NO_BUCKET = ("NO_SUCH_BUCKET", "NoSuchBucket", "The specified bucket does not exist")
_DENIED = ("ACCESS_DENIED", "AccessDenied", "PERMISSION_DENIED", "HTTP status 403")
_TRANSIENT = ("SLOW_DOWN", "SERVICE_UNAVAILABLE", "INTERNAL_FAILURE", "REQUEST_TIMEOUT",
              "THROTTLING", "HTTP status 5", "UNAVAILABLE", "DEADLINE_EXCEEDED",
              "curlCode: 18", "curlCode: 52", "curlCode: 55", "curlCode: 56")


@dataclass(frozen=True)
class Store:
    """A filesystem for one scheme and bucket, and how messages name where it points."""

    scheme: str
    where: str  # "the S3 endpoint http://host:port", "AWS S3", "Google Cloud Storage"
    fs: pafs.FileSystem = field(repr=False, compare=False)

    @property
    def s3(self) -> bool:
        return self.scheme == "s3"


def s3_endpoint(env: Mapping[str, str]) -> str | None:
    """The endpoint URL the AWS SDKs would use for S3 (``AWS_ENDPOINT_URL_S3`` first)."""
    return env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None


def s3_attempts(env: Mapping[str, str]) -> int:
    """Tries per S3 request: ``AWS_MAX_ATTEMPTS`` (an integer >= 1), else
    :data:`S3_ATTEMPTS`. Raises ``InputError`` for another value."""
    value = env.get(ATTEMPTS_VARIABLE)
    if value is None or value == "":
        return S3_ATTEMPTS
    try:
        attempts = int(value)
    except ValueError:
        attempts = 0
    if attempts < 1:
        raise InputError(
            f"{ATTEMPTS_VARIABLE} is {value!r}, not a number of tries; set it to an integer "
            f">= 1 (1: no retry), or unset it for {S3_ATTEMPTS}",
            path=ATTEMPTS_VARIABLE,
        )
    return attempts


def open_store(scheme: str, bucket: str, env: Mapping[str, str] | None = None) -> Store:
    """A filesystem for ``bucket`` configured from ``env`` (default: this process's
    environment). Opens no connection, except to ask AWS for a bucket's region when no
    region is set. Raises ``InputError`` for an endpoint URL or ``AWS_MAX_ATTEMPTS`` that
    cannot be parsed."""
    env = os.environ if env is None else env
    if scheme == "gs":
        limit = timedelta(seconds=GCS_RETRY_SECONDS)
        return Store("gs", "Google Cloud Storage", pafs.GcsFileSystem(retry_time_limit=limit))
    endpoint = s3_endpoint(env)
    attempts = s3_attempts(env)
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
    options: dict[str, object] = {}
    if endpoint:
        proto, sep, host = endpoint.partition("://")
        if not sep or proto not in ("http", "https") or not host.strip("/"):
            raise InputError(
                f"AWS_ENDPOINT_URL{'_S3' if env.get('AWS_ENDPOINT_URL_S3') else ''} is "
                f"{endpoint!r}, not an endpoint URL; set it to http(s)://HOST[:PORT]",
                path=endpoint,
            )
        options.update(endpoint_override=host.rstrip("/"), scheme=proto)
        region = region or "us-east-1"
        where = f"the S3 endpoint {proto}://{host.rstrip('/')}"
    else:
        where = "AWS S3"
        if region is None:
            try:
                region = pafs.resolve_s3_region(bucket)
            except (OSError, ValueError):
                region = None  # the listing that follows reports why (no bucket, offline...)
    fs = pafs.S3FileSystem(
        region=region,
        connect_timeout=CONNECT_TIMEOUT,
        request_timeout=REQUEST_TIMEOUT,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts),
        allow_delayed_open=True,
        **options,
    )
    return Store("s3", where if region is None else f"{where} (region {region})", fs)


def _detail(e: BaseException) -> str:
    """The pyarrow message's informative part, on one line."""
    text = " ".join(str(e).split())
    for marker in ("AWS Error ", "google::cloud::Status(", GCS_CAUSE):
        if marker in text:
            text = text[text.index(marker) + len(marker):]
    return text.partition(" error_info=")[0][:300]


def _has(text: str, needles: tuple[str, ...]) -> bool:
    return any(n in text for n in needles)


def _credentials_fix(store: Store) -> str:
    if store.s3:
        return ("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for "
                "temporary keys), or AWS_PROFILE, to an identity the endpoint knows")
    return ("set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run "
            "`gcloud auth application-default login`")


def store_error(
    e: Exception, doing: str, uri: str, store: Store, started: bool, *, writing: bool = False
) -> PrepError:
    """The message for a failed bucket call. ``doing``: what prep was doing ("listing",
    "downloading"); ``started``: whether the run had already reached the store (then a
    connection failure is transient, exit 75, not a wrong address); ``writing``: the call
    writes or deletes (access denied then names the write permissions)."""
    text = str(e)
    detail = _detail(e)
    bucket = uri.split("://", 1)[-1].split("/", 1)[0]
    if _has(text, _CREDENTIALS):  # first: GCS says so with a connection error
        return InputError(
            f"{doing} {uri}: {store.where} has no valid credentials for it ({detail}); "
            f"{_credentials_fix(store)}",
            path=uri,
        )
    if _has(text, _UNREACHABLE):
        if started:
            return TransientError(
                f"{doing} {uri}: lost {store.where} ({detail}); nothing committed is lost: "
                "rerun with --resume once it answers again",
                path=uri,
            )
        hint = ("check AWS_ENDPOINT_URL (or AWS_ENDPOINT_URL_S3) and that the server is up"
                if store.s3 else "check the network")
        return InputError(f"{doing} {uri}: cannot reach {store.where} ({detail}); {hint}",
                          path=uri)
    if _has(text, _NO_BUCKET):
        return InputError(
            f"{doing} {uri}: {store.where} has no bucket {bucket!r} ({detail}); check the "
            "bucket's name" + (" and the endpoint or region" if store.s3 else ""),
            path=uri,
        )
    if _has(text, _DENIED):
        if writing:
            grant = ("s3:PutObject and s3:DeleteObject (with s3:ListBucket and s3:GetObject)"
                     if store.s3 else "storage.objects.create and storage.objects.delete "
                     "(with storage.objects.list and storage.objects.get)")
        else:
            grant = ("s3:ListBucket and s3:GetObject" if store.s3
                     else "storage.objects.list and storage.objects.get")
        return InputError(
            f"{doing} {uri}: access denied by {store.where} ({detail}); grant this identity "
            f"{grant} on bucket {bucket!r}, or use credentials that have them",
            path=uri,
        )
    if _has(text, _TRANSIENT):
        return TransientError(
            f"{doing} {uri}: {store.where} failed after retries ({detail}); nothing "
            "committed is lost: rerun with --resume",
            path=uri,
        )
    return InputError(f"{doing} {uri}: {store.where} failed ({detail})", path=uri)
