"""What a validating admission plugin is told about a write, and what it may add to the answer.

`Attributes` are Kubernetes' admission.Attributes in small: the operation
(CREATE or UPDATE), kind, namespace, name, subresource, who asks, the
object as it will be stored and the stored one. The registry builds them
after defaults, validation and the kind's mutating admission, and calls
each plugin of `Registry.validating`; a plugin refuses by raising an API
error and never changes the object.

A plugin may also add `Warning` headers and audit annotations, as
kube-apiserver's warning.AddWarning and audit.AddAuditAnnotation do through
the request's context: `warn()` and `annotate()` record into the `Recorder`
the transport installed for the request (`recording()`); outside a request
(or over a transport that has none) they are dropped. Context variables
carry the recorder to the thread that runs the registry call when the
transport copies its context there (rest/context.py does).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from controlplane.apiserver.auth import Identity

CREATE = "CREATE"
UPDATE = "UPDATE"
DELETE = "DELETE"
CONNECT = "CONNECT"
MAX_WARNINGS = 50


@dataclass(frozen=True)
class Attributes:
    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    kind: str  # the registry's kind key ("Pod", "Deployment", ...)
    namespace: str
    name: str
    subresource: str
    identity: Identity
    obj: dict[str, Any]  # a DELETE's: the stored object; a CONNECT's: its options
    old: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None  # the verb's options (DeleteOptions fields, ...)


class Webhooks(Protocol):
    """The admission webhooks (webhooks/dispatcher.py), as the registry calls them."""

    def mutate(self, a: Attributes) -> dict[str, Any] | None:
        """The object as the mutating webhooks leave it (None: unchanged)."""

    def validate(self, a: Attributes) -> None:
        """Raises the API error that refuses the request."""


@dataclass
class Recorder:
    warnings: list[str] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)


_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "skiff_admission_recorder", default=None
)


def warn(text: str) -> None:
    """A `Warning` for the client (dropped past MAX_WARNINGS, or repeated)."""
    recorder = _current.get()
    if recorder is None or text in recorder.warnings or len(recorder.warnings) >= MAX_WARNINGS:
        return
    recorder.warnings.append(text)


def annotate(key: str, value: str) -> None:
    """An annotation on the request's audit event (the first value of a key stays)."""
    recorder = _current.get()
    if recorder is not None:
        recorder.annotations.setdefault(key, value)


def start() -> Recorder:
    """Install a fresh recorder in the current context (one request's task) and return it."""
    recorder = Recorder()
    _current.set(recorder)
    return recorder


@contextmanager
def recording() -> Iterator[Recorder]:
    """A recorder for the duration of the block (a gRPC call's thread)."""
    recorder = Recorder()
    token = _current.set(recorder)
    try:
        yield recorder
    finally:
        _current.reset(token)
