"""Peak memory of one huge document: the default engine against ``--engine hf``.

Writes a Parquet file holding a single document of ``--mb`` MB of real prose (the text of
``make_corpus.py``'s sources, concatenated) and runs ``scripts/prepare.py`` on it as a whole
process with the GPT-2 tokenizer, once per engine, reporting the peak of the whole process
tree's PSS (``memory.TreeSampler``) and its ratio to the document's size.

    python benchmarks/huge_document.py [--mb 50] [--engines auto,hf] [--workdir D]

Prints ``{"bench": "huge_document", "mb", "<engine>_peak_mib", "<engine>_x_doc"...}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory import DEFAULT_TOKENIZER, prepare_command, run_measured


def write_document(path: Path, mb: float) -> int:
    """One row of about ``mb`` MB of prose; returns its UTF-8 size."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from text_sources import iter_source_paragraphs

    parts: list[str] = []
    size = 0
    for paras in iter_source_paragraphs(0):
        for p in paras:
            parts.append(p)
            size += len(p.encode("utf-8")) + 2
            if size >= mb * 1e6:
                break
        if size >= mb * 1e6:
            break
    text = "\n\n".join(parts)
    pq.write_table(pa.table({"text": [text]}), path)
    return len(text.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--engines", default="auto,hf")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="huge-doc-"))
    src = work / "src"
    src.mkdir(parents=True, exist_ok=True)
    doc = src / "one.parquet"
    size = write_document(doc, args.mb) if not doc.exists() else None
    size = size or _size(doc)
    row: dict[str, object] = {"bench": "huge_document", "mb": round(size / 1e6, 1)}
    for engine in args.engines.split(","):
        out = work / f"out-{engine}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = prepare_command(src, DEFAULT_TOKENIZER, out, "--quiet", "--engine", engine)
        res = run_measured(cmd, work / f"{engine}.log")
        if res.exit_code != 0:
            raise SystemExit(f"--engine {engine} failed; see {work / f'{engine}.log'}")
        peak = res.tree_peak_pss_kib / 1024
        row[f"{engine}_peak_mib"] = round(peak, 1)
        row[f"{engine}_x_doc"] = round(peak * 2**20 / size, 2)
        row[f"{engine}_seconds"] = round(res.seconds, 2)
        print(f"[huge_document] --engine {engine}: peak {peak:,.0f} MiB, {res.seconds:.1f} s",
              file=sys.stderr)
    print(json.dumps(row))
    return 0


def _size(doc: Path) -> int:
    import pyarrow.parquet as pq

    return len(pq.read_table(doc).column(0)[0].as_py().encode("utf-8"))


if __name__ == "__main__":
    sys.exit(main())
