"""Keep credentials out of everything prep writes: ``_PROVENANCE.json``, logs, messages.

A dataset directory is shared and uploaded; a log ends up in a ticket. ``--token hf_...``
(and ``HF_TOKEN``'s value) must appear in neither. Redaction covers ``--token X``,
``--token=X``, the token's exact value wherever it appears, and anything shaped like a
Hugging Face token (``hf_`` followed by 20 or more letters and digits).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

MASK = "***"
_HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{20,}")
_SECRET_FLAGS = ("--token",)


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every known secret and every ``hf_`` token replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, MASK)
    return _HF_TOKEN.sub(MASK, text)


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
