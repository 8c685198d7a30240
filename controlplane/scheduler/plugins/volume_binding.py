"""VolumeBinding: a pod's PersistentVolumeClaims decide where it may go, and get bound there.

As kube-scheduler's plugin:
- PreFilter: every claim the pod names must exist and not be going away
  (`persistentvolumeclaim "x" not found`); an unbound claim of a class that
  binds Immediate (or of no class) must be bound by the PV controller
  first (`pod has unbound immediate PersistentVolumeClaims`). Claims bound
  already, and WaitForFirstConsumer claims still to bind, are noted.
- Filter: a node fits when every bound claim's volume may be used there
  (its nodeAffinity) and every claim still to bind finds, on that node, a
  free fitting volume (the smallest) or a provisioner that can make one
  there (`skiff.io/local-path` on a node whose agent runs it).
- Reserve: the chosen node's volumes are assumed for the pod's claims, so
  the next pod cannot take them; Unreserve forgets them.
- PreBind: each chosen volume's claimRef is set, each claim to provision is
  annotated with the selected node, and the binding cycle waits (woken by
  informer events) until the PV controller reports every claim Bound, or
  fails after `bindTimeoutSeconds` so the pod is retried.

The decisions are plain functions (`check_claims`, `node_plan`); the class
around them only keeps state between extension points.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.api import volumes as v
from controlplane.scheduler import names
from controlplane.scheduler.cache import Cache, NodeInfo
from controlplane.scheduler.framework import FilterResult, NodeFilterPlugin, Slots
from controlplane.scheduler.handle import NodeHandle
from controlplane.scheduler.podinfo import PodInfo, node_selector_term
from controlplane.scheduler.types import (
    NODE_ADD,
    NODE_UPDATE,
    SKIP,
    SUCCESS,
    Action,
    ClusterEvent,
    Code,
    CycleState,
    Resource,
    Status,
    error,
    relevant,
    unschedulable,
)
from controlplane.scheduler.volume_state import VolumeLister

NAME = names.VOLUME_BINDING
R_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
R_NODE_CONFLICT = "node(s) had volume node affinity conflict"
R_NO_VOLUME = "node(s) didn't find available persistent volumes to bind"
R_NO_PROVISIONER = "node(s) did not run the skiff.io/local-path provisioner"

Obj = dict[str, Any]


@dataclass
class ClaimCheck:
    """What PreFilter learnt about a pod's claims."""

    bound: list[tuple[Obj, Obj]] = field(default_factory=list)  # (claim, volume)
    to_bind: list[tuple[Obj, Obj | None]] = field(default_factory=list)  # (claim, class)
    # Per claim to bind: the free volumes that fit it anywhere, smallest first
    # (computed once per cycle; Filter only checks their node affinity).
    candidates: dict[str, list[Obj]] = field(default_factory=dict)


@dataclass
class NodePlan:
    """For one node: the volume chosen per claim key, and the claims to provision."""

    volumes: dict[str, Obj] = field(default_factory=dict)
    provision: list[Obj] = field(default_factory=list)


def claim_key(claim: Obj) -> str:
    m = claim.get("metadata") or {}
    return f"{m.get('namespace') or 'default'}/{m.get('name')}"


def check_claims(pod: PodInfo, state: VolumeLister) -> tuple[ClaimCheck | None, Status]:
    """PreFilter's decision: None + SKIP for a pod without claims."""
    names = v.pod_claim_names(pod.pod)
    if not names:
        return None, SKIP
    out = ClaimCheck()
    for name in names:
        claim = state.claim(pod.namespace, name)
        if claim is None:
            return None, unschedulable(
                f'persistentvolumeclaim "{name}" not found', unresolvable=True
            )
        if (claim.get("metadata") or {}).get("deletionTimestamp"):
            return None, unschedulable(
                f'persistentvolumeclaim "{name}" is being deleted', unresolvable=True
            )
        volume_name = v.spec(claim).get("volumeName")
        if volume_name:
            volume = state.volume(str(volume_name))
            if volume is None:
                return None, unschedulable(
                    f'persistentvolume "{volume_name}" not found', unresolvable=True
                )
            if not v.is_bound_claim(claim) and not v.claim_ref_matches(volume, claim):
                return None, unschedulable(R_UNBOUND_IMMEDIATE, unresolvable=True)
            out.bound.append((claim, volume))
            continue
        sc = state.storage_class(v.claim_class(claim))
        if v.binding_mode(sc) != "WaitForFirstConsumer":
            return None, unschedulable(R_UNBOUND_IMMEDIATE, unresolvable=True)
        out.to_bind.append((claim, sc))
        key = claim_key(claim)
        fitting = [pv for pv in state.free_volumes(key) if v.volume_fits(pv, claim) is None]
        fitting.sort(key=lambda pv: (not v.claim_ref_matches(pv, claim), v.volume_capacity(pv)))
        out.candidates[key] = fitting
        refusal = (
            v.local_path_refusal(claim)
            if (sc or {}).get("provisioner") == v.LOCAL_PATH_PROVISIONER
            else None
        )
        if not fitting and refusal is not None:
            return None, unschedulable(
                f'persistentvolumeclaim "{name}": {refusal}', unresolvable=True
            )
    return out, SUCCESS


