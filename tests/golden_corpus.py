"""Golden documents and a reference GPT-2 encoder for the tokenizer parity test.

``golden_texts()`` returns the same list of documents on every call (no randomness outside a
fixed seed): hand-written cases for each pitfall of byte-level BPE (non-ASCII scripts, emoji
with ZWJ sequences and flags, whitespace runs, contractions, digits, code, URLs, special-token
look-alikes such as the literal text ``<|endoftext|>``), seeded mixes of them, very long words
and one ~20 KB document. Every text is a document for prep: ``text.strip() != ""``.

``tiktoken_gpt2(fixtures_dir)`` builds GPT-2 in ``tiktoken`` from ``gpt2/gpt2.tiktoken``: an
implementation independent of ``tokenizers``, whose ``encode_ordinary`` is the expected ids.

A plain module (no package-relative imports): tests import it as ``golden_corpus``.
"""

# Intentional look-alike characters (Greek, Cyrillic, fullwidth forms) trip RUF001.
# ruff: noqa: RUF001

from __future__ import annotations

import base64
import random
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT2_EOT_ID = 50256
SEED = 1234

PROSE = [
    "Hello world",
    "Hi",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.",
    "Tokenizers split text into pieces; the pieces become integer ids.",
    "A language model predicts the next token given all the previous ones.",
    "In 1969, two astronauts walked on the Moon while a third orbited above them.",
    "She sells sea shells by the sea shore, and the shells she sells are surely seashells.",
    "Rain fell on the old city all night, and by morning the streets were rivers.",
    "The committee met on Tuesday, argued until dusk, and agreed on nothing at all.",
    "Please find attached the quarterly report. Let me know if you have questions.",
    "Once upon a time there lived a king who had three daughters.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Q: What is the capital of France?\nA: Paris.",
    "Dear Sir or Madam,\n\nI am writing to complain about the noise.\n\nYours faithfully,\nJ.",
    "HELLO WORLD, THIS IS SHOUTING.",
    "hello world, this is whispering.",
    "MiXeD CaSe TeXt iS HaRd To ReAd.",
    "word",
    "a",
    ".",
]

NON_ASCII = [
    "café naïve résumé façade coöperate",
    "Ça dépend de la météo, évidemment.",
    "Die Straße war überraschend ruhig. Grüße aus München!",
    "¿Dónde está la estación? ¡Mañana salimos temprano!",
    "A atenção ao coração é fundamental em São Paulo.",
    "Zażółć gęślą jaźń.",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Þetta reddast. Ægir og Ørn á Íslandi.",
    "Ağaç gölgesinde çay içtik; İstanbul'da ılık bir gündü.",
    "Tiếng Việt có nhiều dấu thanh: à á ả ã ạ.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Привет, мир! Как дела?",
    "Καλημέρα σας, τι κάνετε;",
    "Η θάλασσα ήταν ήρεμη σήμερα. Ο αριθμός π είναι περίπου 3,14159.",
    "مرحبا بالعالم",
    "اللغة العربية جميلة جدا، أليس كذلك؟",
    "שלום עולם",
    "नमस्ते दुनिया",
    "हिन्दी एक सुंदर भाषा है। क्या आप हिन्दी बोलते हैं?",
    "বাংলা ভাষা",
    "தமிழ் மொழி",
    "我们明天早上八点在火车站见面。",
    "数据清洗是训练语言模型的重要步骤。",
    "今天天气很好，我们去公园散步吧！",
    "東京の天気は今日も晴れです。",
    "ありがとうございます！また来週。",
    "カタカナとひらがなを混ぜて書きます。",
    "안녕하세요, 만나서 반갑습니다.",
    "오늘은 비가 많이 와요. 우산을 가져가세요.",
    "สวัสดีครับ ยินดีที่ได้รู้จัก",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    "ქართული ენა",
    "Հայերեն լեզու",
    "አማርኛ ቋንቋ",
    "ᚠᚢᚦᚨᚱᚲ runes",
    "Ünïcödé wïth dïäcrïtïcs everywhere",
    "e\u0301 (e + combining acute) vs \u00e9 (precomposed)",
    "Z\u0351\u0362a\u0315\u0327l\u0334g\u0328o\u0336 text",
    "fullwidth: ＡＢＣ　ｄｅｆ　１２３！",
    "math: ∀x ∈ ℝ, ∃y: x² + y² ≤ 1 ⇒ |x| ≤ 1; ∑ ∫ √ ∞ ≠ ≈",
    "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐 𝕯𝖔𝖚𝖇𝖑𝖊 letters",
    "currency: €5, £10, ¥1000, ₹250, ₩5000, ₿0.01",
    "quotes: “double” ‘single’ «guillemets» „low“ —dash– …",
    "no\u00a0break\u00a0space and\u202fnarrow",
    "zero\u200bwidth\u200bspace and\u200cnon\u200djoiners",
    "\ufeffbyte order mark at start",
    "line\u2028separator and\u2029paragraph separator",
    "right-to-left \u202bembedding\u202c and \u200fmark",
    "ideographic\u3000space\u3000here",
    "soft\u00adhyphen",
]

