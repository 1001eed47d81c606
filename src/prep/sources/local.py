"""Local sources: a file, a directory (recursive: every Parquet, Arrow and JSON Lines file by
its name, :data:`prep.globs.LISTED`) or a glob."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from prep.buckets.uri import is_bucket_uri, parse_bucket_uri
from prep.errors import InputError, UsageError
from prep.fsio import canonical_path
from prep.globs import fixed_lead, has_glob, listed
from prep.sources.base import SOURCE_FORMS, Source, SourceFile
from prep.sources.parquet import CONVERTERS, not_parquet
from prep.state.identity import Fingerprint, fingerprint_of

# ``--source sample``: the small corpus bundled with the package, chosen by name. The
# manifest records the name, not the install location, so it is the same on every machine.
SAMPLE = "sample"
SAMPLE_CORPUS = Path(__file__).resolve().parent.parent / "sample"


@dataclass
class LocalSource(Source):
    """Files on this machine; an unread file's mtime is the evidence it changed."""

    # Where the files are, not what they are (Parquet, JSON Lines, Arrow alike): the name from
    # when Parquet was the only local kind, kept so that older datasets keep their identity.
    kind: ClassVar[str] = "parquet"

    def modified_since(self, f: SourceFile, recorded_mtime_ns: int | None) -> bool:
        return recorded_mtime_ns != f.mtime_ns

    def total_rows(self, files: list[SourceFile]) -> int | None:
        """Rows in ``files`` from their Parquet footers; None when a file has no footer to
        read (JSON Lines, Arrow: counting them is a read of the whole file)."""
        total = 0
        try:
            for f in files:
                total += pq.ParquetFile(f.local).metadata.num_rows
        except (pa.ArrowException, OSError, ValueError):
            return None
        return total


