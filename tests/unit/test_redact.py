"""Credentials kept out of what prep writes (``prep.redact``): the ``--token`` flag in each
spelling argparse accepts, known secret values anywhere, and what is shaped like a Hugging
Face token, an AWS access key id or a signed URL's signature. Every secret below is made up
for the test, with the documented shape."""

from __future__ import annotations

import logging

import pytest

from prep.redact import (
    MASK,
    SECRET_VARIABLES,
    RedactingFilter,
    environment_secrets,
    redact_argv,
    redact_text,
)

HF = "hf_" + "Ab3" * 8  # hf_ and 24 letters and digits
AWS_ID = "AKIA" + "ABCDEFGH12345678"  # AKIA and 16 upper-case letters and digits


def test_an_hf_token_is_masked_wherever_it_appears() -> None:
    assert redact_text(f"401 for {HF} at hub") == "401 for *** at hub"
    assert redact_text(f"token={HF};") == "token=***;"


def test_what_is_too_short_for_an_hf_token_is_kept() -> None:
    short = "hf_" + "a" * 19
    assert redact_text(f"file {short}.parquet") == f"file {short}.parquet"
    assert redact_text("shelf_abcdefghijklmnopqrstuvwxyz") == "shelf_abcdefghijklmnopqrstuvwxyz"


def test_aws_access_key_ids_are_masked_and_look_alikes_kept() -> None:
    assert redact_text(f"key {AWS_ID} denied") == "key *** denied"
    assert redact_text("ASIA" + "Z" * 16) == MASK
    assert redact_text("AKIA" + "A" * 15) == "AKIA" + "A" * 15  # one short
    assert redact_text("XAKIA" + "A" * 16) == "XAKIA" + "A" * 16  # not at a word start


def test_a_signed_url_keeps_its_shape_without_its_signature() -> None:
    url = ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AK%2F2024&X-Amz-Signature=deadbeef"
           "&X-Amz-Security-Token=FwoGZX&x-id=GetObject")
    assert redact_text(url) == ("https://b.s3.amazonaws.com/k?X-Amz-Credential=***"
                                "&X-Amz-Signature=***&X-Amz-Security-Token=***&x-id=GetObject")
    assert redact_text("https://x/y?sig=abc&sv=1") == "https://x/y?sig=***&sv=1"
    assert redact_text("'Signature=zz'") == "'Signature=***'"


def test_a_known_secret_is_masked_whatever_its_shape() -> None:
    assert redact_text("pass is s3cr3t, again s3cr3t", ["s3cr3t", None, ""]) == (
        "pass is ***, again ***")


@pytest.mark.parametrize(("argv", "expected"), [
    (["--token", "anything", "--out", "o"], ["--token", MASK, "--out", "o"]),
    (["--token=anything"], [f"--token={MASK}"]),
    (["--tok", "x"], ["--tok", MASK]),  # argparse takes an unambiguous prefix
    (["--toke=x"], [f"--toke={MASK}"]),
    (["--to", "x"], ["--to", "x"]),  # too short to be only --token's prefix
    (["--tokenizer", "gpt2"], ["--tokenizer", "gpt2"]),  # another flag
    (["--token"], ["--token"]),  # nothing follows
    (["--source", f"hf://datasets/a?{HF}"], ["--source", "hf://datasets/a?***"]),
])
def test_argv_masks_the_token_flag_in_every_spelling(argv: list[str], expected: list[str]
                                                     ) -> None:
    assert redact_argv(argv) == expected


def test_argv_masks_known_secrets_in_other_arguments() -> None:
    assert redact_argv(["--source", "/data/pw-hunter2/x"], ["hunter2"]) == [
        "--source", "/data/pw-***/x"]


def test_environment_secrets_are_the_set_credential_variables() -> None:
    env = {"HF_TOKEN": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_SESSION_TOKEN": "", "HOME": "/h"}
    assert environment_secrets(env) == ["a", "b"]
    assert "HOME" not in SECRET_VARIABLES
    assert environment_secrets({}) == []


def test_the_filter_masks_a_record_s_final_message_and_keeps_the_record() -> None:
    record = logging.LogRecord("prep", logging.INFO, __file__, 1, "fetching %s with %s",
                               ("repo", "hunter2"), None)
    assert RedactingFilter(["hunter2", None]).filter(record) is True
    assert record.getMessage() == "fetching repo with ***"
    clean = logging.LogRecord("prep", logging.INFO, __file__, 1, "rows %d", (5,), None)
    assert RedactingFilter(["hunter2"]).filter(clean) is True
    assert (clean.msg, clean.args) == ("rows %d", (5,))  # untouched when nothing to mask
