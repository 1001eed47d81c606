"""Buckets (``s3://``, ``gs://``) through ``pyarrow.fs``: URIs (``uri``), the filesystem
built from the cloud's own configuration and its errors as messages (``connect``), objects
pinned by ETag and version and downloaded verified (``objects``), and local copies read
ahead (``copies``). Knows objects, never sources or datasets.

The package itself imports nothing: a run over local files must not pay for ``pyarrow.fs``
(and its SSL and cloud SDK set-up) at start. Import from the modules."""
