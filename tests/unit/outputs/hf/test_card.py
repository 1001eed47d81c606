"""The dataset card: front matter as the Hub reads it (parsed back with PyYAML), the license's
precedence, the Hub's size bins, the byte layout from llm.c's header (256 int32 = 1,024
bytes), and a user's template."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from prep.errors import InputError
from prep.outputs.hf.card import (
    CardOptions,
    SourceCard,
    dataset_card,
    hub_repo_of,
    size_category,
    split_front_matter,
)
from prep.state.manifest import Manifest, ManifestFile, ManifestSource, SplitSummary


def _manifest(uri: str = "hf://datasets/acme/corpus", docs: int = 1200) -> Manifest:
    source = ManifestSource("hf", uri, "c" * 40, "text", None, (), 10, 0, None)
    files = (ManifestFile("train-00000.bin", "train", 1000, docs, "a" * 64),)
    return Manifest(
        dataset="tok", tokenizer_id="gpt2", tokenizer_sha256="b" * 64, vocab_size=50257,
        doc_sep_id=50256, sep_position="prepend", format="llmc", dtype="uint16", bin_version=1,
        max_file_tokens=100, corpus_manifest_sha256="d" * 64, source=source,
        recipe={"seed": 1337}, val_bytes_per_token=None,
        totals={"train": SplitSummary(1000, docs, 1)}, files=files)


def _meta(card: str) -> dict[str, object]:
    head, sep, _ = card.removeprefix("---\n").partition("\n---\n")
    assert card.startswith("---\n") and sep
    meta = yaml.safe_load(head)
    assert isinstance(meta, dict)
    return meta


@pytest.mark.parametrize(("n", "bin_"), [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"),
                                         (123_456, "100K<n<1M"), (10**12, "n>1T")])
def test_size_bins_are_the_hubs(n: int, bin_: str) -> None:
    assert size_category(n) == bin_


def test_front_matter_is_the_hubs_and_points_no_viewer_at_binary_files() -> None:
    card = dataset_card(_manifest(), "hf://datasets/acme/tokens", CardOptions("mit"),
                        {"train-00000.bin": 1024 + 2 * 1000},
                        SourceCard({"license": "apache-2.0", "language": ["en"]}))
    assert _meta(card) == {
        "license": "mit", "language": ["en"], "task_categories": ["text-generation"],
        "size_categories": ["1K<n<10K"], "source_datasets": ["acme/corpus"],
        "tags": ["tokenized", "llmc", "prep"], "viewer": False,
    }
    assert "| 0 .. 1023 | header, 1,024 bytes" in card
    assert "| 1024 .. end | the ids: uint16, little-endian, 2 bytes each" in card
    assert "| separator (position) | 50256 (prepend) |" in card
    assert "prep verify hf://datasets/acme/tokens@COMMIT" in card
    assert 'prep.TokenStream("hf://datasets/acme/tokens@COMMIT"' in card


def test_license_from_the_source_card_else_other_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    src = SourceCard({"license": "odc-by"})
    assert _meta(dataset_card(_manifest(), "u", CardOptions(), {}, src))["license"] == "odc-by"
    with caplog.at_level(logging.WARNING):
        meta = _meta(dataset_card(_manifest("data/local"), "u", CardOptions(), {}))
    assert meta["license"] == "other" and "source_datasets" not in meta
    assert "pass --license SPDX-ID" in caplog.text


def test_template_adds_sections_and_front_matter_but_no_configs(tmp_path: Path) -> None:
    tpl = tmp_path / "t.md"
    tpl.write_text("---\nlicense: cc-by-4.0\nconfigs:\n- config_name: x\n---\n"
                   "## Intended use\n\nResearch.\n\n{{generated}}\n\n## Contact\n\nus\n")
    card = dataset_card(_manifest(), "u", CardOptions(template=tpl), {})
    meta = _meta(card)
    assert meta["license"] == "cc-by-4.0" and "configs" not in meta
    body = card.split("\n---\n", 1)[1]
    assert body.index("## Intended use") < body.index("## Tokenizer") < body.index("## Contact")


def test_a_bad_template_says_what_and_where(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"x\.md: its front matter .* is not a YAML mapping"):
        split_front_matter("---\n- a list\n---\nbody", "x.md")
    with pytest.raises(InputError, match=r"--card-template .*missing\.md: cannot read it"):
        dataset_card(_manifest(), "u", CardOptions(template=tmp_path / "missing.md"), {})


def test_hub_repo_of_a_source_uri() -> None:
    assert hub_repo_of("hf://datasets/acme/corpus@main/data/x") == "acme/corpus"
    assert hub_repo_of("s3://bucket/x") is None
