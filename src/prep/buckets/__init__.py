"""Buckets (``s3://``, ``gs://``) through ``pyarrow.fs``: URIs (``uri``), the filesystem
built from the cloud's own configuration and its errors as messages (``client``), objects
pinned by ETag and version and downloaded verified (``objects``), and local copies read
ahead (``cache``). Knows objects, never sources or datasets."""

from prep.buckets.cache import ObjectCache
from prep.buckets.client import Store, open_store, store_error
from prep.buckets.objects import ObjectChanged, ObjectPin, check_pin, download, pin_all, select
from prep.buckets.uri import BucketPath, is_bucket_uri, parse_bucket_uri

__all__ = [
    "BucketPath",
    "ObjectCache",
    "ObjectChanged",
    "ObjectPin",
    "Store",
    "check_pin",
    "download",
    "is_bucket_uri",
    "open_store",
    "parse_bucket_uri",
    "pin_all",
    "select",
    "store_error",
]
