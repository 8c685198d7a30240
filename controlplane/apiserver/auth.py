"""Bearer tokens and who may do what.

Tokens are derived from one secret kept in the data directory (HMAC-SHA256),
so nothing but that secret needs storing: the admin token, the cluster join
token, and one token per node (`skiff-node.<base64 node name>.<mac>`), which
an agent obtains with Auth.Join and the join token. Several control-plane
hosts sharing an etcd must share the secret (copy `<data-dir>/pki`).

Authorization: the admin may do everything. A node credential may read
everything, and may write only its own Node, its own Lease in
kube-node-lease, the status of (and the final deletion of) pods bound to it,
the creation of mirror pods (annotation kubernetes.io/config.mirror) bound to
it, Events, and the metadata (annotations, finalizers) of the local-path
PersistentVolumes pinned to it. This module never touches storage or gRPC.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from controlplane.api import volumes
from controlplane.api.kinds import KindInfo
from controlplane.client.errors import Forbidden

NODE_LEASE_NAMESPACE = "kube-node-lease"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

READ_VERBS = frozenset({"get", "list", "watch", "get_scale"})


@dataclass(frozen=True)
class Identity:
    user: str
    admin: bool = False
    node: str | None = None


SYSTEM = Identity("system:apiserver", admin=True)


CACHED = 10_000  # valid tokens remembered (one per node, plus admins)


class TokenAuthority:
    """Issues and checks tokens derived from `secret`."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("token secret too short")
        self._secret = secret
        # Tokens already checked (a few per client): the HMAC once per token,
        # not once per request. Only valid tokens are kept, at most CACHED.
        self._known: dict[str, Identity] = {}

    def _mac(self, purpose: str) -> str:
        return hmac.new(self._secret, purpose.encode(), hashlib.sha256).hexdigest()[:40]

    def admin_token(self) -> str:
        return f"skiff-admin.{self._mac('admin')}"

    def join_token(self) -> str:
        return f"skiff-join.{self._mac('join')}"

    def node_token(self, node: str) -> str:
        encoded = base64.urlsafe_b64encode(node.encode()).decode().rstrip("=")
        return f"skiff-node.{encoded}.{self._mac('node:' + node)}"

    def check_join_token(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.join_token().encode())

    def authenticate(self, token: str) -> Identity | None:
        known = self._known.get(token)
        if known is not None:
            return known
        identity = self._check(token)
        if identity is not None:
            if len(self._known) >= CACHED:
                self._known.clear()
            self._known[token] = identity
        return identity

    def _check(self, token: str) -> Identity | None:
        if token.startswith("skiff-admin."):
            if hmac.compare_digest(token.encode(), self.admin_token().encode()):
                return Identity("admin", admin=True)
            return None
        if token.startswith("skiff-node."):
            parts = token.split(".")
            if len(parts) != 3:
                return None
            try:
                padded = parts[1] + "=" * (-len(parts[1]) % 4)
                node = base64.urlsafe_b64decode(padded).decode()
            except (ValueError, UnicodeDecodeError):
                return None
            if hmac.compare_digest(token.encode(), self.node_token(node).encode()):
                return Identity(f"system:node:{node}", node=node)
        return None


def _node_name(obj: dict[str, Any] | None) -> str:
    if not obj:
        return ""
    return str((obj.get("spec") or {}).get("nodeName") or "")


def _is_mirror_pod_of(obj: dict[str, Any] | None, node: str) -> bool:
    """A mirror pod (the API's copy of a static pod) bound to `node`."""
    annotations = ((obj or {}).get("metadata") or {}).get("annotations") or {}
    return MIRROR_ANNOTATION in annotations and _node_name(obj) == node


def authorize(
    identity: Identity,
    verb: str,
    info: KindInfo,
    namespace: str,
    name: str,
    old: dict[str, Any] | None = None,
    new: dict[str, Any] | None = None,
) -> None:
    """Raise Forbidden unless `identity` may do `verb` on the object."""
    if identity.admin or verb in READ_VERBS:
        return
    node = identity.node
    if node is not None:
        kind = info.kind
        if kind == "Node" and name == node:
            return
        if kind == "Lease" and namespace == NODE_LEASE_NAMESPACE and name == node:
            return
        if kind == "Event":
            return
        if (
            kind == "PersistentVolume"
            and verb in ("update", "patch")
            and (volumes.local_path_node_writable(old, new, node))
        ):
            return
        if kind == "Pod":
            if verb == "create" and _is_mirror_pod_of(new, node):
                return
            bound = _node_name(old) == node
            if verb in ("update_status", "patch_status") and bound:
                return
            if verb == "delete" and bound:
                return
    where = f" in namespace {namespace!r}" if namespace else ""
    raise Forbidden(f"{identity.user} may not {verb} {info.plural} {name!r}{where}")
