"""One run over a staging directory, split along the commit protocol:

- :mod:`~prep.run.inputs` resolves the source and the encoder (fresh, or pinned from a
  checkpoint);
- :mod:`~prep.run.start` creates staging with its first checkpoint;
- :mod:`~prep.run.restore` checks staging against its checkpoint and replays the source,
  reading only, into a plan; then applies it;
- :mod:`~prep.run.state` is the committed state and the checkpoint it writes;
- :mod:`~prep.run.loop` reads, tokenizes and commits batches, checkpointing between them;
- :mod:`~prep.run.finish` seals the shards and writes the manifest into staging.
"""
