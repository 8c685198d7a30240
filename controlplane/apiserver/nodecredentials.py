"""Node credentials that die with their node and cannot be minted ahead.

A node's bearer token (auth.TokenAuthority.node_token) names the node and a
credential id; the one valid id per node name is on record in the Secret
`kube-system/node-credential-<node>` (type skiff.dev/node-credential, keys
`id` and, once the node registered, `node-uid`). So:

- a join (bootstrap.py) for a name records a fresh id, and every credential
  minted for that name before stops working: a bootstrap token cannot mint
  the credential of a future node name and keep it;
- once the node's Node exists, its uid is recorded; when that Node is
  deleted (or replaced by another of the same name) the record goes, and
  with it the credential: a deleted node's credential cannot re-create it;
- a credential of a node that never registered may create its Node;
- a node's client certificates (CSR-issued, CN system:node:NAME) hold
  while its record does, and only those signed after the record was
  issued (`issued`, kept in the record): when a deleted node's name joins
  again, the certificates of the node that was deleted stay dead.

`valid(node, id)` answers from memory (the records and the Nodes, kept
current by the broadcaster's events), falling back to a read of the record
for one it has not seen yet (a join answered by another API server). The
writes (recording a uid, removing a record) are made by one worker thread,
never in the caller's. This module stores nothing else and never decides
what a node may do (noderestriction.py does).
"""

from __future__ import annotations

import base64
import logging
import queue
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.kinds import by_kind
from controlplane.apiserver.auth import SYSTEM
from controlplane.apiserver.codec import ROOT
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists, ApiError, Conflict, NotFound
from controlplane.storage.interface import Event, EventType

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
PREFIX = "node-credential-"
SECRET_TYPE = "skiff.dev/node-credential"
_SECRETS = f"{ROOT}secrets/{NAMESPACE}/{PREFIX}"
_NODES = f"{ROOT}nodes/"


# A signer backdates a certificate's notBefore by 5 minutes (csrsigning);
# allow a minute of clock skew on top.
SIGNED_BEFORE_ISSUE = 360.0


@dataclass(frozen=True)
class Record:
    id: str
    node_uid: str = ""
    issued: float = 0.0  # when the record was issued (epoch seconds; 0: unknown)


def signed_since_issue(record: Record, not_before: float) -> bool:
    """Whether a certificate valid from `not_before` was signed after the
    record was issued (a record of unknown age accepts any)."""
    return not record.issued or not_before >= record.issued - SIGNED_BEFORE_ISSUE


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def record_of(secret: dict[str, Any]) -> Record | None:
    if secret.get("type") != SECRET_TYPE:
        return None
    data = secret.get("data") or {}
    try:
        issued = base64.b64decode(data.get("issued") or "").decode()
        return Record(base64.b64decode(data.get("id") or "").decode(),
                      base64.b64decode(data.get("node-uid") or "").decode(),
                      float(issued) if issued else 0.0)  # fmt: skip
    except (ValueError, UnicodeDecodeError):
        return None


def secret_of(node: str, record: Record) -> dict[str, Any]:
    data = {"id": _b64(record.id)}
    if record.node_uid:
        data["node-uid"] = _b64(record.node_uid)
    if record.issued:
        # Milliseconds: the issue time is compared with when a Node was
        # first seen, which may follow a join by a fraction of a second.
        data["issued"] = _b64(f"{record.issued:.3f}")
    return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
            "metadata": {"name": PREFIX + node, "namespace": NAMESPACE}, "data": data}  # fmt: skip


