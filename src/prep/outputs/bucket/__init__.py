"""``--out s3://...`` / ``gs://...``: the output (:mod:`~prep.outputs.bucket.output`), its run's
commits, restore and publish (:mod:`~prep.outputs.bucket.run`) with their background uploads
(:mod:`~prep.outputs.bucket.mirror`), where its objects live and what its prefixes hold
(:mod:`~prep.outputs.bucket.layout`), and its object calls with retries
(:mod:`~prep.outputs.bucket.store`)."""
