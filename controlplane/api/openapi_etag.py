"""An OpenAPI document as sent, and its ETag as kube-openapi computes it
(kept apart so that the document builders and the HTTP side share it
without importing each other)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Served:
    """A document as sent: its JSON and its ETag (unquoted)."""

    body: bytes
    etag: str


def etag_of(body: bytes) -> str:
    """kube-openapi's ETag of a document: upper-case hex SHA-512 of its bytes."""
    return hashlib.sha512(body).hexdigest().upper()
