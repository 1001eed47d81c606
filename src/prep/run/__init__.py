"""One run over a staging directory, split along the commit protocol:

- :mod:`~prep.run.lifecycle` sequences it: lock, then a fresh start, a resume, an already
  complete dataset or a refresh, then the run and its publish;
- :mod:`~prep.run.freshness` decides whether a published dataset is up to date;
- :mod:`~prep.run.inputs` resolves the source and the encoder (fresh, or pinned from a
  checkpoint);
- :mod:`~prep.run.start` creates staging with its first checkpoint, or
  :mod:`~prep.run.increment` continues a published version (an incremental refresh);
- :mod:`~prep.run.resume` checks staging against its checkpoint and replays the source,
  reading only, into a plan; then applies it;
- :mod:`~prep.run.committed` is the committed state and the checkpoint it writes;
- :mod:`~prep.run.loop` reads, tokenizes and commits batches, checkpointing between them,
  over the worker tasks of :mod:`~prep.run.work`;
- :mod:`~prep.run.finish` seals the shards and writes the manifest into staging.
"""
