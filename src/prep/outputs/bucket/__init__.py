"""``--out s3://...`` / ``gs://...``: the output (:mod:`~prep.outputs.bucket.output`), what it
does around each commit of the run (:mod:`~prep.outputs.bucket.run`), its background uploads
(:mod:`~prep.outputs.bucket.mirror`), what its prefixes hold (:mod:`~prep.outputs.bucket.layout`)
and its object calls with retries (:mod:`~prep.outputs.bucket.store`)."""
