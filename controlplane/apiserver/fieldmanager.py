"""Who a write is recorded for in metadata.managedFields: its field manager.

Kubernetes records every create, update and patch in the object's
managedFields under a manager name: the request's `fieldManager`, else the
program name its User-Agent starts with (`kubectl/v1.32.4 (linux/amd64)`
is `kubectl`). skiff's gRPC API has the same rule with its own carriers: the
`field-manager` metadata key, else the component the caller authenticated as
(`system:kube-scheduler` is `kube-scheduler`, a node is `skiff-agent`), else
the User-Agent's program name. The registry records the entry
(controlplane.api.server_side_apply.updated_entries) whatever the transport;
this module only names the manager. It never touches storage.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.apiserver.auth import Identity
from controlplane.client.errors import Invalid

MAX_LENGTH = 128  # kube-apiserver's limit on a fieldManager's length
GRPC_KEY = "field-manager"  # the gRPC metadata key clients name themselves with
AGENT = "skiff-agent"

# Component users -> the manager name Kubernetes' own components write as.
_COMPONENTS = {
    "system:apiserver": "kube-apiserver",
    "system:kube-scheduler": "kube-scheduler",
    "system:kube-controller-manager": "kube-controller-manager",
}


@dataclass(frozen=True)
class FieldManager:
    """How the registry records one write: `name` is the manager; `applied`
    marks a server-side apply, whose patch computed the entries itself."""

    name: str
    applied: bool = False


def checked(name: str, field: str = "fieldManager") -> str:
    """A manager name a client chose, refused when too long or not printable."""
    if len(name) > MAX_LENGTH:
        raise Invalid(f"{field}: must not be longer than {MAX_LENGTH} characters")
    if not name.isprintable():
        raise Invalid(f"{field}: must contain only printable characters")
    return name


def from_user_agent(agent: str) -> str:
    """The program name a User-Agent starts with, as kube-apiserver takes it."""
    return agent.split("/", 1)[0].strip()[:MAX_LENGTH]


def for_identity(identity: Identity) -> str:
    """The manager of a control-plane component or node credential ('' for others)."""
    if identity.node is not None:
        return AGENT
    return _COMPONENTS.get(identity.user, "")


def default(identity: Identity) -> FieldManager:
    """Who an in-process write with no named manager is recorded for."""
    return FieldManager(for_identity(identity) or identity.user or "unknown")


def for_grpc(explicit: str, user_agent: str, identity: Identity) -> FieldManager:
    """A gRPC write's manager: the metadata key, the caller's component, the User-Agent."""
    if explicit:
        return FieldManager(checked(explicit, GRPC_KEY))
    return FieldManager(for_identity(identity) or from_user_agent(user_agent) or "unknown")
