"""Errors every API client raises, whatever its transport.

They are the floor's (machinery.apierrors), named here for the client
library's users: each carries its Kubernetes reason (`err.reason`) and retry
advice (`err.retry_after`), and one table maps them to and from HTTP and
gRPC status, so callers (controllers, scheduler, agent, skiffctl) handle API
failures by exception type or reason, never by status code or message text.
"""

from __future__ import annotations

from machinery.apierrors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    RequestEntityTooLarge,
    Timeout,
    TooManyRequests,
    Unauthenticated,
    Unavailable,
    UnsupportedMediaType,
)

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "MethodNotAllowed",
    "NotAcceptable",
    "NotFound",
    "RequestEntityTooLarge",
    "Timeout",
    "TooManyRequests",
    "Unauthenticated",
    "Unavailable",
    "UnsupportedMediaType",
]