def local_fingerprint(st: os.stat_result) -> Fingerprint:
    """A local file's version without reading it: mtime, ctime (which no user can set
    back) and inode; the size is recorded beside it."""
    return fingerprint_of(
        {"mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}
    )


def _glob_root(spec: str) -> Path:
    lead = fixed_lead(Path(spec).parts)
    return Path(*lead) if lead else Path(".")


def canonical_source(spec: str, base: Path | None = None) -> str:
    """``--source`` as one spelling per source: ``hf://`` and ``sample`` unchanged; a bucket
    URI without a trailing slash (``s3://B/P/`` is ``s3://B/P``); a local
    file or directory as :func:`~prep.fsio.canonical_path`; a glob with its leading
    directories made canonical. A relative path is taken from ``base`` (default: the current
    directory), once.

    Raises ``InputError`` for a local path that does not exist, or for ``sample`` when a
    local ``sample`` also exists there (refused rather than guessed)."""
    if spec.startswith("hf://"):
        return spec
    if is_bucket_uri(spec):
        return parse_bucket_uri(spec).uri
    here = base if base is not None else Path.cwd()
    if spec == SAMPLE:
        if (here / SAMPLE).exists():
            raise InputError(
                f"--source {SAMPLE} is ambiguous: it names the bundled sample corpus, and "
                f"{here / SAMPLE} exists too. Type ./{SAMPLE} (or its absolute path) for the "
                f"local one, or run from another directory for the bundled one "
                f"({SAMPLE_CORPUS})",
                path=spec,
            )
        return SAMPLE
    path = os.path.join(here, spec)
    root = str(_glob_root(path)) if has_glob(spec) else path  # a glob: what must exist
    if not os.path.exists(root) and spec.startswith("hf:"):  # the tokenizer's form
        raise UsageError(
            f"--source {spec}: a Hub dataset is written hf://datasets/OWNER/NAME"
            f"[@REVISION][/GLOB] (hf:OWNER/NAME is the form for --tokenizer); did you "
            f"mean --source hf://datasets/{spec[3:].lstrip('/')}?",
            path=spec,
        )
    if not os.path.exists(root):
        raise InputError(
            f"--source {spec}: no such file or directory (looked for {os.path.abspath(root)}"
            f" from {here}); give {SOURCE_FORMS}, or `sample` for the bundled sample corpus",
            path=spec,
        )
    if root != path:
        return os.path.join(os.path.realpath(root), os.path.relpath(path, root))
    return canonical_path(path)


def _regular_files(entries: Iterable[Path], given: str) -> list[Path]:
    """The regular files among ``entries``. A directory is passed over (the files in it are
    listed on their own); anything else (a dangling symlink, a device, an entry that cannot
    be examined) is refused: skipping it would silently drop data."""
    files = []
    for q in entries:
        if q.is_file():
            files.append(q)
        elif not q.is_dir():
            raise InputError(
                f"--source {given}: {q} is {_not_a_file(q)}, not a file prep can read; "
                "fix it (restore the file a link points to, or its permissions) or remove it "
                "from the source",
                path=str(q),
            )
    return files


def _not_a_file(q: Path) -> str:
    try:
        os.stat(q)
    except OSError as e:
        if q.is_symlink():
            return f"a dangling symlink (to {os.readlink(q)})"
        return f"unreadable ({e.strerror or e})"
    return "not a regular file"


def resolve_local(spec: str, base: Path | None = None) -> Source:
    """Resolve a local file, directory (recursive: the names ``globs.listed`` takes) or
    glob; a relative
    ``spec`` is taken relative to ``base`` (default: the current directory).

    Raises ``InputError`` when nothing matches, naming what was looked for."""
    given = spec
    if base is not None and not os.path.isabs(spec):
        spec = os.path.join(base, spec)
    if has_glob(spec):
        root = _glob_root(spec)
        matches = [Path(m) for m in glob.glob(spec, recursive=True)]
        paths = _regular_files(matches, given)
        if not paths:
            raise InputError(
                f"--source {given}: the pattern matches no files; check the pattern and the "
                "current directory",
                path=spec,
            )
    else:
        p = Path(spec)
        if p.is_dir():
            root = p
            every = list(p.rglob("*"))
            paths = _regular_files([q for q in every if listed(q.name)], given)
            if not paths:
                others = sorted(q for q in every if q.suffix.lower() in CONVERTERS)
                then = f"and the others like it, then run again with --source {given}"
                hint = f"; {not_parquet(others[0].name, others[0], then)}" if others else ""
                plain = sorted(q.name for q in every if q.suffix.lower() == ".json")[:3]
                if plain and not hint:
                    hint = (f"; a directory listing leaves plain *.json out ({', '.join(plain)}"
                            f"): name JSON Lines files with a glob, --source '{given}/**/*.json'")
                raise InputError(
                    f"--source {given}: the directory holds no Parquet, Arrow or JSON Lines "
                    f"files (searched recursively for *.parquet, *.arrow, *.jsonl, and "
                    f"*.jsonl.gz, *.jsonl.zst and the like){hint}",
                    path=spec,
                )
        elif p.is_file():
            root = p.parent
            paths = [p]
        else:
            raise InputError(
                f"--source {given}: no such file or directory; give {SOURCE_FORMS}",
                path=spec,
            )
    for q in paths:  # a text file named outright (or by a glob): say so before any work
        if q.suffix.lower() in CONVERTERS:
            raise InputError(str(not_parquet(q.name, Path(os.path.abspath(q)))), path=q)
    root_abs = Path(os.path.abspath(root))
    files = []
    for q in paths:
        st = q.stat()
        # abspath, not resolve(): a symlink (the Hugging Face cache links snapshots to
        # blobs) keeps the name it has under the root.
        rel = Path(os.path.abspath(q)).relative_to(root_abs).as_posix()
        files.append(
            SourceFile(
                path=rel, local=Path(os.path.abspath(q)), size=st.st_size,
                mtime_ns=st.st_mtime_ns, fingerprint=local_fingerprint(st),
            )
        )
    files.sort(key=lambda f: f.path)
    return LocalSource(uri=given, root=str(root_abs), files=files)