class NodeCredentials:
    """See the module docstring."""

    prefixes = (_NODES, _SECRETS)  # the keys of the events on_event reads

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._nodes: dict[str, str] = {}  # node name -> uid
        self._seen: dict[str, float] = {}  # node name -> when its Node was first seen here
        self._revoked: set[tuple[str, str]] = set()  # (node, id) revoked, record not yet gone
        self._work: queue.Queue[tuple[str, str, str] | None] = queue.Queue(maxsize=10_000)
        self._worker: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    def load(self) -> None:
        """Read every record and Node, and reconcile what changed while down."""
        with self._lock:
            for data, _ in self.registry.list("Node").items:
                meta = jsoncodec.loads(data).get("metadata") or {}
                self._nodes[str(meta.get("name"))] = str(meta.get("uid") or "")
                self._seen.setdefault(str(meta.get("name")), time.time())
            for data, _ in self.registry.list("Secret", NAMESPACE).items:
                self._on_secret(jsoncodec.loads(data))
            names = list(self._records)
        for name in names:
            self._reconcile(name)

    def start(self) -> None:
        self._worker = threading.Thread(target=self._run, name="node-credentials", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        if self._worker is not None:
            self._work.put(None)
            self._worker.join(timeout=5)
            self._worker = None

    # -- issuing and checking ----------------------------------------------------

    def issue(self, node: str) -> str:
        """A fresh credential id for `node`, recorded (every earlier one stops working)."""
        record = Record(secrets.token_hex(16), issued=time.time())
        secret = secret_of(node, record)
        try:
            self.registry.create("Secret", secret, NAMESPACE)
        except AlreadyExists:
            current = self.registry.get_object("Secret", PREFIX + node, NAMESPACE)
            secret["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.registry.update("Secret", secret)
        with self._lock:
            self._records[node] = record
        return record.id

    def valid(self, node: str, credential: str) -> bool:
        """Whether the credential `credential` of `node` still works."""
        with self._lock:
            record = self._records.get(node)
            uid = self._nodes.get(node)
            revoked = (node, credential) in self._revoked
        if revoked:
            return False
        if record is None or record.id != credential:
            record = self._read(node)  # a join this server has not heard of yet
            if record is None or record.id != credential:
                return False
        if not record.node_uid:
            return True  # not registered yet: it may create its Node
        return uid == record.node_uid

    def holds(self, node: str, not_before: float = 0.0) -> bool:
        """Whether a client certificate of `node` valid from `not_before`
        (epoch seconds) still holds besides TLS: its node has a credential
        on record that still works (deleting the Node ends its certificates
        as it ends its token), and the certificate was signed after that
        record was issued."""
        with self._lock:
            record = self._records.get(node)
        record = record or self._read(node)
        if record is None or not self.valid(node, record.id):
            return False
        return signed_since_issue(record, not_before)

    def _read(self, node: str) -> Record | None:
        def load() -> dict[str, Any] | None:
            try:
                return self.registry.read(by_kind("Secret"), NAMESPACE, PREFIX + node)[0]
            except NotFound:
                return None

        found = self.registry.cached(_SECRETS, node, load)
        record = record_of(found) if found is not None else None
        if record is not None:
            with self._lock:
                self._records.setdefault(node, record)
        return record

    # -- events --------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks (writes go to the worker)."""
        key = event.key
        if key.startswith(_NODES):
            name = key[len(_NODES) :]
            gone: float | None = None
            with self._lock:
                if event.type is EventType.DELETE:
                    self._nodes.pop(name, None)
                    gone = self._seen.pop(name, None)
                elif name in self._nodes and event.type is EventType.UPDATE:
                    pass  # a Node's uid never changes: a heartbeat is not decoded
                else:
                    meta = jsoncodec.loads(event.value).get("metadata") or {}
                    self._nodes[name] = str(meta.get("uid") or "")
                    self._seen.setdefault(name, time.time())
            self._reconcile(name, gone)
        elif key.startswith(_SECRETS):
            name = key[len(_SECRETS) :]
            with self._lock:
                if event.type is EventType.DELETE:
                    self._records.pop(name, None)
                else:
                    self._on_secret(jsoncodec.loads(event.value))

    def _on_secret(self, secret: dict[str, Any]) -> None:
        name = str((secret.get("metadata") or {}).get("name") or "")
        record = record_of(secret)
        if name.startswith(PREFIX) and record is not None:
            self._records[name[len(PREFIX) :]] = record

    def _reconcile(self, node: str, gone: float | None = None) -> None:
        """Queue what the record of `node` needs: its Node's uid, or its
        removal. `gone`: its Node was just deleted, first seen at that time."""
        with self._lock:
            record = self._records.get(node)
            uid = self._nodes.get(node)
            if record is None:
                return
            if uid and not record.node_uid:
                action = "bind"
            elif record.node_uid and uid != record.node_uid:
                action = "revoke"
                self._revoked.add((node, record.id))
            elif gone is not None and not uid and record.issued <= gone:
                # Deleted before its uid was bound to the record (a Node
                # created and deleted between two passes of the worker): the
                # record predates that Node, so the node registered with it,
                # and the credential dies with the Node all the same. A record
                # issued after the Node appeared (a new join) is not touched.
                action = "revoke"
                self._revoked.add((node, record.id))
            else:
                return
        try:
            self._work.put_nowait((action, node, record.id))
        except queue.Full:
            log.warning("node credentials: work queue full; %s of %s deferred", action, node)

    # -- the worker ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            action, node, credential = item
            try:
                self._apply(action, node, credential)
            except ApiError as err:
                log.warning("node credentials: %s of node %s failed: %s", action, node, err)

    def _apply(self, action: str, node: str, credential: str) -> None:
        try:
            current = self.registry.get_object("Secret", PREFIX + node, NAMESPACE)
        except NotFound:
            return
        record = record_of(current)
        if record is None or record.id != credential:
            return  # re-issued meanwhile
        if action == "revoke":
            self.registry.delete("Secret", PREFIX + node, NAMESPACE, None, SYSTEM)
            log.info("node credentials: node %s is gone; its credential is revoked", node)
            return
        with self._lock:
            uid = self._nodes.get(node)
        if not uid:
            return
        secret = secret_of(node, Record(record.id, uid, record.issued))
        secret["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            self.registry.update("Secret", secret)
        except Conflict:
            self._reconcile(node)
