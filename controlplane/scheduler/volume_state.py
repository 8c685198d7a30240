"""The scheduler's view of storage: claims, volumes and classes, and the volumes it assumed.

`VolumeState` is fed by informers (`on_event(kind, type, obj)`, through
events.py) and reaches the volume plugins through the plugin `Handle` as two
narrow views: `VolumeLister` (reads, all that PreFilter/Filter may use) and
`VolumeBinder` (what Reserve/Unreserve/PreBind need to assume, provision
and bind claims). Between Reserve and the end of PreBind a plugin
*assumes* a free volume for a claim, so two pods scheduled one after the
other never pick the same volume. `wait_bound` blocks a binding cycle until
the PV controller has bound every claim of a pod (or its deadline passes),
woken by the informer events rather than polling.

Writes (a volume's claimRef, a claim's selected-node annotation) go through
a `VolumeWriter`: `ApiVolumeWriter` for a running scheduler, and
`InMemoryVolumeWriter`, which completes the binding itself, for tests and the
benchmark.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from controlplane.api import volumes as v
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient

Obj = dict[str, Any]

CLAIM_KIND = "PersistentVolumeClaim"
VOLUME_KIND = "PersistentVolume"
CLASS_KIND = "StorageClass"
KINDS = (CLAIM_KIND, VOLUME_KIND, CLASS_KIND)


class VolumeWriter(Protocol):
    def bind_volume(self, volume: Obj, claim: Obj) -> None:
        """Set the volume's claimRef to the claim (the PV controller finishes the bind)."""
        ...

    def select_node(self, claim: Obj, node: str) -> None:
        """Annotate the claim with the node chosen for provisioning."""
        ...


class VolumeLister(Protocol):
    """Read-only: claims, volumes and classes as the informers last saw them."""

    def claim(self, namespace: str, name: str) -> Obj | None: ...

    def volume(self, name: str) -> Obj | None: ...

    def storage_class(self, name: str) -> Obj | None: ...

    def free_volumes(self, claim_key: str) -> list[Obj]:
        """Volumes no claim holds yet (or only this one), not assumed for another claim."""
        ...

    def in_flight(self, claim_key: str) -> tuple[str, str] | None:
        """(pod key, node) of a pod between Reserve and PreBind's end holding this unbound claim."""
        ...


class VolumeBinder(Protocol):
    """Reserve/Unreserve/PreBind: assume volumes, hold claims in flight, write the binds."""

    def assume(self, volume: str, claim_key: str) -> bool: ...

    def forget(self, volumes: Iterable[str]) -> None: ...

    def hold(self, claim_keys: Iterable[str], pod_key: str, node: str) -> None:
        """Mark unbound claims as taken by `pod_key` on `node` until `release`."""
        ...

    def release(self, claim_keys: Iterable[str]) -> None: ...

    def bind_volume(self, volume: Obj, claim: Obj) -> None:
        """Set the volume's claimRef (raises when no writer is set or the write fails)."""
        ...

    def select_node(self, claim: Obj, node: str) -> None:
        """Annotate the claim for provisioning on `node` (raises like `bind_volume`)."""
        ...

    def wait_bound(
        self, keys: list[str], deadline: float, now: Callable[[], float] = time.monotonic
    ) -> list[str]: ...


def _key(obj: Obj) -> str:
    m = obj.get("metadata") or {}
    ns = m.get("namespace")
    return f"{ns}/{m.get('name')}" if ns else str(m.get("name"))


