"""The runtime's domain errors.

Handlers raise these; `runtime.cri.errors` is the one place that turns them
into gRPC status codes. Messages name the field or object and the problem,
because they reach crictl and the kubelet verbatim.
"""

from __future__ import annotations


class RuntimeError_(Exception):
    """Base of every error the runtime reports to a CRI client."""


class NotFound(RuntimeError_):
    """An id, name or reference that does not exist (gRPC NOT_FOUND)."""


class AlreadyExists(RuntimeError_):
    """A name that is already held, e.g. sandbox name+attempt (ALREADY_EXISTS)."""


class InvalidArgument(RuntimeError_):
    """A request field that is missing or malformed (INVALID_ARGUMENT)."""


class FailedPrecondition(RuntimeError_):
    """The object is in the wrong state for the call (FAILED_PRECONDITION)."""


class Unavailable(RuntimeError_):
    """A dependency (registry, CNI plugin) could not be reached (UNAVAILABLE)."""


class DeadlineExceeded(RuntimeError_):
    """An operation ran past its allowed time (DEADLINE_EXCEEDED)."""


class Unimplemented(RuntimeError_):
    """An RPC or option skiff does not support (UNIMPLEMENTED)."""


class ResourceExhausted(RuntimeError_):
    """Out of a bounded resource: addresses, disk, ... (RESOURCE_EXHAUSTED)."""


class Unknown(RuntimeError_):
    """A failure inside the container itself, e.g. exec of a missing binary
    (UNKNOWN, as containerd reports OCI runtime errors)."""
