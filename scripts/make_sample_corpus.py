"""Write the small sample corpus bundled with prep (the default ``--source``).

Output: ``part-00000.parquet``, ``part-00001.parquet`` and ``part-00002.parquet`` in
``src/prep/sample/`` (or ``--out DIR``), each with columns ``id`` (int64, unique across the
three files, counting from 0) and ``text`` (string, never null), 386 rows in all, written
with zstd compression and 64-row row groups so every file holds several row groups.

The text is synthetic prose composed here from word lists and templates with a seeded
``random.Random``: short notes, articles of a few KB, Markdown lists, code, travel notes with
accented Latin, Greek, Cyrillic, CJK, Korean and emoji, and text with whitespace runs, tabs
and ``\\r\\n`` line endings. Three rows are placed on purpose: ``""`` (file 0, row 17),
``"  \\n\\t"`` (file 1, row 42) and ``"\\r\\n\\r\\n   "`` (file 2, row 5) are skipped by prep
and counted as empty; file 2, row 60 contains the literal text ``<|endoftext|>``.

Deterministic: the same pyarrow install writes the same bytes on every run. Regenerate
(after changing this script, then commit the new files) with:

    python scripts/make_sample_corpus.py [--out DIR]
"""

# Intentional non-ASCII sample text (Greek, CJK, fullwidth punctuation) trips RUF001.
# ruff: noqa: RUF001
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20240611
ROWS_PER_FILE = (128, 141, 117)
ROW_GROUP_SIZE = 64
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "src" / "prep" / "sample"

# (file index, row within file) -> fixed text
PLANTED: dict[tuple[int, int], str] = {
    (0, 17): "",
    (1, 42): "  \n\t",
    (2, 5): "\r\n\r\n   ",
    (2, 60): (
        "A note on tokenizers: GPT-2 reserves the string <|endoftext|> as its document "
        "separator, but inside a document like this one it is just ordinary text and must "
        "be encoded as such."
    ),
}


def words(spec: str) -> list[str]:
    """Split a whitespace-separated word list; ``_`` inside an entry stands for a space."""
    return [w.replace("_", " ") for w in spec.split()]


