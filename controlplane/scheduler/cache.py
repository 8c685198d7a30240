"""The scheduler's cache: nodes, the pods on them, and assumed pods, kept as arrays.

Every node has a row (a "slot") in NumPy arrays — allocatable and requested
resources, condition flags, label value codes per label key, taints, image
sizes, host ports in use, and counts of pods per label signature and per
affinity term — so a plugin filters or scores all nodes with a few vector
operations instead of a Python loop. `NodeInfo` keeps the same facts per node
as Python objects (the node dict and its pods) for preemption and for
explanations.

An *assumed* pod is one the scheduler has placed but whose bind is not
confirmed yet; it is counted on its node at once, so the next pod is scheduled
against it. `finish_binding` starts its expiry clock, `add_pod` of the bound
pod confirms it, and `forget_pod` undoes it when the bind fails.

All methods take the cache lock; the scheduling cycle holds it while it reads
the arrays. The cache never talks to the API server.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import resources
from controlplane.scheduler.podinfo import AffinityTerm, PodInfo, image_name
from controlplane.scheduler.types import Clock, RealClock

Obj = dict[str, Any]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

FIXED_RESOURCES = (resources.CPU, resources.MEMORY, resources.EPHEMERAL_STORAGE, resources.PODS)
CPU_COL, MEM_COL, EPH_COL, PODS_COL = 0, 1, 2, 3
Sig = tuple[str, frozenset[tuple[str, str]]]
TaintKey = tuple[str, str, str]
PortKey = tuple[str, str, int]


@dataclass
class NodeInfo:
    name: str
    slot: int
    node: Obj
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[TaintKey, ...] = ()
    pods: dict[str, PodInfo] = field(default_factory=dict)
    generation: int = 0


@dataclass
class _Assumed:
    info: PodInfo
    node: str
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    """Nodes, pods and assumed pods; see the module docstring."""

    def __init__(
        self, clock: Clock | None = None, assumed_ttl: float = 900.0, capacity: int = 64
    ) -> None:
        self.lock = threading.RLock()
        self.clock = clock or RealClock()
        self.assumed_ttl = assumed_ttl
        self.nodes: dict[str, NodeInfo] = {}
        self.slot_names: list[str | None] = []
        self.free_slots: list[int] = []
        self.n = 0  # slots in use are [0, n)
        self.cap = capacity
        self.res_cols: dict[str, int] = {r: i for i, r in enumerate(FIXED_RESOURCES)}
        self.valid: BoolArray = np.zeros(capacity, bool)
        # 2-D arrays are column-major so that one resource (or label signature,
        # or taint) over all nodes is a contiguous vector.
        nres = len(FIXED_RESOURCES)
        self.alloc: IntArray = np.zeros((capacity, nres), np.int64, order="F")
        self.req: IntArray = np.zeros((capacity, nres), np.int64, order="F")
        self.free: IntArray = np.zeros((capacity, nres), np.int64, order="F")  # alloc - req
        self.nz: IntArray = np.zeros((capacity, 2), np.int64, order="F")  # non-zero cpu, memory
        self.unschedulable: BoolArray = np.zeros(capacity, bool)
        self.not_ready: BoolArray = np.zeros(capacity, bool)
        self.memory_pressure: BoolArray = np.zeros(capacity, bool)
        self.disk_pressure: BoolArray = np.zeros(capacity, bool)
        self.pid_pressure: BoolArray = np.zeros(capacity, bool)
        self.label_codes: dict[str, npt.NDArray[np.int32]] = {}
        self.label_vocab: dict[str, dict[str, int]] = {}
        self.label_values: dict[str, list[str]] = {}
        self.taint_cols: dict[TaintKey, int] = {}
        self.taint_mat: BoolArray = np.zeros((capacity, 0), bool, order="F")
        self.image_cols: dict[str, int] = {}
        self.image_size: IntArray = np.zeros((capacity, 0), np.int64, order="F")
        self.ports: dict[PortKey, npt.NDArray[np.int32]] = {}
        self.sig_cols: dict[Sig, int] = {}
        self.sig_list: list[tuple[str, dict[str, str]]] = []
        self.sigs: npt.NDArray[np.int32] = np.zeros((capacity, 0), np.int32, order="F")
        self.anti_cols: dict[AffinityTerm, int] = {}
        self.anti_list: list[AffinityTerm] = []
        self.anti: npt.NDArray[np.int32] = np.zeros((capacity, 0), np.int32, order="F")
        self.pref_cols: dict[tuple[AffinityTerm, int], int] = {}
        self.pref_list: list[tuple[AffinityTerm, int]] = []
        self.pref: npt.NDArray[np.int32] = np.zeros((capacity, 0), np.int32, order="F")
        self.owner_counts: dict[str, npt.NDArray[np.int32]] = {}
        self.assumed: dict[str, _Assumed] = {}
        self._expiry: deque[tuple[float, str]] = deque()  # TTL is constant: deadlines only grow
        self.pod_nodes: dict[str, str] = {}  # pod key -> node name, bound or assumed
        self.orphans: dict[str, dict[str, PodInfo]] = {}  # pods on nodes not seen yet
        self.nominated: dict[str, tuple[PodInfo, str]] = {}  # pod key -> (pod, node)
        self.ns_usage: dict[str, list[int]] = {}  # namespace -> [cpu, memory] placed (DRF)
        self.generation = 0
        self._match_memo: dict[Any, tuple[int, list[int]]] = {}
        self.selector_keys: set[str] = set()  # label keys some selector has looked at
        self.all_label_keys = False
        self.label_version = 0  # bumps on any node label change
        self.node_set_version = 0  # bumps when a node is added or removed
        self._slots_key: tuple[int, int] = (-1, -1)
        self._slots_cache: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] = (
            np.zeros(0, np.intp),
            np.zeros(0, np.intp),
        )
        self._node_memo: dict[Any, Any] = {}
        self._node_memo_version: tuple[int, int, int] = (-1, -1, -1)

    # ---- array plumbing -------------------------------------------------

    _ROW_ARRAYS = (
        "valid", "alloc", "req", "free", "nz", "unschedulable", "not_ready", "memory_pressure",
        "disk_pressure", "pid_pressure", "taint_mat", "image_size", "sigs", "anti", "pref",
    )  # fmt: skip

    def _grow_rows(self) -> None:
        new = self.cap * 2

        def grown(a: Any, fill: Any = 0) -> Any:
            out = np.full((new, *a.shape[1:]), fill, a.dtype, order="F")
            out[: self.cap] = a
            return out

        for name in self._ROW_ARRAYS:
            setattr(self, name, grown(getattr(self, name)))
        self.label_codes = {k: grown(v, -1) for k, v in self.label_codes.items()}
        self.ports = {k: grown(v) for k, v in self.ports.items()}
        self.owner_counts = {k: grown(v) for k, v in self.owner_counts.items()}
        self.cap = new

    @staticmethod
    def _add_col(a: Any) -> Any:
        out = np.zeros((a.shape[0], a.shape[1] + 1), a.dtype, order="F")
        out[:, : a.shape[1]] = a
        return out

    def res_col(self, name: str) -> int:
        col = self.res_cols.get(name)
        if col is None:
            col = self.res_cols[name] = len(self.res_cols)
            self.alloc = self._add_col(self.alloc)
            self.req = self._add_col(self.req)
            self.free = self._add_col(self.free)
        return col

    def label_code(self, key: str, value: str) -> int:
        """The code of `value` under `key` (-1 if no node has it)."""
        return self.label_vocab.get(key, {}).get(value, -1)

    def codes(self, key: str) -> npt.NDArray[np.int32]:
        """Per slot, the code of the node's value for label `key` (-1: no such label)."""
        arr = self.label_codes.get(key)
        if arr is None:
            arr = self.label_codes[key] = np.full(self.cap, -1, np.int32)
            self.label_vocab[key] = {}
            self.label_values[key] = []
        return arr[: self.n]

    def node_memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value over all slots that depends only on node labels, computed once per label change."""
        version = (self.label_version, self.node_set_version, self.n)
        if self._node_memo_version != version or len(self._node_memo) > 4096:
            self._node_memo.clear()
            self._node_memo_version = version
        value = self._node_memo.get(key)
        if value is None:
            value = self._node_memo[key] = compute()
        return value

    def _set_label(self, slot: int, key: str, val: str | None) -> None:
        self.codes(key)
        self.label_version += 1
        if val is None:
            self.label_codes[key][slot] = -1
            return
        vocab = self.label_vocab[key]
        code = vocab.get(val)
        if code is None:
            code = vocab[val] = len(vocab)
            self.label_values[key].append(val)
        self.label_codes[key][slot] = code

    def _signature(self, p: PodInfo) -> tuple[Sig, dict[str, str]]:
        """The pod's namespace and the labels any selector so far looks at.

        Labels no selector mentions (a StatefulSet pod's unique pod-name, a
        template hash) would give every pod its own column; leaving them out
        keeps one column per group of pods selectors cannot tell apart.
        """
        if self.all_label_keys:
            labels = p.labels
        else:
            keys = self.selector_keys
            labels = {k: v for k, v in p.labels.items() if k in keys}
        return (p.namespace, frozenset(labels.items())), labels

    def _sig_col(self, sig: Sig, labels: dict[str, str]) -> int:
        col = self.sig_cols.get(sig)
        if col is None:
            col = self.sig_cols[sig] = len(self.sig_list)
            self.sig_list.append((sig[0], labels))
            self.sigs = self._add_col(self.sigs)
        return col

    def _watch_label_keys(self, keys: Iterable[str] | None) -> None:
        """Make signatures carry `keys` (None: every label), rebuilding them if that is new."""
        if self.all_label_keys:
            return
        if keys is None:
            self.all_label_keys = True
        else:
            new = set(keys) - self.selector_keys
            if not new:
                return
            self.selector_keys |= new
        self.sig_cols = {}
        self.sig_list = []
        self.sigs = np.zeros((self.cap, 0), np.int32, order="F")
        self._match_memo = {}
        for info in self.nodes.values():
            for p in info.pods.values():
                sig, labels = self._signature(p)
                col = self._sig_col(sig, labels)
                self.sigs[info.slot, col] += 1

    def matching_sig_cols(
        self, key: Any, match: Callable[[str, dict[str, str]], bool]
    ) -> list[int]:
        """Signature columns whose (namespace, labels) satisfy `match`, memoised under `key`."""
        checked, cols = self._match_memo.get(key, (0, []))
        if checked < len(self.sig_list):
            cols = cols + [
                i for i in range(checked, len(self.sig_list)) if match(*self.sig_list[i])
            ]
            self._match_memo[key] = (len(self.sig_list), cols)
        return cols

    def count_matching(
        self,
        key: Any,
        match: Callable[[str, dict[str, str]], bool],
        label_keys: Iterable[str] | None = None,
    ) -> npt.NDArray[np.int64]:
        """Per slot, how many pods (bound or assumed) satisfy `match`.

        `label_keys` are the labels `match` looks at (None: it may look at any).
        """
        self._watch_label_keys(label_keys)
        cols = self.matching_sig_cols(key, match)
        if not cols:
            return np.zeros(self.n, np.int64)
        if len(cols) == 1:
            return self.sigs[: self.n, cols[0]].astype(np.int64)
        out: npt.NDArray[np.int64] = self.sigs[: self.n][:, cols].sum(axis=1, dtype=np.int64)
        return out

    def count_term(self, term: AffinityTerm) -> npt.NDArray[np.int64]:
        return self.count_matching(term, term.matches, term.selector.keys)

    def domain_spread(self, key: str, per_node: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Sum `per_node` over each topology domain of label `key`, back onto its nodes.

        Nodes without the label get 0.
        """
        dom = self.codes(key)
        if self.node_memo(("unique-domains", key), lambda: self._unique_domains(key)):
            # Every node is its own domain (kubernetes.io/hostname): nothing to sum.
            out_unique: npt.NDArray[np.int64] = np.where(dom >= 0, per_node, 0)
            return out_unique
        has = dom >= 0
        if not has.any():
            return np.zeros(self.n, np.int64)
        sums = np.bincount(dom[has], weights=per_node[has], minlength=len(self.label_values[key]))
        out = np.zeros(self.n, np.int64)
        out[has] = sums[dom[has]].astype(np.int64)
        return out

    def _unique_domains(self, key: str) -> bool:
        dom = self.codes(key)
        present = dom[dom >= 0]
        return bool(np.unique(present).size == present.size)

    # ---- nodes ------------------------------------------------------------

    def add_node(self, node: Obj) -> NodeInfo:
        with self.lock:
            name = node["metadata"]["name"]
            info = self.nodes.get(name)
            if info is not None:
                self.update_node(node)
                return info
            if self.free_slots:
                slot = self.free_slots.pop()
            else:
                if self.n == self.cap:
                    self._grow_rows()
                slot = self.n
                self.n += 1
                self.slot_names.append(None)
            self.slot_names[slot] = name
            self.node_set_version += 1
            info = NodeInfo(name, slot, node)
            self.nodes[name] = info
            self.valid[slot] = True
            self._write_node(info, node)
            for pinfo in self.orphans.pop(name, {}).values():
                self._place(pinfo, info)
            self.generation += 1
            return info

    def update_node(self, node: Obj) -> None:
        with self.lock:
            info = self.nodes.get(node["metadata"]["name"])
            if info is None:
                self.add_node(node)
                return
            info.node = node
            self._write_node(info, node)
            self.generation += 1

    def _write_node(self, info: NodeInfo, node: Obj) -> None:
        slot = info.slot
        status = node.get("status") or {}
        spec = node.get("spec") or {}
        alloc = resources.resource_list(status.get("allocatable") or status.get("capacity"))
        self.alloc[slot] = 0
        alloc.setdefault(resources.PODS, 110)  # the kubelet's default maxPods
        for rname, v in alloc.items():
            col = self.res_col(rname)
            self.alloc[slot, col] = v
        self.free[slot] = self.alloc[slot] - self.req[slot]
        labels = {
            str(k): str(v) for k, v in ((node.get("metadata") or {}).get("labels") or {}).items()
        }
        for key in info.labels.keys() - labels.keys():
            self._set_label(slot, key, None)
        for key, val in labels.items():
            self._set_label(slot, key, val)
        info.labels = labels
        self.unschedulable[slot] = bool(spec.get("unschedulable"))
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
        self.not_ready[slot] = "Ready" in conds and conds["Ready"] != "True"
        self.memory_pressure[slot] = conds.get("MemoryPressure") == "True"
        self.disk_pressure[slot] = conds.get("DiskPressure") == "True"
        self.pid_pressure[slot] = conds.get("PIDPressure") == "True"
        taints = tuple(
            (t.get("key", ""), str(t.get("value") or ""), t.get("effect", ""))
            for t in spec.get("taints") or ()
        )
        self.taint_mat[slot] = False
        for t in taints:
            tcol = self.taint_cols.get(t)
            if tcol is None:
                tcol = self.taint_cols[t] = len(self.taint_cols)
                self.taint_mat = self._add_col(self.taint_mat)
            self.taint_mat[slot, tcol] = True
        info.taints = taints
        self.image_size[slot] = 0
        for image in status.get("images") or ():
            for raw in image.get("names") or ():
                name = image_name(raw)
                icol = self.image_cols.get(name)
                if icol is None:
                    icol = self.image_cols[name] = len(self.image_cols)
                    self.image_size = self._add_col(self.image_size)
                self.image_size[slot, icol] = int(image.get("sizeBytes") or 0)
        info.generation += 1

    def remove_node(self, name: str) -> None:
        with self.lock:
            info = self.nodes.pop(name, None)
            if info is None:
                return
            for pinfo in list(info.pods.values()):
                self._unplace(pinfo, info)
                if self.assumed.pop(pinfo.key, None) is not None:
                    continue  # its bind will fail; forgetting it lets the pod be requeued
                # A bound pod whose node went away keeps waiting for its node.
                self.orphans.setdefault(name, {})[pinfo.key] = pinfo
                self.pod_nodes[pinfo.key] = name
            slot = info.slot
            self.valid[slot] = False
            self.node_set_version += 1
            for key in info.labels:
                self.label_codes[key][slot] = -1
            self.label_version += 1
            self.taint_mat[slot] = False
            self.image_size[slot] = 0
            self.alloc[slot] = 0
            self.free[slot] = 0
            self.slot_names[slot] = None
            self.free_slots.append(slot)
            self.generation += 1

    # ---- pods -------------------------------------------------------------

    def _account(self, p: PodInfo, slot: int, sign: int) -> None:
        for rname, v in p.requests.items():
            col = self.res_col(rname)
            self.req[slot, col] += sign * v
            self.free[slot, col] -= sign * v
        self.req[slot, PODS_COL] += sign
        self.free[slot, PODS_COL] -= sign
        usage = self.ns_usage.get(p.namespace)
        if usage is None:
            usage = self.ns_usage[p.namespace] = [0, 0]
        usage[0] += sign * p.requests.get(resources.CPU, 0)
        usage[1] += sign * p.requests.get(resources.MEMORY, 0)
        self.nz[slot, 0] += sign * p.nz_cpu
        self.nz[slot, 1] += sign * p.nz_mem
        for port in p.host_ports:
            arr = self.ports.get(port)
            if arr is None:
                arr = self.ports[port] = np.zeros(self.cap, np.int32)
            arr[slot] += sign
        sig, sig_labels = self._signature(p)
        sig_col = self._sig_col(sig, sig_labels)
        self.sigs[slot, sig_col] += sign
        for term in p.anti_affinity:
            acol = self.anti_cols.get(term)
            if acol is None:
                acol = self.anti_cols[term] = len(self.anti_list)
                self.anti_list.append(term)
                self.anti = self._add_col(self.anti)
            self.anti[slot, acol] += sign
        for w, term in [*p.preferred_affinity, *((-w, t) for w, t in p.preferred_anti_affinity)]:
            pcol = self.pref_cols.get((term, w))
            if pcol is None:
                pcol = self.pref_cols[(term, w)] = len(self.pref_list)
                self.pref_list.append((term, w))
                self.pref = self._add_col(self.pref)
            self.pref[slot, pcol] += sign
        if p.owner:
            oc = self.owner_counts.get(p.owner)
            if oc is None:
                oc = self.owner_counts[p.owner] = np.zeros(self.cap, np.int32)
            oc[slot] += sign

    def _place(self, p: PodInfo, info: NodeInfo) -> None:
        info.pods[p.key] = p
        self._account(p, info.slot, +1)
        self.pod_nodes[p.key] = info.name
        info.generation += 1

    def _unplace(self, p: PodInfo, info: NodeInfo) -> None:
        if info.pods.pop(p.key, None) is None:
            return
        self._account(p, info.slot, -1)
        self.pod_nodes.pop(p.key, None)
        info.generation += 1

    def add_pod(self, p: PodInfo) -> None:
        """A pod bound to p.node_name (from the informer); confirms an assumption."""
        with self.lock:
            self.nominated.pop(p.key, None)
            old_assumed = self.assumed.pop(p.key, None)
            current = self.pod_nodes.get(p.key)
            if current is not None:
                self._remove_from(p.key, current)
            elif old_assumed is not None:
                self._remove_from(p.key, old_assumed.node)
            info = self.nodes.get(p.node_name)
            if info is None:
                self.orphans.setdefault(p.node_name, {})[p.key] = p
                self.pod_nodes[p.key] = p.node_name
            else:
                self._place(p, info)
            self.generation += 1

    def update_pod(self, p: PodInfo) -> None:
        self.add_pod(p)

    def confirm_pod(self, p: PodInfo) -> None:
        """The bound pod an assumption was made for, counted the same way (the
        caller checked): the assumption ends without un-counting and re-counting
        it. Anything else goes through `add_pod`."""
        with self.lock:
            a = self.assumed.get(p.key)
            info = self.nodes.get(p.node_name)
            if a is None or a.node != p.node_name or info is None or p.key not in info.pods:
                self.add_pod(p)
                return
            del self.assumed[p.key]
            self.nominated.pop(p.key, None)
            info.pods[p.key] = p
            info.generation += 1
            self.generation += 1

    def refresh_pod(self, key: str, pod: Obj) -> bool:
        """Swap in a newer object of a bound pod whose counted facts did not
        change (a status write); False when the pod is not placed on a known
        node here (the caller then updates it the long way)."""
        with self.lock:
            node = self.pod_nodes.get(key)
            info = self.nodes.get(node) if node is not None else None
            p = info.pods.get(key) if info is not None else None
            if info is None or p is None or key in self.assumed:
                return False
            if (pod.get("spec") or {}).get("nodeName") != info.name:
                return False
            info.pods[key] = dataclasses.replace(p, pod=pod)
            return True

    def _remove_from(self, key: str, node: str) -> PodInfo | None:
        info = self.nodes.get(node)
        if info is not None and key in info.pods:
            p = info.pods[key]
            self._unplace(p, info)
            return p
        orphan = self.orphans.get(node, {}).pop(key, None)
        self.pod_nodes.pop(key, None)
        return orphan

    def remove_pod(self, key: str) -> PodInfo | None:
        with self.lock:
            self.assumed.pop(key, None)
            self.nominated.pop(key, None)
            node = self.pod_nodes.get(key)
            if node is None:
                return None
            self.generation += 1
            return self._remove_from(key, node)

    def assume_pod(self, p: PodInfo, node: str) -> None:
        with self.lock:
            info = self.nodes[node]
            self.nominated.pop(p.key, None)
            self._place(p, info)
            self.assumed[p.key] = _Assumed(p, node)
            self.generation += 1

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def assumed_info(self, key: str) -> PodInfo | None:
        a = self.assumed.get(key)
        return a.info if a is not None else None

    def finish_binding(self, key: str) -> None:
        with self.lock:
            a = self.assumed.get(key)
            if a is not None:
                a.binding_finished = True
                a.deadline = self.clock.now() + self.assumed_ttl
                self._expiry.append((a.deadline, key))

    def finish_binding_many(self, keys: Iterable[str]) -> None:
        """`finish_binding` of many pods under one acquisition of the lock."""
        with self.lock:
            for key in keys:
                self.finish_binding(key)

    def forget_pod(self, key: str) -> None:
        """Undo an assumption (bind failed or the pod was rejected at Permit)."""
        with self.lock:
            a = self.assumed.pop(key, None)
            if a is not None:
                self._remove_from(key, a.node)
                self.generation += 1

    def cleanup_expired(self) -> list[str]:
        """Forget assumed pods whose bind finished long ago but never showed up."""
        now = self.clock.now()
        expired: list[str] = []
        with self.lock:
            while self._expiry and self._expiry[0][0] <= now:
                deadline, key = self._expiry.popleft()
                a = self.assumed.get(key)
                if a is not None and a.deadline == deadline:
                    self.forget_pod(key)
                    expired.append(key)
            return expired

    # ---- nominated pods (preemptors waiting for their victims to go) ---------

    def add_nominated(self, p: PodInfo, node: str) -> None:
        with self.lock:
            self.nominated[p.key] = (p, node)

    def remove_nominated(self, key: str) -> None:
        with self.lock:
            self.nominated.pop(key, None)

    def nominated_requests(self, p: PodInfo) -> IntArray | None:
        """Per slot, requests of other nominated pods of at least `p`'s priority."""
        if not self.nominated:
            return None
        for q, _ in self.nominated.values():
            for rname in q.requests:
                self.res_col(rname)
        extra = np.zeros((self.n, self.alloc.shape[1]), np.int64)
        any_ = False
        for key, (q, node) in self.nominated.items():
            info = self.nodes.get(node)
            if key == p.key or q.priority < p.priority or info is None or key in info.pods:
                continue
            any_ = True
            for rname, v in q.requests.items():
                extra[info.slot, self.res_col(rname)] += v
            extra[info.slot, PODS_COL] += 1
        return extra if any_ else None

    def rows(self, arr: Any, slots: Any) -> Any:
        """`arr[slots]`, as a cheap view when `slots` is every slot in use."""
        return arr[: self.n] if len(slots) == self.n else arr[slots]

    # ---- views --------------------------------------------------------------

    def node_count(self) -> int:
        return len(self.nodes)

    def valid_slots(self) -> npt.NDArray[np.intp]:
        """The slots of existing nodes, ascending (memoised until a node comes or goes)."""
        return self._slot_index()[0]

    def slot_positions(self) -> npt.NDArray[np.intp]:
        """For each slot, its position in `valid_slots()` (-1 for free slots)."""
        return self._slot_index()[1]

    def _slot_index(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        key = (self.node_set_version, self.n)
        if self._slots_key != key:
            slots = np.flatnonzero(self.valid[: self.n])
            positions = np.full(self.n, -1, np.intp)
            positions[slots] = np.arange(len(slots))
            self._slots_cache = (slots, positions)
            self._slots_key = key
        return self._slots_cache

    def pods_on(self, node: str) -> Iterable[PodInfo]:
        info = self.nodes.get(node)
        return list(info.pods.values()) if info else []

    def node_of(self, key: str) -> str | None:
        return self.pod_nodes.get(key)
