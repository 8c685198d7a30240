"""Single-use, expiring tokens for CRI streaming requests.

Exec, Attach and PortForward RPCs store their request here and return a URL
carrying the token; the first HTTP request that presents the token consumes
it. Tokens expire after a TTL (one minute by default) on an injected clock.
This module must never do I/O.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from proto.runtime.v1 import api_pb2
from runtime import errors

StreamRequest = api_pb2.ExecRequest | api_pb2.AttachRequest | api_pb2.PortForwardRequest


@dataclass(frozen=True)
class _Entry:
    request: StreamRequest
    expires: float


class RequestCache:
    """token -> request, consumed once, dropped after `ttl` seconds."""

    def __init__(
        self,
        ttl: float = 60.0,
        max_in_flight: int = 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max = max_in_flight
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def insert(self, request: StreamRequest) -> str:
        copy = type(request).FromString(request.SerializeToString())
        with self._lock:
            self._expire()
            if len(self._entries) >= self._max:
                raise errors.ResourceExhausted(
                    f"too many in-flight streaming requests (max {self._max})"
                )
            token = secrets.token_urlsafe(12)
            while token in self._entries:  # pragma: no cover - 96 random bits
                token = secrets.token_urlsafe(12)
            self._entries[token] = _Entry(copy, self._clock() + self._ttl)
            return token

    def consume(self, token: str) -> StreamRequest | None:
        """Remove and return the request for `token`; None if unknown or expired."""
        with self._lock:
            self._expire()
            entry = self._entries.pop(token, None)
        return None if entry is None else entry.request

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._entries)

    def _expire(self) -> None:
        now = self._clock()
        # Insertion order is expiry order: the TTL is the same for every entry.
        while self._entries:
            token, entry = next(iter(self._entries.items()))
            if entry.expires > now:
                break
            del self._entries[token]
