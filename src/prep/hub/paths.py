"""Hub URIs and paths, pure functions: parse ``hf://datasets/OWNER/NAME[@REV][/PATH]`` and
``hf:OWNER/NAME[@REV]``, and select a repository's files by path or glob.

Globs follow ``glob.glob(recursive=True)`` and ``HfFileSystem``: ``*``, ``?`` and ``[...]``
stay within one path segment; a whole ``**`` segment matches zero or more directories.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

from prep.errors import UsageError
from prep.globs import fixed_lead, has_glob, listed

DATASET_FORM = "hf://datasets/OWNER/NAME[@REVISION][/GLOB]"
TOKENIZER_FORM = "hf:OWNER/NAME[@REVISION]"
_REPO_PART = re.compile(r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?")


@dataclass(frozen=True)
class HubRef:
    """A parsed ``hf://`` URI or ``hf:`` spec: repository, revision as written (``None``:
    the default branch) and the path or glob inside the repository (``""``: all of it)."""

    repo_id: str
    revision: str | None
    path: str = ""


# -- parsing ----------------------------------------------------------------------------------


def _split_repo(text: str, given: str, form: str) -> tuple[str, str | None, str]:
    parts = text.split("/", 2)
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise UsageError(f"{given}: expected {form}")
    name, _, rev = parts[1].partition("@")
    repo_id = f"{parts[0]}/{name}"
    if not all(
        _REPO_PART.fullmatch(p) and "--" not in p and ".." not in p for p in (parts[0], name)
    ):
        raise UsageError(
            f"{given}: {repo_id!r} is not a repository id (letters, digits, -, _ and . "
            f"between letters or digits, up to 96 each); expected {form}"
        )
    if "@" in parts[1] and not rev:
        raise UsageError(f"{given}: empty revision after @; expected {form}")
    rest = parts[2] if len(parts) == 3 else ""
    return repo_id, (unquote(rev) if rev else None), rest


def parse_dataset_uri(uri: str, flag: str = "--source") -> HubRef:
    """Parse ``hf://datasets/OWNER/NAME[@REVISION][/PATH]``; raises ``UsageError`` naming
    ``flag``."""
    prefix = "hf://datasets/"
    if not uri.startswith(prefix):
        raise UsageError(
            f"{flag} {uri}: only dataset repositories are used on the Hub; expected "
            f"{DATASET_FORM} (a revision with / is URL-encoded: @refs%2Fconvert%2Fparquet)"
        )
    repo_id, rev, rest = _split_repo(uri[len(prefix) :], f"{flag} {uri}", DATASET_FORM)
    path = rest.strip("/")
    if any(seg in (".", "..") for seg in path.split("/")):
        raise UsageError(f"{flag} {uri}: the path may not hold . or .. segments")
    return HubRef(repo_id, rev, path)


def dataset_uri(ref: HubRef) -> str:
    """The one spelling of a dataset URI without its revision: ``hf://datasets/OWNER/NAME``
    and the path inside, if any, without slashes at either end."""
    root = f"hf://datasets/{ref.repo_id}"
    return f"{root}/{ref.path}" if ref.path else root


def parse_tokenizer_spec(spec: str) -> HubRef:
    """Parse ``hf:OWNER/NAME[@REVISION]``; raises ``UsageError``."""
    given = f"--tokenizer {spec}"
    if not spec.startswith("hf:"):
        raise UsageError(f"{given}: expected {TOKENIZER_FORM}")
    if spec.startswith("hf://"):
        repo = spec[5:].removeprefix("models/")
        raise UsageError(
            f"{given}: a Hub tokenizer is written {TOKENIZER_FORM} (hf://datasets/... is the "
            f"form for --source); did you mean --tokenizer hf:{repo}?"
        )
    repo_id, rev, rest = _split_repo(spec[3:], given, TOKENIZER_FORM)
    if rest:
        raise UsageError(f"{given}: no path after the repository; expected {TOKENIZER_FORM}")
    return HubRef(repo_id, rev)


# -- selecting files --------------------------------------------------------------------------


def _segment_regex(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (j := seg.find("]", i + 2)) > 0:
            body = seg[i + 1 : j]
            neg = body.startswith("!")
            inner = body[neg:].replace("\\", "\\\\")
            out.append("[" + ("^" if neg else "\\" if inner.startswith("^") else "") + inner + "]")
            i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over repository paths as ``glob.glob(recursive=True)`` and ``HfFileSystem``
    read it: ``*``, ``?`` and ``[...]`` stay inside one path segment; a ``**`` segment
    matches zero or more directories (``**/*.parquet`` also matches ``a.parquet``), and a
    final ``**`` everything below."""
    segs = pattern.split("/")
    out = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(seg) + ("" if last else "/"))
    return re.compile("".join(out))


def listing_root(path: str) -> str:
    """The directory to list for ``path``: the glob's leading directories, a file's
    directory (a source file's name, ``globs.listed``), else the directory itself."""
    if has_glob(path):
        return "/".join(fixed_lead(path.split("/")[:-1]))
    return posixpath.dirname(path) if listed(path) else path


def select_paths(paths: list[str], path: str) -> list[str]:
    """The files a URI's ``path`` selects, sorted: no path, every source file
    (``globs.listed``); a glob, its matches (any name); a file, itself; a directory, every
    source file below it."""
    if not path:
        chosen = [p for p in paths if listed(p)]
    elif has_glob(path):
        rx = glob_regex(path)
        chosen = [p for p in paths if rx.fullmatch(p)]
    else:
        chosen = [
            p for p in paths if p == path or (p.startswith(path + "/") and listed(p))
        ]
    return sorted(chosen)
