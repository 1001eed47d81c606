"""The byte encoder (``prep.encoders.byte``): ids are the text's UTF-8 bytes."""

from __future__ import annotations

import hashlib

from prep.encoders.byte import EMPTY_SHA256, ByteEncoder
from prep.state.identity import TokenizerIdentity


def encoder() -> ByteEncoder:
    return ByteEncoder(TokenizerIdentity(spec="byte", tokenizer_id="byte", sha256=EMPTY_SHA256,
                                         vocab_size=256, doc_sep_id=None))


def test_ids_are_the_utf8_bytes_per_document_and_flat() -> None:
    texts = ["hé", "", "日"]
    utf8 = [t.encode() for t in texts]
    enc = encoder()
    assert [a.tolist() for a in enc.encode_batch(texts, utf8)] == [[104, 195, 169], [],
                                                                   [230, 151, 165]]
    flat = enc.encode_flat(texts, utf8)
    assert flat.ids.tolist() == [104, 195, 169, 230, 151, 165]
    assert flat.offsets.tolist() == [0, 3, 3, 6]
    assert enc.sep_exclusive is False


def test_the_empty_sha256() -> None:
    assert EMPTY_SHA256 == hashlib.sha256(b"").hexdigest() == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
