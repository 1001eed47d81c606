"""Training tokenizers from the pinned stream: ``prep.Tokenizer`` (:mod:`.model`), the exact
BPE trainer (:mod:`.bpe`, compiled from ``_bpe.c`` when built), the files a trained
tokenizer is (:mod:`.files`), and ``prep train-tokenizer`` (:mod:`.training`, its settings in
:mod:`.settings`, checkpoints in :mod:`.snapshot`, ``training.json`` in :mod:`.record`).
See docs/tokenizer.md."""

from prep.tokenizer.model import Tokenizer

__all__ = ["Tokenizer"]
