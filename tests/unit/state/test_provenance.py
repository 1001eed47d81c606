"""``_PROVENANCE.json`` (docs/format.md): the keys in their order, rates and roundings
computed here, a refresh's report, and the readers that never fail on an unreadable file."""

from __future__ import annotations

import json
import platform
import socket
import sys
from pathlib import Path

import pytest

from prep.state.manifest import PROVENANCE_NAME
from prep.state.provenance import (
    MergeProvenance,
    Provenance,
    RefreshNote,
    host_platform,
    provenance_bytes,
    read_active_seconds,
    read_packages,
    read_provenance_json,
    read_source_mtimes,
    write_provenance,
)

KEYS = ["started_at", "finished_at", "active_seconds", "resumes", "tokens_per_second",
        "text_mb_per_second", "python", "platform", "host", "packages", "argv",
        "source_mtimes_ns", "refresh", "engine", "workers", "cross_check", "documents_by_engine",
        "text_bytes",
        "main_cpu_seconds", "commit_thread_cpu_seconds", "main_threads_cpu_seconds", "copiers"]


def prov(**over: object) -> Provenance:
    base: dict[str, object] = dict(
        started_at=10.0, finished_at=20.0, active_seconds=8.00049, resumes=1, tokens=1_000,
        text_bytes=3_000_000, argv=["prep", "--out", "o"], source_mtimes_ns={"a.parquet": 17},
        packages={"numpy": "2.0"})
    return Provenance(**{**base, **over})  # type: ignore[arg-type]


def test_the_keys_in_order_with_rates_and_roundings() -> None:
    d = prov(main_cpu_seconds=1.23456, main_threads_cpu_seconds={"b": 0.0004, "a": 2.0}).to_json()
    assert list(d) == KEYS
    assert d["active_seconds"] == 8.0
    assert d["tokens_per_second"] == round(1_000 / 8.00049, 1) == 125.0
    assert d["text_mb_per_second"] == round(3.0 / 8.00049, 3) == 0.375
    assert d["main_cpu_seconds"] == 1.235
    assert list(d["main_threads_cpu_seconds"].items()) == [("a", 2.0), ("b", 0.0)]
    assert d["commit_thread_cpu_seconds"] is None
    assert d["python"] == platform.python_version() == sys.version.split()[0]
    assert d["host"] == socket.gethostname()


def test_a_run_of_no_active_time_has_no_rates() -> None:
    d = prov(active_seconds=0.0).to_json()
    assert (d["tokens_per_second"], d["text_mb_per_second"]) == (None, None)


def test_host_platform_is_system_release_machine() -> None:
    u = platform.uname()
    assert host_platform() == f"{u.system}-{u.release}-{u.machine}"


def test_written_as_indented_json_and_read_back_by_each_reader(tmp_path: Path) -> None:
    write_provenance(tmp_path, prov())
    raw = (tmp_path / PROVENANCE_NAME).read_bytes()
    assert raw == (json.dumps(prov().to_json(), indent=2, ensure_ascii=False) + "\n").encode()
    assert raw == provenance_bytes(prov())
    assert read_source_mtimes(tmp_path) == {"a.parquet": 17}
    assert read_packages(tmp_path) == {"numpy": "2.0"}
    assert read_active_seconds(tmp_path) == 8.0


@pytest.mark.parametrize("content", [None, "not json", "[1]", '{"source_mtimes_ns": 3, '
                                     '"packages": [], "active_seconds": "x"}'])
def test_the_readers_give_nothing_for_a_missing_or_unreadable_file(
        tmp_path: Path, content: str | None) -> None:
    if content is not None:
        (tmp_path / PROVENANCE_NAME).write_text(content)
    assert read_source_mtimes(tmp_path) == {}
    assert read_packages(tmp_path) is None
    assert read_active_seconds(tmp_path) is None
    if content is None or content == "not json":
        assert read_provenance_json(tmp_path) is None


def test_a_refresh_note_round_trips_and_reads_old_notes_with_defaults() -> None:
    note = RefreshNote("a" * 64, ("x.parquet: added",), True, None, 2, 100, 3, 5_000)
    assert RefreshNote.from_json(json.loads(json.dumps(note.to_json()))) == note
    assert RefreshNote.from_json(None) is None
    assert RefreshNote.from_json({"previous_corpus_manifest_sha256": None}) == RefreshNote(None, ())


def test_the_report_estimates_the_time_an_incremental_refresh_saved() -> None:
    note = RefreshNote("a" * 64, (), incremental=True, reused_files=3, reused_rows=300)
    r = note.report(rows_visited=400, n_files=5, seconds=10.0)
    assert (r["read_files"], r["read_rows"]) == (2, 100)
    assert r["seconds_saved_estimate"] == 30.0  # 300 rows at 10 s per 100 rows
    assert list(r)[:8] == list(note.to_json())
    full = RefreshNote(None, ("recipe seed: 1 -> 2",), fallback="the recipe changed")
    assert full.report(400, 5, 10.0)["seconds_saved_estimate"] is None
    assert note.report(300, 3, 1.0)["seconds_saved_estimate"] is None  # read nothing


def test_a_merge_provenance_keeps_each_parts_provenance() -> None:
    m = MergeProvenance(merged_at=5.0, merge_seconds=1.23456, argv=None,
                        parts={"p0": {"resumes": 0}, "p1": None}, packages={})
    d = m.to_json()
    assert list(d) == ["merged_at", "merge_seconds", "python", "platform", "host", "packages",
                       "argv", "parts"]
    assert d["merge_seconds"] == 1.235 and d["parts"] == {"p0": {"resumes": 0}, "p1": None}
