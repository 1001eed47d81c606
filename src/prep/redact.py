"""Keep credentials out of everything prep writes: ``_PROVENANCE.json``, logs, messages.

A dataset directory is shared and uploaded; a log ends up in a ticket. ``--token hf_...``
(and ``HF_TOKEN``'s value) must appear in neither, nor the cloud credentials a bucket is
read with. Redaction covers ``--token X``, ``--token=X``, the exact value of every secret
known (the token, and the values of :data:`SECRET_VARIABLES` in the environment) wherever
it appears, and what is shaped like a credential even when its value is not known: a
Hugging Face token (``hf_`` followed by 20 or more letters and digits), an AWS access key
id (``AKIA``/``ASIA`` and 16 more), and the signature, credential and token parameters of
a signed URL (``X-Amz-Signature=...``, ``X-Goog-Credential=...``, ``Signature=...``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping

MASK = "***"
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")
_SIGNED_PARAM = re.compile(
    r"((?:X-Amz-|X-Goog-)(?:Signature|Credential|Security-Token)|Signature|sig)=[^&\s\"']+",
    re.IGNORECASE,
)
_SECRET_FLAGS = ("--token",)
# Environment variables whose values are credentials (the cloud SDKs' own names).
SECRET_VARIABLES = (
    "HF_TOKEN", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN", "GOOGLE_OAUTH_ACCESS_TOKEN",
)


def environment_secrets(env: Mapping[str, str]) -> list[str]:
    """The credential values set in ``env`` (see :data:`SECRET_VARIABLES`)."""
    return [env[name] for name in SECRET_VARIABLES if env.get(name)]


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret, and whatever is shaped like a credential,
    replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    text = _SIGNED_PARAM.sub(lambda m: f"{m.group(1)}={MASK}", text)
    return _AWS_KEY_ID.sub(MASK, _HF_TOKEN.sub(MASK, text))


def redact_argv(argv: Iterable[str], secrets: Iterable[str | None] = ()) -> list[str]:
    """A copy of ``argv`` safe to record: the value of ``--token X`` / ``--token=X`` (and of
    any unambiguous prefix argparse accepts, such as ``--tok``) is masked, as is any
    secret or ``hf_`` token elsewhere."""
    out: list[str] = []
    mask_next = False
    known = list(secrets)
    for arg in argv:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        name, eq, _ = arg.partition("=")
        if len(name) > 4 and any(flag.startswith(name) for flag in _SECRET_FLAGS):
            if eq:
                out.append(f"{name}={MASK}")
            else:
                out.append(arg)
                mask_next = True
            continue
        out.append(redact_text(arg, known))
    return out


class RedactingFilter(logging.Filter):
    """A handler filter that masks secrets in each record's final message."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact_text(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True
