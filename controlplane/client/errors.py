"""Errors every API client raises, whatever its transport.

The API server maps each to one gRPC status code and the gRPC client maps
the code back, so callers (controllers, scheduler, agent, skiffctl) handle
API failures by exception type, never by status code.
"""

from __future__ import annotations


class ApiError(Exception):
    """Base of every API failure. `message` is safe to show to a user."""


class NotFound(ApiError):
    """The object (or kind, or namespace) does not exist. gRPC NOT_FOUND."""


class AlreadyExists(ApiError):
    """An object with that name already exists. gRPC ALREADY_EXISTS."""


class Conflict(ApiError):
    """resourceVersion or a precondition did not match. gRPC ABORTED."""


class Invalid(ApiError):
    """The object failed validation; the message names the field path,
    e.g. `spec.replicas: must be >= 0`. gRPC INVALID_ARGUMENT."""


class Gone(ApiError):
    """A watch or list continue token is older than the retained history:
    the client must relist. gRPC OUT_OF_RANGE."""


class Unauthenticated(ApiError):
    """No or bad credentials. gRPC UNAUTHENTICATED."""


class Forbidden(ApiError):
    """The credential may not do this. gRPC PERMISSION_DENIED."""


class TooManyRequests(ApiError):
    """A limit on what one client may hold at once (watches, requests in
    flight) is reached: retry later. gRPC RESOURCE_EXHAUSTED, HTTP 429."""


class Unavailable(ApiError):
    """The API server could not be reached. gRPC UNAVAILABLE."""
