"""The work a run hands its worker processes: the stream cut into tasks
(:mod:`~prep.run.work.cuts`), each task read, prepared and tokenized in a worker
(:mod:`~prep.run.work.tasks`, :mod:`~prep.run.work.tokenize`), the cross-check of a fast engine
(:mod:`~prep.run.work.crosscheck`) and how many workers a run keeps busy
(:mod:`~prep.run.work.sizing`)."""
