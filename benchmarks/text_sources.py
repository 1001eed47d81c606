"""Real text on this machine, offline: where it is and how to get prose out of it.

Four categories of source files (missing roots are simply empty):

- ``python``: the docstrings and comment blocks of the standard library's ``*.py`` files
  (``sysconfig.get_paths()["stdlib"]``, without its ``site-packages``);
- ``man``: manual pages under ``/usr/share/man`` (gzip), troff markup stripped to prose, at
  most 200 pages per family (file name up to the first ``.``, ``_`` or ``-``) so that one
  package's thousands of generated pages (``gcloud_*``) cannot crowd out the rest;
- ``doc``: text files under ``/usr/share/doc`` (READMEs, changelogs, copyright files, gzip
  or plain; HTML, PostScript, archives and anything not strict UTF-8 are skipped);
- ``misc``: ``/usr/share/common-licenses`` and the ``.md``/``.rst``/``.txt``, ``METADATA``
  and ``LICENSE*`` files of the running interpreter's ``site-packages``.

:func:`iter_source_paragraphs` yields each usable file as a list of paragraphs. Each
category's sorted file list is shuffled with a seeded RNG (so a small corpus samples the
whole category, not its alphabetical head) and the categories are merged in proportion to
their on-disk sizes, so every stretch of the stream (a 10 MB prefix or the whole) has the
same mix. Everything is deterministic for a given set of files and seed.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import random
import re
import sysconfig
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_PARAGRAPH_CHARS = 32_000
MAX_SOURCE_BYTES = 8_000_000
MIN_SOURCE_CHARS = 100
MAN_FAMILY_CAP = 200

_SKIP_DOC_SUFFIXES = {
    ".html",
    ".htm",
    ".xhtml",
    ".ps",
    ".pdf",
    ".tar",
    ".tgz",
    ".zip",
    ".js",
    ".css",
    ".png",
    ".jpg",
    ".gif",
    ".svg",
    ".ico",
    ".json",
    ".xml",
    ".bin",
    ".jar",
    ".class",
    ".so",
    ".py",
    ".pyc",
    ".pl",
    ".sh",
    ".c",
    ".h",
    ".el",
    ".map",
    ".woff",
    ".ttf",
    ".dtd",
    ".xsl",
    ".bz2",
    ".xz",
    ".sql",
    ".csv",
}
_MISC_SUFFIXES = {".md", ".rst", ".txt"}
_MISC_NAMES = {"METADATA", "LICENSE", "LICENCE", "COPYING", "NOTICE", "AUTHORS", "README"}

_PY_PROSE = re.compile(
    r"(?P<q>\"\"\"|''')(?P<doc>.*?)(?P=q)"
    r"|(?P<comment>^[ \t]*#[^\n]*(?:\n[ \t]*#[^\n]*)*)",
    re.DOTALL | re.MULTILINE,
)
_COMMENT_LEAD = re.compile(r"(?m)^[ \t]*#+ ?")
_BLANK_LINES = re.compile(r"\n[ \t]*(?:\n[ \t]*)+")
_LETTERS = re.compile(r"[^\W\d_]{3}")

_TROFF_FONT = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)")
_TROFF_NAMED = re.compile(r"\\\*(?:\[[^\]]*\]|\(..|.)|\\[sS][+-]?\d+|\\[nk](?:\[[^\]]*\]|\(..|.)")
_TROFF_CHARS = {
    "\\(em": "\u2014",
    "\\(en": "\u2013",
    "\\(aq": "'",
    "\\(lq": "\u201c",
    "\\(rq": "\u201d",
    "\\(oq": "\u2018",
    "\\(cq": "\u2019",
    "\\(bu": "\u2022",
    "\\(co": "\u00a9",
    "\\(dq": '"',
    "\\(mu": "\u00d7",
    "\\(>=": "\u2265",
    "\\(<=": "\u2264",
    "\\(rg": "\u00ae",
    "\\(ga": "`",
    "\\(ti": "~",
    "\\(ha": "^",
    "\\(hy": "-",
    "\\(de": "\u00b0",
}
_TROFF_OTHER_CHAR = re.compile(r"\\\(..|\\\[[^\]]*\]")
_TROFF_SIMPLE = {
    "\\-": "-",
    "\\e": "\\",
    "\\&": "",
    "\\ ": " ",
    "\\~": " ",
    "\\0": " ",
    "\\|": "",
    "\\^": "",
    "\\c": "",
    "\\%": "",
    "\\/": "",
    "\\,": "",
    "\\.": ".",
}
_TROFF_TEXT_MACROS = {
    "B",
    "I",
    "SM",
    "SB",
    "BR",
    "BI",
    "IB",
    "IR",
    "RB",
    "RI",
    "SH",
    "SS",
    "OP",
    "Nm",
    "Nd",
    "Sh",
    "Ss",
    "Fl",
    "Ar",
    "Pa",
    "Em",
    "Xr",
}
_TROFF_BREAK_MACROS = {"PP", "LP", "P", "SH", "SS", "sp", "IP", "TP", "HP", "Pp", "Sh", "Ss"}


# --- text extraction -------------------------------------------------------------------


def python_prose(source: str) -> str:
    """Docstrings (any triple-quoted string) and comment blocks of a Python file, in order.

    A regex scan, not a parser: fast, and a rare string containing quotes can shift what
    is taken, which does not matter for a benchmark. Blocks without a word are dropped.
    """
    blocks: list[str] = []
    for match in _PY_PROSE.finditer(source):
        if match.group("doc") is not None:
            block = inspect.cleandoc(match.group("doc"))
        else:
            block = _COMMENT_LEAD.sub("", match.group("comment")).strip()
        if _LETTERS.search(block):
            blocks.append(block)
    return "\n\n".join(blocks)


def _troff_inline(line: str) -> str:
    line = _TROFF_FONT.sub("", line)
    line = _TROFF_NAMED.sub("", line)
    for escape, char in _TROFF_CHARS.items():
        line = line.replace(escape, char)
    line = _TROFF_OTHER_CHAR.sub("", line)
    for escape, text in _TROFF_SIMPLE.items():
        line = line.replace(escape, text)
    return line


def man_prose(troff: str) -> str:
    """Plain text of a man page: text macros keep their arguments, other requests vanish.

    Section and paragraph macros become blank lines; macro definitions (``.de`` to ``..``)
    and comments are dropped. A ``.so`` redirection page yields nothing.
    """
    out: list[str] = []
    in_definition = False
    for raw in troff.splitlines():
        if in_definition:
            in_definition = raw.strip() != ".."
            continue
        if raw.startswith(('.\\"', "'\\\"", '.\\"', '\\"')):
            continue
        if raw.startswith((".", "'")):
            parts = raw[1:].strip().split(None, 1)
            if not parts:
                continue
            macro = parts[0]
            if macro in ("de", "de1", "am", "ig"):
                in_definition = True
                continue
            if macro == "so":
                return ""
            if macro in _TROFF_BREAK_MACROS:
                out.append("")
            if macro == "IP" and len(parts) == 2:
                # .IP "tag" indent: only the tag is text
                tag = parts[1]
                tag = tag[1:].split('"', 1)[0] if tag.startswith('"') else tag.split()[0]
                out.append(_troff_inline(tag))
            elif macro in _TROFF_TEXT_MACROS and len(parts) == 2:
                out.append(_troff_inline(parts[1].replace('"', "")))
            continue
        out.append(_troff_inline(raw))
    return "\n".join(out)


def paragraphs(text: str) -> list[str]:
    """Non-blank paragraphs of ``text`` (split at blank lines), none over 32,000 chars.

    Long paragraphs are cut at line ends; a single longer line is cut at character offsets.
    """
    result: list[str] = []
    for para in _BLANK_LINES.split(text.replace("\r\n", "\n")):
        para = para.rstrip()
        if not para.strip():
            continue
        while len(para) > MAX_PARAGRAPH_CHARS:
            cut = para.rfind("\n", 0, MAX_PARAGRAPH_CHARS)
            if cut <= 0:
                cut = MAX_PARAGRAPH_CHARS
            result.append(para[:cut])
            para = para[cut:].lstrip("\n")
        if para.strip():
            result.append(para)
    return result


# --- sources ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Category:
    name: str
    files: list[Path]
    to_text: Callable[[bytes], str | None]

    def disk_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.files)


def _utf8(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _gunzip_utf8(data: bytes) -> str | None:
    try:
        return _utf8(gzip.decompress(data))
    except (OSError, EOFError, zlib.error):
        return None


def _doc_text(data: bytes) -> str | None:
    return _gunzip_utf8(data) if data[:2] == b"\x1f\x8b" else _utf8(data)


def _man_text(data: bytes) -> str | None:
    text = _gunzip_utf8(data) if data[:2] == b"\x1f\x8b" else _utf8(data)
    return None if text is None else man_prose(text)


def _python_text(data: bytes) -> str | None:
    text = _utf8(data)
    return None if text is None else python_prose(text)


def _regular_files(root: Path, keep: Callable[[Path], bool]) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if keep(p) and p.is_file() and not p.is_symlink())


def _doc_keep(path: Path) -> bool:
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    return not (suffixes and suffixes[-1] in _SKIP_DOC_SUFFIXES)


def _misc_keep(path: Path) -> bool:
    return path.suffix.lower() in _MISC_SUFFIXES or path.name.split(".")[0] in _MISC_NAMES


def _family(path: Path) -> str:
    return re.split(r"[._-]", path.name, maxsplit=1)[0]


def cap_families(files: list[Path], cap: int, seed: int) -> list[Path]:
    """``files`` (sorted) with at most ``cap`` per family (file name up to ``.``, ``_``, ``-``).

    Keeps a seeded sample of each larger family, so one package's thousands of generated
    man pages (``gcloud_*``) cannot crowd out the rest. Returns a sorted list.
    """
    families: dict[str, list[Path]] = {}
    for path in files:
        families.setdefault(_family(path), []).append(path)
    kept: list[Path] = []
    for name, members in families.items():
        if len(members) > cap:
            members = random.Random(f"{seed}:family:{name}").sample(members, cap)
        kept.extend(members)
    return sorted(kept)


def categories(seed: int) -> list[_Category]:
    """The four source categories with their sorted file lists (missing roots are empty)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    py_files = _regular_files(
        stdlib, lambda p: p.suffix == ".py" and "site-packages" not in p.relative_to(stdlib).parts
    )
    man = cap_families(_regular_files(Path("/usr/share/man"), lambda p: True), MAN_FAMILY_CAP, seed)
    misc = _regular_files(Path("/usr/share/common-licenses"), lambda p: True)
    misc += _regular_files(purelib, _misc_keep)
    return [
        _Category("python", py_files, _python_text),
        _Category("man", man, _man_text),
        _Category("doc", _regular_files(Path("/usr/share/doc"), _doc_keep), _doc_text),
        _Category("misc", misc, _doc_text),
    ]