EMOJI = [
    "😀😃😄😁",
    "I love it 😍🔥🚀",
    "👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿",
    "family: 👨\u200d👩\u200d👧\u200d👦",
    "coder: 👩\u200d💻 and 🧑🏽\u200d🚀",
    "flags: 🇯🇵 🇫🇷 🇺🇸 🇧🇷 🇪🇺",
    "rainbow flag 🏳️\u200d🌈 and pirate 🏴\u200d☠️",
    "hearts ❤️ 🧡 💛 💚 💙 💜 🖤",
    "keycaps 1️⃣ 2️⃣ #️⃣",
    "☕☕☕ coffee time",
    "Done ✅ Failed ❌ Warning ⚠️",
    "🎉🎉🎉🎉🎉🎉🎉🎉🎉🎉",
    "text🙂text",
    "🇬🇧🇬🇧 back-to-back flags",
    "England 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
]

WHITESPACE = [
    "two  spaces",
    "three   spaces",
    "many          spaces",
    "tab\tseparated\tvalues",
    "double\t\ttabs",
    "line one\nline two",
    "paragraph one\n\nparagraph two",
    "three\n\n\nnewlines",
    "windows\r\nline\r\nendings\r\n",
    "old mac\rline ending",
    "trailing spaces   ",
    "trailing newline\n",
    "trailing mix \t \n",
    " leading space",
    "  two leading spaces",
    "\tleading tab",
    "\nleading newline",
    "   \n   indented block\n   continues here",
    "mixed \t \n \t whitespace",
    "end with many newlines\n\n\n\n",
    "space before newline \nnext",
    "x \n y",
    "a\u000bb\u000cc",
    "  x  ",
    "\n\nHello\n\n",
    "word" + " " * 40 + "word",
    "\t\t\t\tdeep indent",
    "col1  \tcol2\t  col3",
    "\r\n\r\nblank CRLF lines first",
    "\u0085next line char",
]

DIGITS = [
    "0",
    "42",
    "3.14159265358979323846",
    "1234567890",
    "12345678901234567890123456789012345678901234567890",
    "The year 2024 had 366 days.",
    "Call +1 (555) 123-4567 or 555.987.6543",
    "Version 1.2.3-rc.4+build.567",
    "1,000,000 and 1.000.000 and 1 000 000",
    "2024-01-31T23:59:59.999Z",
    "IP 192.168.0.1 port 8080",
    "0x1F 0b1010 0o777 1e-9 6.02e23",
    "Σ = 1 + 2 + … + 100 = 5050",
    "Arabic-Indic ٠١٢٣٤٥٦٧٨٩ and Devanagari ०१२३४५६७८९",
    "fullwidth digits １２３４５",
    "ⅠⅡⅢⅣ roman numerals and ①②③ circled",
    "½ ¼ ¾ fractions and ² ³ superscripts",
    "99 bottles of beer on the wall, 99 bottles of beer.",
]