class VolumeState:
    """See the module docstring. Thread-safe."""

    def __init__(self, writer: VolumeWriter | None = None) -> None:
        self.cond = threading.Condition()
        self.claims: dict[str, Obj] = {}  # ns/name
        self.volumes: dict[str, Obj] = {}
        self.classes: dict[str, Obj] = {}
        self.assumed: dict[str, str] = {}  # volume name -> claim key
        self.unclaimed: set[str] = set()  # volumes without a claimRef uid (may be bound)
        # Unbound claims of pods between Reserve and the end of PreBind: (pod key, node).
        self.flights: dict[str, tuple[str, str]] = {}
        self.writer = writer
        self.generation = 0

    # ---- informer side -----------------------------------------------------

    def on_event(self, kind: str, type_: str, obj: Obj) -> None:
        table = {CLAIM_KIND: self.claims, VOLUME_KIND: self.volumes, CLASS_KIND: self.classes}[kind]
        key = _key(obj)
        with self.cond:
            if type_ == "DELETED":
                table.pop(key, None)
            else:
                table[key] = obj
            if kind == VOLUME_KIND:
                ref = v.spec(obj).get("claimRef") or {}
                if type_ != "DELETED" and not ref.get("uid"):
                    self.unclaimed.add(key)
                else:
                    self.unclaimed.discard(key)
            self.generation += 1
            self.cond.notify_all()

    # ---- reads -------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> Obj | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> Obj | None:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> Obj | None:
        return self.classes.get(name) if name else None

    def free_volumes(self, claim_key: str) -> list[Obj]:
        """Volumes no claim holds yet (or only this one, pre-bound), not assumed for another."""
        with self.cond:
            return [
                self.volumes[n]
                for n in self.unclaimed
                if self.assumed.get(n, claim_key) == claim_key
            ]

    def in_flight(self, claim_key: str) -> tuple[str, str] | None:
        return self.flights.get(claim_key)

    # ---- assumptions ----------------------------------------------------------

    def assume(self, volume: str, claim_key: str) -> bool:
        with self.cond:
            holder = self.assumed.get(volume)
            if holder is not None and holder != claim_key:
                return False
            self.assumed[volume] = claim_key
            return True

    def forget(self, volumes: Iterable[str]) -> None:
        with self.cond:
            for name in volumes:
                self.assumed.pop(name, None)

    def hold(self, claim_keys: Iterable[str], pod_key: str, node: str) -> None:
        with self.cond:
            for key in claim_keys:
                self.flights[key] = (pod_key, node)

    def release(self, claim_keys: Iterable[str]) -> None:
        with self.cond:
            for key in claim_keys:
                self.flights.pop(key, None)

    # ---- binding ---------------------------------------------------------------

    def _writer(self) -> VolumeWriter:
        if self.writer is None:
            raise RuntimeError("the scheduler has no volume writer")
        return self.writer

    def bind_volume(self, volume: Obj, claim: Obj) -> None:
        self._writer().bind_volume(volume, claim)

    def select_node(self, claim: Obj, node: str) -> None:
        self._writer().select_node(claim, node)

    def wait_bound(
        self, keys: list[str], deadline: float, now: Callable[[], float] = time.monotonic
    ) -> list[str]:
        """Wait until every claim in `keys` is Bound; returns the ones still not bound."""
        with self.cond:
            while True:
                left = [k for k in keys if not v.is_bound_claim(self.claims.get(k) or {})]
                remaining = deadline - now()
                if not left or remaining <= 0:
                    return left
                self.cond.wait(min(remaining, 1.0))


class ApiVolumeWriter:
    """VolumeWriter through the control-plane client (update with resourceVersion)."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client

    def bind_volume(self, volume: Obj, claim: Obj) -> None:
        pv = copy.deepcopy(volume)
        pv["spec"]["claimRef"] = v.claim_ref(claim)
        pv["metadata"].setdefault("annotations", {})[v.BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
        self.client.update(VOLUME_KIND, pv)

    def select_node(self, claim: Obj, node: str) -> None:
        m = claim["metadata"]
        self.client.patch(
            CLAIM_KIND,
            m["name"],
            {"metadata": {"annotations": {v.SELECTED_NODE_ANNOTATION: node}}},
            m.get("namespace") or "default",
        )


def watch_storage(
    factory: SharedInformerFactory,
    client: ApiClient,
    state: VolumeState,
    on_storage: Callable[[str, str, Obj], None],
) -> None:
    """A running scheduler's storage: claims, volumes and classes from `factory`'s
    informers to `on_storage(kind, type, obj)`, writes through `client`."""
    state.writer = ApiVolumeWriter(client)
    for kind in KINDS:

        def added(obj: Obj, kind: str = kind) -> None:
            on_storage(kind, "ADDED", obj)

        def modified(old: Obj, new: Obj, kind: str = kind) -> None:
            on_storage(kind, "MODIFIED", new)

        def deleted(obj: Obj, kind: str = kind) -> None:
            on_storage(kind, "DELETED", obj)

        factory.informer_for(kind).add_event_handler(added, modified, deleted)


class InMemoryVolumeWriter:
    """Binds at once inside `state`, playing the PV controller and provisioner (tests, bench)."""

    def __init__(self, state: VolumeState, root: str = "/var/lib/skiff/local-path") -> None:
        self.state = state
        self.root = root
        self.calls: list[tuple[str, str, str]] = []

    def _bound(self, claim: Obj, volume_name: str) -> None:
        c = copy.deepcopy(claim)
        c["spec"]["volumeName"] = volume_name
        c["status"] = {"phase": "Bound"}
        self.state.on_event(CLAIM_KIND, "MODIFIED", c)

    def bind_volume(self, volume: Obj, claim: Obj) -> None:
        self.calls.append(("bind", _key(claim), volume["metadata"]["name"]))
        pv = copy.deepcopy(volume)
        pv["spec"]["claimRef"] = v.claim_ref(claim)
        pv["status"] = {"phase": "Bound"}
        self.state.on_event(VOLUME_KIND, "MODIFIED", pv)
        self._bound(claim, pv["metadata"]["name"])

    def select_node(self, claim: Obj, node: str) -> None:
        self.calls.append(("provision", _key(claim), node))
        name = f"pvc-{claim['metadata'].get('uid') or _key(claim).replace('/', '-')}"
        pv = {
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": v.claim_request(claim)},
                "accessModes": v.access_modes(claim),
                "storageClassName": v.claim_class(claim),
                "local": {"path": v.local_path_for(self.root, name)},
                "nodeAffinity": v.node_affinity_for(node),
                "claimRef": v.claim_ref(claim),
            },
            "status": {"phase": "Bound"},
        }
        self.state.on_event(VOLUME_KIND, "ADDED", pv)
        self._bound(claim, name)
