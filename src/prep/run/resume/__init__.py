"""Resuming a run: staging checked against its checkpoint and the committed rows replayed
(:mod:`~prep.run.resume.restore`, the replay itself in :mod:`~prep.run.resume.replay`), the
checkpoint's claims re-derived from what the replay reads (:mod:`~prep.run.resume.claims`)."""