PUNCTUATION = [
    "!!!",
    "?!?!?!",
    "...",
    "Wait... what?!",
    "----------------------------------------",
    "========================================",
    "***bold*** and ___underline___",
    "(((nested))) [[[brackets]]] {{{braces}}}",
    "#hashtag @mention $money %percent ^caret &amp *star",
    "a.b,c;d:e!f?g",
    "~!@#$%^&*()_+-=[]{}|;':\",./<>?`",
    "'single quoted' and \"double quoted\"",
    "''''''",
    "<html><body><p>Hi</p></body></html>",
    "¡¿¡¿",
    "→ ← ↑ ↓ ⇒ ⇔",
    "• bullet • points •",
]

CONTRACTIONS = [
    "don't can't won't shouldn't",
    "I'll we'll you'll they'll",
    "we've they've I've",
    "I'm you're they're we're",
    "I'd you'd she'd",
    "it's the cat's toy; the dogs' bowls",
    "DON'T SHOUT, IT'S LATE",
    "I'LL BE BACK, WE'VE WON",
    "'s 't 're 've 'm 'll 'd",
    "'s",
    "'",
    "rock'n'roll and o'clock",
    "ma'am y'all ain't",
    "don’t with a curly apostrophe",
    "''s double apostrophe",
    "it''s",
    "James's book and Charles' car",
]

CODE = [
    "def f(x):\n    return x * 2\n",
    'def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n',
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    '#include <stdio.h>\nint main(void) { printf("hi\\n"); return 0; }',
    "const x = () => { return [1, 2, 3].map(v => v ** 2); };",
    '{"key": "value", "list": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "SELECT name, COUNT(*) FROM users WHERE age > 21 GROUP BY name;",
    "$ pip install --upgrade prep && prep --out data/gpt2 --tokenizer gpt2",
    "build:\n\tgcc -O2 -o app main.c\n",
    'fn main() {\n    let v: Vec<u32> = (0..10).collect();\n    println!("{:?}", v);\n}',
    "if x != None and y >= 0 or not z: pass  # comment",
    "<?php echo $_GET['q']; ?>",
    "    indented code\n        more indented\n    back",
    "a = b if c else d; e += 1; f //= 2; g **= 3",
    "x_1 = foo_bar.baz_qux(CONST_VALUE, **kwargs)",
    "regex = r'^\\s*(\\d+)\\s*$'",
    "```python\nprint('hello')\n```",
]

URLS = [
    "https://example.com",
    "Visit https://www.example.org/path/to/page?query=1&lang=en#section for details.",
    "http://localhost:8080/api/v1/items/42",
    "mailto:someone@example.com",
    "ftp://files.example.net/pub/archive.tar.gz",
    "hf://datasets/owner/name@main/data/*.parquet",
    "s3://bucket-name/prefix/part-00000.parquet",
    "file:///home/user/My%20Documents/notes.txt",
    "C:\\Users\\Name\\Documents\\file.txt",
    "/usr/local/lib/python3.11/site-packages/",
    "git@github.com:owner/repo.git",
    "https://例え.jp/パス?q=テスト",
    "user.name+tag@sub.example.co.uk",
]

SPECIAL = [
    "<|endoftext|>",
    "<|endoftext|><|endoftext|>",
    " <|endoftext|> ",
    "<|endoftext|>\n",
    "\n<|endoftext|>",
    "Before the separator<|endoftext|>after the separator.",
    "The string <|endoftext|> is GPT-2's document separator.",
    "end of one document.<|endoftext|>Start of another.",
    "<|endoftext",
    "endoftext|>",
    "<|ENDOFTEXT|>",
    "< |endoftext| >",
    "<||>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n    return 1<|fim_middle|>",
    "<|fim_prefix|>",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\nHi!<|im_end|>",
    "<|endofprompt|>",
    "<s>sentence</s>",
    "[CLS] text [SEP] [PAD] [MASK] [UNK]",
    "<pad><unk><mask>",
    "<|reserved_special_token_0|>",
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>",
    "<<SYS>>\nYou are helpful.\n<</SYS>>",
    "[INST] question [/INST]",
]