def iter_source_paragraphs(seed: int) -> Iterator[list[str]]:
    """Each usable source file's paragraphs, in a stationary mix of the categories.

    Each category's files are shuffled; the next file comes from the category that has
    read the smallest fraction of its on-disk bytes, so every category is spread evenly
    over the whole stream and any stretch of it has the same mix (a benchmark comparing a
    small and a large corpus then compares like with like). Deterministic for a given set
    of files and ``seed``. Skipped: files whose bytes were seen before, files over 8 MB,
    unreadable or non-UTF-8 files, and files with under 100 characters of paragraphs.
    """
    cats = categories(seed)
    queues: list[list[Path]] = []
    for cat in cats:
        files = list(cat.files)
        random.Random(f"{seed}:files:{cat.name}").shuffle(files)
        files.reverse()  # pop() from the end takes the shuffled order front to back
        queues.append(files)
    totals = [max(cat.disk_bytes(), 1) for cat in cats]
    consumed = [0] * len(cats)
    seen: set[bytes] = set()
    while True:
        live = [i for i, queue in enumerate(queues) if queue]
        if not live:
            return
        i = min(live, key=lambda k: (consumed[k] / totals[k], k))
        path = queues[i].pop()
        try:
            data = path.read_bytes()
        except OSError:
            continue
        consumed[i] += len(data)
        digest = hashlib.blake2b(data, digest_size=16).digest()
        if digest in seen or len(data) > MAX_SOURCE_BYTES:
            continue
        seen.add(digest)
        text = cats[i].to_text(data)
        paras = paragraphs(text) if text else []
        chars = sum(len(p) for p in paras)
        if chars < MIN_SOURCE_CHARS:
            continue
        yield paras
