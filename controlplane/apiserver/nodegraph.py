"""What each node may read: the node authorizer's graph, fed by the API
server's own watch.

For every pod bound to a node (spec.nodeName) the graph keeps the objects
the pod references: Secrets, ConfigMaps, PersistentVolumeClaims (and the
PersistentVolumes they are bound to) and its ServiceAccount, each counted
once per referencing pod. The node authorizer asks `may_read(node, kind,
namespace, name)` and `pod_on(node, namespace, name)`: dictionary lookups,
never a storage read or a scan per request.

The graph is loaded once from a List, then kept current by the broadcaster's
listener (`on_event`), which the broadcaster calls before it hands the event
to any watcher: when an agent sees its new pod, the graph already knows the
pod's references. The listener reads the pod the broadcaster decodes for its
watchers too, and a pod written again with the same node and references (a
status update) leaves the counts as they are. This module never writes and never decides: it only
answers what is bound where.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from controlplane.api import jsoncodec
from controlplane.api.pod_references import Ref, pod_references
from controlplane.storage.interface import Event, EventType

POD_PREFIX = "/registry/pods/"
_NODE_NAME = b'"nodeName"'  # absent from a pod's JSON: spec.nodeName is unset
PVC_PREFIX = "/registry/persistentvolumeclaims/"


class NodeGraph:
    """See the module docstring. Thread-safe."""

    prefixes = (POD_PREFIX, PVC_PREFIX)  # the keys of the events on_event reads

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, tuple[str, frozenset[Ref]]] = {}  # pod key -> (node, refs)
        self._refs: dict[str, Counter[Ref]] = {}  # node -> referenced objects
        self._claims: dict[tuple[str, str], str] = {}  # (ns, pvc) -> bound PV name

    # -- feeding -----------------------------------------------------------------

    def load(self, pods: Iterable[bytes], claims: Iterable[bytes] = ()) -> None:
        """Fill the graph from a List."""
        for data in claims:
            self._set_claim(jsoncodec.loads(data))
        for data in pods:
            pod = jsoncodec.loads(data)
            meta = pod.get("metadata") or {}
            self._set_pod(f"{POD_PREFIX}{meta.get('namespace')}/{meta.get('name')}", pod)

    def on_event(self, event: Event, new: Callable[[], dict[str, Any]] | None = None) -> None:
        """Broadcaster listener (an object listener: `new` decodes the event's
        value, shared with the watchers; read only): cheap, never blocks."""
        key = event.key
        if key.startswith(POD_PREFIX):
            if event.type is EventType.DELETE or _NODE_NAME not in event.value:
                self._set_pod(key, None)  # gone, or bound to no node: not decoded
            else:
                self._set_pod(key, new() if new is not None else jsoncodec.loads(event.value))
        elif key.startswith(PVC_PREFIX):
            if event.type is EventType.DELETE:
                ns, _, name = key[len(PVC_PREFIX) :].partition("/")
                with self._lock:
                    self._claims.pop((ns, name), None)
            else:
                self._set_claim(new() if new is not None else jsoncodec.loads(event.value))

    def _set_claim(self, pvc: dict[str, Any]) -> None:
        meta = pvc.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        volume = str((pvc.get("spec") or {}).get("volumeName") or "")
        with self._lock:
            if volume:
                self._claims[key] = volume
            else:
                self._claims.pop(key, None)

    def _set_pod(self, key: str, pod: dict[str, Any] | None) -> None:
        node = str(((pod or {}).get("spec") or {}).get("nodeName") or "")
        refs = frozenset(pod_references(pod)) if pod is not None and node else frozenset()
        with self._lock:
            old = self._pods.get(key)
            if old is not None and old[0] == node and old[1] == refs:
                return  # written again where it was, naming the same objects
            self._pods.pop(key, None)
            if old is not None:
                counts = self._refs.get(old[0])
                if counts is not None:
                    counts.subtract(old[1])
                    for ref in old[1]:
                        if counts[ref] <= 0:
                            del counts[ref]
                    if not counts:
                        del self._refs[old[0]]
            if node:
                self._pods[key] = (node, refs)
                self._refs.setdefault(node, Counter()).update(refs)

    # -- questions ---------------------------------------------------------------

    def pod_on(self, node: str, namespace: str, name: str) -> bool:
        """Whether pod namespace/name is bound to `node`."""
        with self._lock:
            found = self._pods.get(f"{POD_PREFIX}{namespace}/{name}")
        return found is not None and found[0] == node

    def may_read(self, node: str, kind: str, namespace: str, name: str) -> bool:
        """Whether a pod bound to `node` references this object (for a
        PersistentVolume: whether such a pod's claim is bound to it)."""
        with self._lock:
            counts = self._refs.get(node)
            if not counts:
                return False
            if kind == "PersistentVolume":
                return any(
                    self._claims.get((ref_ns, claim)) == name
                    for ref_kind, ref_ns, claim in counts
                    if ref_kind == "PersistentVolumeClaim"
                )
            return counts.get((kind, namespace, name), 0) > 0