def volume_node_ok(node: NodeInfo) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a volume's nodeAffinity admits `node`."""

    def ok(pv: Mapping[str, Any]) -> bool:
        terms = (
            ((v.spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
        ) or []
        if not terms:
            return True
        return any(node_selector_term(t).matches(node.labels, node.name) for t in terms)

    return ok


def runs_local_path(node: NodeInfo) -> bool:
    """Whether the node's agent runs the local-path provisioner (it labels its Node so)."""
    return node.labels.get(v.LOCAL_PATH_LABEL) == "true"


def local_path_mask(cache: Cache) -> npt.NDArray[np.bool_]:
    """runs_local_path for every slot at once, recomputed when node labels change."""

    def compute() -> npt.NDArray[np.bool_]:
        code = cache.label_code(v.LOCAL_PATH_LABEL, "true")
        return cache.codes(v.LOCAL_PATH_LABEL) == code if code >= 0 else np.zeros(cache.n, bool)

    mask: npt.NDArray[np.bool_] = cache.node_memo(("VolumeBinding", "local-path"), compute)
    return mask


def hostname_pins(pv: Mapping[str, Any]) -> list[str] | None:
    """The hostnames a volume is pinned to when its nodeAffinity is only
    `kubernetes.io/hostname In [...]` terms; [] for no affinity; None otherwise."""
    affinity = v.spec(pv).get("nodeAffinity")
    if not affinity:
        return []
    names: list[str] = []
    for term in ((affinity.get("required") or {}).get("nodeSelectorTerms")) or []:
        exprs = term.get("matchExpressions") or []
        if term.get("matchFields") or len(exprs) != 1:
            return None
        expr = exprs[0]
        if expr.get("key") != v.HOSTNAME_LABEL or expr.get("operator") != "In":
            return None
        names.extend(str(x) for x in expr.get("values") or [])
    return names or None


def bound_mask(check: ClaimCheck, cache: Cache, slots: Slots) -> npt.NDArray[np.bool_] | None:
    """Which slots every bound volume admits, when all are pinned by hostname (else None)."""
    ok = np.ones(len(slots), bool)
    for _claim, volume in check.bound:
        names = hostname_pins(volume)
        if names is None:
            return None
        if not names:
            continue
        codes = [cache.label_code(v.HOSTNAME_LABEL, n) for n in names]
        ok &= np.isin(cache.codes(v.HOSTNAME_LABEL)[slots], [c for c in codes if c >= 0])
    return ok


def only_local_provisioning(check: ClaimCheck) -> bool:
    """Whether the node decision is only "does it run local-path" (no volume to match)."""
    return not any(check.candidates.values()) and all(
        str((sc or {}).get("provisioner") or "") == v.LOCAL_PATH_PROVISIONER
        for _c, sc in check.to_bind
    )


def node_plan(
    check: ClaimCheck, node: NodeInfo, state: VolumeLister
) -> tuple[NodePlan | None, str]:
    """Filter's decision for one node: a plan, or None and the reason."""
    ok = volume_node_ok(node)
    for _claim, volume in check.bound:
        if not ok(volume):
            return None, R_NODE_CONFLICT
    plan = NodePlan()
    taken: set[str] = set()
    for claim, sc in check.to_bind:
        key = claim_key(claim)
        best = next(
            (
                pv
                for pv in check.candidates.get(key, ())
                if v.meta(pv).get("name") not in taken and ok(pv)
            ),
            None,
        )
        if best is not None:
            plan.volumes[key] = best
            taken.add(str(v.meta(best)["name"]))
            continue
        provisioner = str((sc or {}).get("provisioner") or "")
        if provisioner == v.LOCAL_PATH_PROVISIONER:
            if not runs_local_path(node):
                return None, R_NO_PROVISIONER
            plan.provision.append(claim)
            continue
        if provisioner and provisioner != "kubernetes.io/no-provisioner":
            plan.provision.append(claim)  # an external provisioner may serve it
            continue
        return None, R_NO_VOLUME
    return plan, ""


class VolumeBinding(NodeFilterPlugin):
    name = NAME

    def __init__(self, handle: NodeHandle, bind_timeout: float = 600.0) -> None:
        self.bind_timeout = bind_timeout
        self.state = handle.volumes  # read-only: PreFilter and Filter
        self.binder = handle.volume_binder  # Reserve, Unreserve, PreBind

    def pre_filter(self, state: CycleState, pod: PodInfo, cache: Cache) -> Status:
        check, st = check_claims(pod, self.state)
        if check is not None:
            state.data[NAME] = check
            state.data[NAME + "/plans"] = {}
        return st

    def filter(self, state: CycleState, pod: PodInfo, cache: Cache, slots: Slots) -> FilterResult:
        check: ClaimCheck | None = state.data.get(NAME)
        if check is None:
            return FilterResult.all_pass(len(slots))
        pinned = bound_mask(check, cache, slots)
        if pinned is None or not (not check.to_bind or only_local_provisioning(check)):
            return super().filter(state, pod, cache, slots)
        # The common cases at array speed: bound volumes pinned by hostname, and
        # claims the local-path provisioner will make on whichever node is
        # chosen (every node that runs it gets the same plan).
        reasons = []
        ok = pinned
        if not pinned.all():
            reasons.append((R_NODE_CONFLICT, ~pinned, Code.UNSCHEDULABLE))
        if check.to_bind:
            runs = local_path_mask(cache)[slots]
            no_provisioner = ok & ~runs
            if no_provisioner.any():
                reasons.append((R_NO_PROVISIONER, no_provisioner, Code.UNSCHEDULABLE))
            ok = ok & runs
            state.data[NAME + "/shared"] = NodePlan(provision=[c for c, _ in check.to_bind])
        return FilterResult(ok, reasons)

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        check: ClaimCheck | None = state.data.get(NAME)
        if check is None:
            return SUCCESS
        plan, reason = node_plan(check, node, self.state)
        if plan is None:
            return Status(Code.UNSCHEDULABLE, (reason,))
        state.data[NAME + "/plans"][node.name] = plan
        return SUCCESS

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        """SKIP when the pod has no claim to bind (its bind may then go in a batch)."""
        check: ClaimCheck | None = state.data.get(NAME)
        return relevant(check is not None and check.to_bind)

    def reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        check: ClaimCheck | None = state.data.get(NAME)
        if check is None or not check.to_bind:
            return SUCCESS
        plan: NodePlan | None = state.data[NAME + "/plans"].get(node) or state.data.get(
            NAME + "/shared"
        )
        if plan is None:
            return error(f"no volume plan for node {node}")
        held: list[str] = []
        for key, pv in plan.volumes.items():
            name = str(v.meta(pv)["name"])
            if not self.binder.assume(name, key):
                self.binder.forget(held)
                return unschedulable(f"persistentvolume {name!r} was taken by another pod")
            held.append(name)
        state.data[NAME + "/assumed"] = held
        state.data[NAME + "/plan"] = plan
        self.binder.hold((claim_key(c) for c, _ in check.to_bind), pod.key, node)
        return SUCCESS

    def _done(self, state: CycleState) -> None:
        self.binder.forget(state.data.pop(NAME + "/assumed", []))
        check: ClaimCheck | None = state.data.get(NAME)
        if check is not None:
            self.binder.release(claim_key(c) for c, _ in check.to_bind)

    def unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        self._done(state)

    def pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status:
        check: ClaimCheck | None = state.data.get(NAME)
        plan: NodePlan | None = state.data.get(NAME + "/plan")
        if check is None or plan is None:
            return SUCCESS
        writer = self.binder
        try:
            for claim, _sc in check.to_bind:
                key = claim_key(claim)
                if key in plan.volumes:
                    writer.bind_volume(plan.volumes[key], claim)
            for claim in plan.provision:
                writer.select_node(claim, node)
        except Exception as err:  # no writer, or a conflict: another writer got there first
            self._done(state)
            return error(f"binding volumes: {err}")
        keys = [claim_key(c) for c, _ in check.to_bind]
        left = self.binder.wait_bound(keys, time.monotonic() + self.bind_timeout)
        self._done(state)
        if left:
            return error(f"timed out waiting for claims {', '.join(left)} to be bound")
        return SUCCESS

    def events_to_register(self) -> Sequence[ClusterEvent]:
        return [
            NODE_ADD,
            NODE_UPDATE,
            ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, Action.ALL),
            ClusterEvent(Resource.PERSISTENT_VOLUME, Action.ALL),
            ClusterEvent(Resource.STORAGE_CLASS, Action.ALL),
        ]


def new(args: dict[str, object], handle: NodeHandle) -> VolumeBinding:
    timeout = args.get("bindTimeoutSeconds", 600)
    return VolumeBinding(handle, float(timeout) if isinstance(timeout, int | float) else 600.0)