# Word lists are whitespace-separated strings so the data stays compact.
TOPICS: dict[str, str] = {
    "cooking": "recipe sauce oven onion skillet dough spice broth knife lemon pantry kettle",
    "astronomy": "telescope comet nebula orbit eclipse planet galaxy meteor observatory "
    "star_chart lens moon",
    "gardening": "seedling trellis compost tomato hedge greenhouse root raised_bed shovel "
    "orchard frost watering_can",
    "software": "compiler database server function module test_suite deployment cache "
    "pull_request terminal parser thread",
    "travel": "ferry station hostel passport market harbor itinerary trail museum backpack "
    "border night_train",
    "history": "archive treaty manuscript castle empire chronicle monastery census "
    "harbor_town letter dynasty map",
}
ADJECTIVES = words(
    "quiet sturdy unusual bright careful old small enormous reliable fragile familiar "
    "strange patient noisy simple elegant forgotten surprising modest crowded"
)
VERBS_PAST = words(
    "checked rebuilt noticed measured described moved tested repaired ignored replaced "
    "photographed compared cleaned ordered recorded borrowed"
)
VERBS = words("work fail improve last matter settle change break hold_up")
ADVERBS = words("slowly carefully almost quietly reluctantly suddenly barely eventually honestly")
PEOPLE = words(
    "my_neighbor the_old_caretaker Dr._Okafor Maria a_friend_from_school the_tour_guide "
    "Professor_Lindqvist our_editor Sam the_shop_owner Aunt_Rosa a_retired_engineer"
)
PLACES = words(
    "Lisbon the_north_valley Kyoto a_village_near_Tromsø Ottawa the_old_quarter Valparaíso "
    "Thessaloniki the_coast Marrakesh Zürich a_small_island"
)
IDENTIFIERS = words("total count buffer items offset uid rows path result batch limit token")
EMOJI = words("🚀 🎉 😀 👍🏽 🇯🇵 👩\u200d💻 ❤️ 🌧️ ☕ 🙏 🔥 📦 👨\u200d👩\u200d👧 🏳️\u200d🌈 ✨ 🤔")
SENTENCES = [
    "The {A} {N} {Vd} the {N2} near {P}.",
    "In {Y}, {Who} {Vd} a {A} {N} that nobody had expected.",
    "It is worth noting that the {N} was {Adv} {A}.",
    "According to {Who}, roughly {pct}% of every {N} in {P} is still {A}.",
    "If you have never seen a {A} {N}, start with something small.",
    "Why does the {N} matter? Because without it, the {N2} would {V} {Adv}.",
    "There were {num} items on the list, and only {small} of them {Vd} on time.",
    "The {N}, however, {Vd} {Adv} \u2014 a detail most guides leave out.",
    "We {Vd} the {N} twice before the {N2} finally started to {V}.",
    "{Who} says the trick is to keep the {N} {A} and the {N2} {A2}.",
    "Nobody {Vd} the {N} until {Who} pointed it out.",
    "Most days the {N} is {A}; on weekends it gets {A2}.",
    "I {Vd} the {N} at {hour}:{minute} and wrote down everything I saw.",
    "The {N2} cost about ${price}, which felt {A} at the time.",
    "Honestly, I don't think the {N} will {V} unless someone {Vd} the {N2} first.",
    "Later that evening, {Who} {Vd} the {A} {N} and we called it a day.",
]
TITLES = [
    "A {A} guide to the {N}",
    "{num} things I learned about the {N}",
    "Notes on the {N} of {P}",
    "Why the {N} still matters",
    "The {A} {N}: a field report",
    "Ask {Who}: fixing a {A} {N}",
]
SHORT = [
    "Thanks!",
    "Works for me.",
    "See above.",
    "ok",
    "Same here, +1.",
    "Will do.",
    "Great post, thank you for sharing.",
    "Closed as duplicate.",
    "lol",
    "Back tomorrow.",
    "Can confirm on 2.1.3",
    "Nice.",
    "Not sure I follow?",
    "Fixed in the latest build.",
]
FOREIGN: dict[str, list[str]] = {
    "French": [
        "Ça dépend de la météo, évidemment.",
        "Nous avons déjà goûté la crème brûlée.",
        "Où est la gare, s'il vous plaît ?",
        "C'était une journée très agréable.",
    ],
    "German": [
        "Die Straße war überraschend ruhig.",
        "Grüße aus München!",
        "Könnten Sie mir bitte helfen?",
        "Das Frühstück war großartig.",
    ],
    "Spanish": [
        "¿Dónde está la estación?",
        "Mañana salimos temprano.",
        "El niño comió piña en Cádiz.",
        "¡Qué día tan bonito!",
    ],
    "Portuguese": ["A atenção ao coração é fundamental.", "São Paulo é enorme."],
    "Polish": ["Zażółć gęślą jaźń.", "Dzień dobry, jak się masz?"],
    "Czech": ["Příliš žluťoučký kůň úpěl ďábelské ódy."],
    "Icelandic": ["Þetta reddast.", "Góðan daginn!"],
    "Greek": [
        "Καλημέρα σας, τι κάνετε;",
        "Η θάλασσα ήταν ήρεμη σήμερα.",
        "Ευχαριστώ πολύ για τη βοήθεια.",
        "Ο αριθμός π είναι περίπου 3,14159.",
    ],
    "Russian": [
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "Спасибо, всё было отлично.",
    ],
    "Chinese": [
        "我们明天早上八点在火车站见面。",
        "这个问题比看起来要复杂得多。",
        "数据清洗是训练语言模型的重要步骤。",
        "今天天气很好，我们去公园散步吧！",
    ],
    "Japanese": [
        "東京の天気は今日も晴れです。",
        "ありがとうございます！また来週。",
        "カタカナとひらがなを混ぜて書きます。",
    ],
    "Korean": ["안녕하세요, 만나서 반갑습니다.", "오늘은 비가 많이 와요."],
}


