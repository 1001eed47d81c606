"""Identities: what a checkpoint and a manifest record about the source and the tokenizer,
so that a resume or a refresh can tell whether they are still the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prep.state import fields

Fingerprint = tuple[tuple[str, Any], ...]  # sorted (name, value) pairs, JSON scalars


@dataclass(frozen=True)
class FileIdentity:
    """One source file: its path under the root, size, SHA-256 once it was read, and its
    ``fingerprint``: what the source's kind can tell about the version without reading it
    (an object's ETag and version id), written only when there is one."""

    path: str
    size: int
    sha256: str | None
    fingerprint: Fingerprint = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "size": self.size, "sha256": self.sha256}
        if self.fingerprint:
            out["fingerprint"] = dict(self.fingerprint)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FileIdentity:
        if "sha256" not in d:
            raise fields.FieldError("sha256", "is missing")
        return cls(
            path=fields.text(d, "path"),
            size=fields.integer(d, "size"),
            sha256=fields.maybe_sha256(d, "sha256"),
            fingerprint=fingerprint_of(
                fields.mapping(d, "fingerprint", fields.as_scalar) if d.get("fingerprint") else {}
            ),
        )


def fingerprint_of(values: dict[str, Any]) -> Fingerprint:
    """A fingerprint from its JSON object (keys sorted: one spelling)."""
    return tuple(sorted(values.items()))


@dataclass(frozen=True)
class SourceIdentity:
    """A resolved source as a checkpoint records it: ``kind`` (data, set by the source's
    module), the URI (canonical), its root, the pinned revision and the files in sorted
    order. ``cwd`` is only read: a checkpoint written before paths were canonical recorded
    the directory its relative paths were typed in (empty otherwise, and not written)."""

    kind: str
    uri: str
    root: str
    cwd: str
    revision: str | None
    files: tuple[FileIdentity, ...]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "uri": self.uri, "root": self.root}
        if self.cwd:
            out["cwd"] = self.cwd
        out["revision"] = self.revision
        out["files"] = [f.to_json() for f in self.files]
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SourceIdentity:
        return cls(
            kind=fields.text(d, "kind"),
            uri=fields.text(d, "uri"),
            root=fields.text(d, "root", default=""),
            cwd=fields.text(d, "cwd", default=""),
            revision=fields.maybe_text(d, "revision"),
            files=fields.each(d, "files", fields.as_object(FileIdentity.from_json)),
        )


@dataclass(frozen=True)
class TokenizerIdentity:
    """What the manifest and checkpoint record about a tokenizer."""

    spec: str
    tokenizer_id: str
    sha256: str
    vocab_size: int
    doc_sep_id: int | None
    revision: str | None = None  # the Hub commit a hf: tokenizer was read at
    doc_sep_from: str | None = None  # the flag or config file the separator came from

    def to_json(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "tokenizer_id": self.tokenizer_id,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "doc_sep_id": self.doc_sep_id,
            "revision": self.revision,
            "doc_sep_from": self.doc_sep_from,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TokenizerIdentity:
        return cls(
            spec=fields.text(d, "spec"),
            tokenizer_id=fields.text(d, "tokenizer_id"),
            sha256=fields.sha256(d, "sha256"),
            vocab_size=fields.integer(d, "vocab_size", minimum=1),
            doc_sep_id=fields.maybe_integer(d, "doc_sep_id"),
            revision=fields.maybe_text(d, "revision"),
            doc_sep_from=fields.maybe_text(d, "doc_sep_from"),
        )


@dataclass(frozen=True)
class TokenizerFingerprint:
    """The part of a tokenizer's identity a refresh compares, known without building it."""

    tokenizer_id: str
    sha256: str
    doc_sep_id: int | None
