"""Bucket URIs: ``s3://BUCKET/KEY`` and ``gs://BUCKET/KEY``, parsed once into a
:class:`BucketPath`, spelled one way (:meth:`BucketPath.uri`: no trailing slash, no empty
key segment at the end)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from prep.errors import UsageError

SCHEMES = ("s3", "gs")
# S3's and GCS's common rules: 3-63 (GCS: up to 222 with dots) lower-case letters, digits,
# dots, dashes and underscores (GCS), starting and ending with a letter or digit.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
# What pyarrow's FileSystem.from_uri would take as credentials: user info before the bucket,
# or these query options. prep reads credentials from the environment only.
_CREDENTIAL_OPTIONS = ("access_key=", "secret_key=", "session_token=")


def is_bucket_uri(spec: str) -> bool:
    """Whether ``spec`` names an object store (``s3://`` or ``gs://``)."""
    return any(spec.startswith(f"{s}://") for s in SCHEMES)


@dataclass(frozen=True)
class BucketPath:
    """A bucket and a key (or key prefix) in it; ``key`` has no leading or trailing slash."""

    scheme: str
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else (
            f"{self.scheme}://{self.bucket}")

    @property
    def fs_path(self) -> str:
        """The path ``pyarrow.fs`` names it by: ``BUCKET/KEY``."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    def at(self, fs_path: str) -> BucketPath:
        """The object named ``fs_path`` (``BUCKET/KEY``) in the same bucket."""
        return BucketPath(self.scheme, self.bucket, fs_path.partition("/")[2])


def parse_bucket_uri(spec: str, flag: str = "--source") -> BucketPath:
    """``spec`` parsed; raises ``UsageError`` (exit 2) for a missing or malformed bucket
    name, naming the flag."""
    scheme, _, rest = spec.partition("://")
    bucket, _, key = rest.partition("/")
    _refuse_credentials(spec, flag, scheme, bucket, key)
    if scheme not in SCHEMES or not _BUCKET.match(bucket) or ".." in bucket:
        shown = scheme if scheme in SCHEMES else "s3"
        form = (f"{shown}://BUCKET/PREFIX/ (a prefix: every data file under it), .../GLOB or "
                ".../OBJECT" if flag == "--source" else f"{shown}://BUCKET/PREFIX/NAME")
        schemes = "" if scheme in SCHEMES else f" ({' or '.join(f'{s}://' for s in SCHEMES)})"
        raise UsageError(
            f"{flag} {spec}: not a bucket URI{schemes}; write {form}, with the bucket name "
            "in lower-case letters, digits, dots and dashes",
            path=spec,
        )
    return BucketPath(scheme, bucket, key.strip("/"))


def _refuse_credentials(spec: str, flag: str, scheme: str, bucket: str, key: str) -> None:
    """Raise ``UsageError`` for a URI that carries a credential, without repeating it: the
    URI would otherwise be written to the manifest, the logs and the messages."""
    query = key.partition("?")[2]
    if "@" not in bucket and not any(o in query for o in _CREDENTIAL_OPTIONS):
        return
    shown = f"{scheme}://{bucket.rpartition('@')[2]}/{key.partition('?')[0]}"
    where = ("GOOGLE_APPLICATION_CREDENTIALS (or gcloud's application default credentials)"
             if scheme == "gs" else "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)")
    raise UsageError(
        f"{flag} {shown} (as typed, less a credential): a key or secret in the URI is "
        f"refused, so that it is never written to a manifest, a log or a message; remove "
        f"it and give it in the environment: {where}",
        path=shown,
    )
