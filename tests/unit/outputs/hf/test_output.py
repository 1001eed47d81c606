"""``hf://datasets/OWNER/NAME[@REV][/PATH]`` as an output and as a dataset to read: its parts,
what a path holds (the repository's own files at its root do not count), the refusals, and a
revision without a manifest never read as a dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from hub.fakehub import FakeHub

from prep.errors import IntegrityError, OutputError
from prep.hub.calls import HubOptions
from prep.outputs import ABSENT, DATASET, OTHER, published_at
from prep.outputs.hf.output import HubOutput, HubSettings
from prep.partition import Part

from .conftest import REPO


def test_the_uri_parts_and_where_staging_goes(tmp_path: Path) -> None:
    out = HubOutput.parse("hf://datasets/acme/tokens@v2/runs/gpt2", tmp_path)
    assert (out.repo_id, out.branch, out.path, out.name) == ("acme/tokens", "v2", "runs/gpt2",
                                                             "gpt2")
    assert str(out) == "hf://datasets/acme/tokens@v2/runs/gpt2"
    assert out.staging == tmp_path / "gpt2.incomplete"
    assert out.part_out(Part(1, 3)) == "hf://datasets/acme/tokens@v2/runs/gpt2.parts/1-of-3"
    root = HubOutput.parse("hf://datasets/acme/tokens")
    assert (root.branch, root.path, root.name) == ("main", "", "tokens")
    assert root.staging.parts[-5:] == ("staging", "hf", "acme", "tokens", "tokens.incomplete")


def _out(options: HubOptions, uri: str) -> HubOutput:
    return HubOutput.parse(uri, settings=HubSettings(options=options))


def test_what_a_path_holds(hub: FakeHub, options: HubOptions, repo: str) -> None:
    hub.commit("dataset", REPO, {".gitattributes": b"*\n", "README.md": b"# hi\n",
                                 "old/x.bin": b"\0"})
    assert _out(options, f"hf://datasets/{REPO}/new").state().holds is ABSENT
    seen = _out(options, f"hf://datasets/{REPO}/old").state()
    assert seen.holds is OTHER
    with pytest.raises(OutputError) as e:
        _out(options, f"hf://datasets/{REPO}/old").check_out(seen, resume=False, refresh=False)
    assert "holds 1 files and no _MANIFEST.json" in str(e.value)
    assert "Choose another path (hf://datasets/acme/tokens/NEW) or branch (@NEW)" in str(e.value)
    assert _out(options, f"hf://datasets/{REPO}").state().holds is OTHER  # old/ is there


def test_a_revision_without_a_manifest_is_incomplete(hub: FakeHub, options: HubOptions,
                                                    repo: str) -> None:
    sha = hub.commit("dataset", REPO, {"d/train-00000.bin": b"\0\0"})
    reader = published_at(f"hf://datasets/{REPO}@{sha}/d")
    assert isinstance(reader, HubOutput)
    reader.settings = HubSettings(options=options)
    with pytest.raises(IntegrityError) as e:
        reader.published_manifest()
    assert "is incomplete: no _MANIFEST.json, so it is not read as a dataset" in str(e.value)


def test_a_path_holding_a_manifest_is_refused(hub: FakeHub, options: HubOptions, repo: str
                                              ) -> None:
    hub.commit("dataset", REPO, {"v1/_MANIFEST.json": b"{}", "v1/train-00000.bin": b"\0"})
    out = _out(options, f"hf://datasets/{REPO}/v1")
    seen = out.state()
    assert seen.holds is DATASET
    with pytest.raises(OutputError) as e:
        out.check_out(seen, resume=False, refresh=False)
    assert "already holds a dataset (_MANIFEST.json); prep never overwrites one" in str(e.value)
    assert "hf://datasets/acme/tokens@NEW" in str(e.value)
