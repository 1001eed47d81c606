"""The document stream and what it is written into: the pinned order, shuffles, visiting and
batches (:mod:`~prep.stream.order`), the prefix digest's chain (:mod:`~prep.stream.chain`), and
one writer per split with its separators, rollover and counts (:mod:`~prep.stream.writer`)."""