def tidy(text: str) -> str:
    """Capitalize the first letter and turn "a" into "an" before a vowel."""
    text = re.sub(r"\b([Aa]) (?=[aeiou])", r"\1n ", text)
    return text[0].upper() + text[1:]


class Composer:
    """Compose synthetic documents from the word lists above, driven by one seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def _fill(self, template: str, nouns: list[str]) -> str:
        r = self.rng
        noun, noun2 = r.sample(nouns, 2)
        adj, adj2 = r.sample(ADJECTIVES, 2)
        return template.format(
            A=adj,
            A2=adj2,
            N=noun,
            N2=noun2,
            Vd=r.choice(VERBS_PAST),
            V=r.choice(VERBS),
            Adv=r.choice(ADVERBS),
            Who=r.choice(PEOPLE),
            P=r.choice(PLACES),
            Y=r.randint(1850, 2023),
            pct=r.randint(3, 97),
            num=r.randint(4, 40),
            small=r.randint(1, 3),
            hour=f"{r.randint(5, 23):02d}",
            minute=f"{r.randint(0, 59):02d}",
            price=f"{r.randint(3, 900)}.{r.randint(0, 99):02d}",
        )

    def _nouns(self) -> list[str]:
        return words(TOPICS[self.rng.choice(list(TOPICS))])

    def sentence(self, nouns: list[str]) -> str:
        return tidy(self._fill(self.rng.choice(SENTENCES), nouns))

    def paragraph(self, nouns: list[str], low: int = 2, high: int = 6) -> str:
        return " ".join(self.sentence(nouns) for _ in range(self.rng.randint(low, high)))

    def title(self, nouns: list[str]) -> str:
        return tidy(self._fill(self.rng.choice(TITLES), nouns))

    def short(self) -> str:
        return self.rng.choice(SHORT)

    def prose(self) -> str:
        nouns = self._nouns()
        return "\n\n".join(self.paragraph(nouns) for _ in range(self.rng.randint(1, 4)))

    def article(self) -> str:
        nouns = self._nouns()
        parts = [f"# {self.title(nouns)}"]
        for _ in range(self.rng.randint(3, 6)):
            parts.append(f"## {self.title(nouns)}")
            parts.extend(self.paragraph(nouns, 4, 8) for _ in range(self.rng.randint(1, 3)))
        return "\n\n".join(parts) + "\n"

    def listing(self) -> str:
        nouns = self._nouns()
        r = self.rng
        lines = [f"{self.title(nouns)}:", ""]
        for i in range(r.randint(3, 9)):
            bullet = r.choice(["-", "*", f"{i + 1}."])
            lines.append(f"{bullet} {self.sentence(nouns)}")
        lines += [
            "",
            f"Last updated {r.randint(2001, 2024)}-{r.randint(1, 12):02d}-"
            f"{r.randint(1, 28):02d}, version {r.randint(0, 9)}.{r.randint(0, 30)}.",
        ]
        return "\n".join(lines)

    def multilingual(self) -> str:
        r = self.rng
        langs = r.sample(list(FOREIGN), r.randint(2, 5))
        nouns = words(TOPICS["travel"])
        if r.random() < 0.5:
            lines = [f"Phrasebook, page {r.randint(2, 90)} {r.choice(EMOJI)}", ""]
            lines += [f"- {lang}: {r.choice(FOREIGN[lang])}" for lang in langs]
            return "\n".join(lines)
        parts = []
        for lang in langs:
            quote = r.choice(FOREIGN[lang])
            parts.append(f"{self.sentence(nouns)} In {lang}, as we heard it: \u00ab{quote}\u00bb")
        parts.append(" ".join(r.choice(EMOJI) for _ in range(r.randint(1, 4))))
        return " ".join(parts)

    def code(self) -> str:
        r = self.rng
        a, b, c = r.sample(IDENTIFIERS, 3)
        n = r.randint(2, 512)
        snippets = [
            f'def {a}_of({b}: list[int]) -> int:\n    """Return the {a}."""\n'
            f"    {c} = 0\n    for x in {b}:\n        if x > {n}:\n            {c} += x\n"
            f"    return {c}\n",
            f"for (int i = 0; i < {n}; ++i) {{\n\t{a}[i] = {b}[i] * 2;\n\tif ({a}[i] < 0) "
            f"break;\n}}\nreturn {a}[{n} - 1];\n",
            f"$ pip install --upgrade {a}-tools=={r.randint(0, 5)}.{r.randint(0, 20)}\n"
            f"$ {a}-tools run --limit {n} --out ./{b}/  # {c} goes here\n",
            f'{{"{a}": {n}, "{b}": [1, 2, 3], "{c}": null, "ok": true}}',
            f"SELECT {a}, COUNT(*) AS {b}\nFROM {c}\nWHERE {a} > {n}\nGROUP BY {a};\n",
            f"build:\n\tgcc -O2 -Wall -o {a} {a}.c\nclean:\n\trm -f {a} *.o\n",
        ]
        snippet = r.choice(snippets)
        intro = f"Here is the {self.rng.choice(ADJECTIVES)} version I ended up with:"
        return f"{intro}\n\n```\n{snippet}```\n\nIt handles {n} {a} in about {r.randint(1, 90)} ms."

    def messy(self) -> str:
        r = self.rng
        nouns = self._nouns()
        sents = [self.sentence(nouns) for _ in range(r.randint(3, 8))]
        joiners = ["  ", "   ", "\t", " \n", "\n\n\n", "\r\n", "  \r\n", " \t ", "\n    "]
        text = sents[0]
        for s in sents[1:]:
            text += r.choice(joiners) + s
        if r.random() < 0.5:
            text = r.choice(["   ", "\t", "\n"]) + text
        if r.random() < 0.5:
            text += r.choice(["   ", "\n", "\t\t", "\r\n", "  \n  "])
        return text

    def table(self) -> str:
        r = self.rng
        nouns = self._nouns()
        rows = ["name\tqty\tprice"]
        for noun in r.sample(nouns, r.randint(2, 6)):
            rows.append(f"{noun}\t{r.randint(1, 99)}\t{r.randint(1, 500)}.{r.randint(0, 99):02d}")
        return "\n".join(rows)

    def document(self) -> str:
        kinds: list[tuple[Callable[[], str], int]] = [
            (self.short, 10),
            (self.prose, 36),
            (self.article, 9),
            (self.listing, 8),
            (self.multilingual, 13),
            (self.code, 10),
            (self.messy, 9),
            (self.table, 5),
        ]
        fns = [fn for fn, _ in kinds]
        weights = [w for _, w in kinds]
        return self.rng.choices(fns, weights=weights)[0]()


def build_files() -> list[list[str]]:
    """Return the texts of each sample file, in order (fully determined by ``SEED``)."""
    composer = Composer(random.Random(SEED))
    files: list[list[str]] = []
    for file_index, n_rows in enumerate(ROWS_PER_FILE):
        texts = []
        for row in range(n_rows):
            planted = PLANTED.get((file_index, row))
            texts.append(planted if planted is not None else composer.document())
        files.append(texts)
    return files


def write_parquet(path: Path, first_id: int, texts: list[str]) -> None:
    """Write ``texts`` with ids from ``first_id`` to ``path``, replacing it atomically."""
    table = pa.table(
        {
            "id": pa.array(range(first_id, first_id + len(texts)), type=pa.int64()),
            "text": pa.array(texts, type=pa.string()),
        }
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(
            table,
            tmp,
            row_group_size=ROW_GROUP_SIZE,
            compression="zstd",
            compression_level=3,
            use_dictionary=False,
            write_statistics=True,
            version="2.6",
        )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """Write the three sample files to ``--out`` (default ``src/prep/sample``); return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    first_id = 0
    for index, texts in enumerate(build_files()):
        path = out / f"part-{index:05d}.parquet"
        write_parquet(path, first_id, texts)
        print(f"wrote {path}: {len(texts):,} rows, {path.stat().st_size:,} bytes")
        first_id += len(texts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
