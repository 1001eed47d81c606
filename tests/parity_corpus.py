"""Documents and tokenizers on which every engine must give the reference's ids.

``edge_texts()`` is the issue's edge-case corpus, ``parity_texts()`` adds the golden GPT-2
documents (``golden_corpus``), and ``parity_tokenizers(tmp)`` writes the parity set:
GPT-2, a byte-level BPE trained here by ``tokenizers``, cl100k and an NFKC + lowercase +
Metaspace tokenizer (which a fast engine must match or decline).

A plain module (no package-relative imports): tests and benchmarks import it by path.
"""

# Intentional look-alike characters (fullwidth and letterlike forms) trip RUF001.
# ruff: noqa: RUF001

from __future__ import annotations

import json
import random
from pathlib import Path

from golden_corpus import golden_texts

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SEED = 10


def edge_texts() -> list[str]:
    """The edge cases: special-token text, emoji and ZWJ, CJK, combining marks, NUL, CR/LF
    runs, long whitespace runs, a 50,000-character word, unusual but valid UTF-8."""
    rng = random.Random(SEED)
    specials = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
                "<|endofprompt|>", "<unk>", "</s>", "<s>"]
    out = [f"before {s} after" for s in specials]
    out += ["".join(specials), "<|endoftext", "endoftext|>", "< |endoftext| >", "<|<|endoftext|>|>"]
    out += [
        "👨\u200d👩\u200d👧\u200d👦 family, 👩🏽\u200d💻 coder, 🏳️\u200d🌈 flag, 🇯🇵🇫🇷 flags",
        "\u200d\u200d zwj alone \u200c zwnj \u2060 word joiner",
        "漢字かなカナ한국어中文繁體字 𠜎𠜱𠝹𠱓 (astral CJK)",
        "e\u0301e\u0300e\u0302 a\u0308o\u0308 \u0301 leading combining \u0915\u094d\u0937",
        "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349 zalgo",
        "nul\x00inside \x00\x00\x00 three \x01\x02\x1f controls",
        "\r\n" * 40 + "x" + "\r" * 30 + "y" + "\n" * 50 + "\r\n\n\r",
        " " * 5000 + "word" + "\t" * 700 + "tab" + "\u3000" * 90 + "ideographic",
        "\u00a0\u2009\u202f\u2002 unusual spaces \u205f\u1680 end   ",
        "w" * 50_000,
        "".join(rng.choice("abcdefghij") for _ in range(50_000)),
        "\ufeffBOM first \ufffe\uffff noncharacters \ufdd0\ufdef \U0010fffd \U000e0001 tag",
        "\u0085 NEL \u2028 LS \u2029 PS \x7f DEL \ud7ff \ue000 private \U000f0000",
        "\U0001d400\U0001d401 math bold, \U0001f600 \U0001f9d1\u200d\U0001f91d\u200d\U0001f9d1",
        "мир\u0301 ﬁ ligature ＡＢＣ fullwidth ① circled ℌ script İ dotted I ß ẞ",
        "mixed 123abc456 1,234,567.89 ١٢٣ 一二三 ²³ Ⅻ",
        "'s 'S 'll 'LL ' s ''' quote runs n't",
    ]
    return out


def parity_texts() -> list[str]:
    """Edge cases and the golden GPT-2 documents."""
    return edge_texts() + golden_texts()


def trained_bpe(directory: Path, normalized: bool = False) -> Path:
    """A tokenizer trained here by ``tokenizers`` on ``parity_texts()``: byte-level BPE with
    ``<|endoftext|>``, or (``normalized``) NFKC + lowercase with a Metaspace pre-tokenizer.
    Returns the tokenizer.json path."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    directory.mkdir(parents=True, exist_ok=True)
    if normalized:
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(
            vocab_size=600, special_tokens=["<unk>", "</s>"], show_progress=False)
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=1000, special_tokens=["<|endoftext|>"], show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(parity_texts() * 2, trainer=trainer)
    path = directory / "tokenizer.json"
    tok.save(str(path))
    eos = tok.token_to_id("</s>" if normalized else "<|endoftext|>")
    (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": eos}))
    return path


TRAINED = {"bpe-trained": False, "nfkc-metaspace": True}  # name -> normalized


def parity_tokenizers(tmp: Path, train: bool = True) -> dict[str, Path]:
    """Name -> tokenizer.json of the parity set (the trained ones are written under ``tmp``;
    with ``train=False``, the paths where an earlier call wrote them)."""
    if train:
        for name, normalized in TRAINED.items():
            trained_bpe(tmp / name, normalized=normalized)
    return {
        "gpt2": FIXTURES / "gpt2" / "tokenizer.json",
        "bpe-trained": tmp / "bpe-trained" / "tokenizer.json",
        "cl100k": FIXTURES / "cl100k" / "tokenizer.json",
        "nfkc-metaspace": tmp / "nfkc-metaspace" / "tokenizer.json",
    }
