"""Image-specific domain errors, each a subclass of a `runtime.errors` class so
the one table in `runtime.cri.errors` maps them without knowing about images."""

from __future__ import annotations

from runtime.errors import FailedPrecondition, NotFound


class Unauthorized(NotFound):
    """The registry refused our credentials (or wants some we do not have).

    A NotFound because registries answer 401 for repositories that do not
    exist as often as for ones we may not read (Docker words it the same way)."""


class BadContent(FailedPrecondition):
    """Content that fails verification: a digest or size mismatch, a truncated
    or undecodable layer, a tar entry escaping the layer directory."""


class UnsafeEntry(BadContent):
    """A tar entry that would write outside the layer directory."""