LONG_WORDS = [
    "supercalifragilisticexpialidocious",
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "Donaudampfschifffahrtsgesellschaftskapitänswitwe",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
    "a" * 3000,
    "ab" * 1500,
    "x" * 1000 + " " + "y" * 1000,
    "0123456789" * 100,
    "deadbeefcafebabe" * 64,
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 20,
    "!" * 500,
    " " * 300 + "end",
    "\n" * 200 + "end",
    "é" * 800,
    "漢字" * 500,
    "🙂" * 300,
    "the " * 500,
]

POOLS = [PROSE, NON_ASCII, EMOJI, WHITESPACE, DIGITS, PUNCTUATION, CONTRACTIONS, CODE, URLS]
JOINERS = [" ", "  ", "\n", "\n\n", "\t", " \n", "\r\n", "", ", ", ". ", " <|endoftext|> "]


def _mixed(rng: random.Random, count: int) -> list[str]:
    """Return ``count`` documents, each 2-6 fragments from ``POOLS`` joined by ``JOINERS``."""
    docs = []
    for _ in range(count):
        parts = [rng.choice(rng.choice(POOLS)) for _ in range(rng.randint(2, 6))]
        doc = parts[0]
        for part in parts[1:]:
            doc += rng.choice(JOINERS) + part
        if rng.random() < 0.2:
            doc = rng.choice([" ", "  ", "\n", "\t"]) + doc
        if rng.random() < 0.2:
            doc += rng.choice([" ", "   ", "\n", "\n\n", "\r\n"])
        docs.append(doc)
    return docs


def _variants() -> list[str]:
    """Return case and spacing variants of the contraction and special-token cases."""
    docs = []
    for text in CONTRACTIONS + SPECIAL[:8]:
        docs += [text.upper(), " " + text, text + " ", f"x{text}x", f"  {text}\n"]
    return docs


def _long_document(min_chars: int = 20_000) -> str:
    """Return one document of at least ``min_chars`` characters cycling through every pool."""
    lines: list[str] = []
    size = 0
    index = 0
    pools = [*POOLS, SPECIAL]
    while size < min_chars:
        pool = pools[index % len(pools)]
        line = f"{index}. {pool[(index * 7) % len(pool)]}"
        lines.append(line)
        size += len(line) + 1
        index += 1
    return "\n".join(lines) + "\n"


def golden_texts() -> list[str]:
    """Return the golden documents: at least 320, identical on every call, none blank.

    Raises ``ValueError`` if a text is empty or whitespace-only (a bug in this module: prep
    would skip such a row rather than encode it).
    """
    texts = [
        *PROSE,
        *NON_ASCII,
        *EMOJI,
        *WHITESPACE,
        *DIGITS,
        *PUNCTUATION,
        *CONTRACTIONS,
        *CODE,
        *URLS,
        *SPECIAL,
        *LONG_WORDS,
        *_variants(),
        *_mixed(random.Random(SEED), 120),
        _long_document(),
    ]
    for index, text in enumerate(texts):
        if not text.strip():
            raise ValueError(f"golden text {index} is blank: {text!r}; give it visible content")
    return texts


def tiktoken_gpt2(fixtures_dir: Path) -> tiktoken.Encoding:
    """Return GPT-2 as a ``tiktoken.Encoding`` built from ``fixtures_dir/gpt2/gpt2.tiktoken``.

    Each line of that file is ``base64(token bytes) rank``. The only special token is
    ``<|endoftext|>`` = 50256; use ``encode_ordinary`` so its literal text stays ordinary.
    Raises ``OSError`` if the file is missing and ``ValueError`` if a line is malformed.
    """
    import tiktoken

    path = fixtures_dir / "gpt2" / "gpt2.tiktoken"
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(path.read_text(encoding="ascii").splitlines(), start=1):
        if not line:
            continue
        token, sep, rank = line.partition(" ")
        if not sep:
            raise ValueError(f"{path} line {number}: expected 'base64token rank', got {line!r}")
        ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding(
        "gpt2",
        pat_str=GPT2_PAT,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": GPT2_EOT_ID},
    )
