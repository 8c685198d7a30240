"""The scheduler's node table: nodes and the pods counted on them, kept as arrays.

Every node has a row (a "slot") in NumPy arrays — allocatable and requested
resources, condition flags, label value codes per label key, taints, image
sizes, host ports in use, and counts of pods per label signature and per
affinity term — so a plugin filters or scores all nodes with a few vector
operations instead of a Python loop. `NodeInfo` keeps the same facts per node
as Python objects (the node dict and its pods) for preemption and for
explanations. Pods bound to a node not seen yet wait as orphans.

Which pods are counted, and whether they are bound, assumed or nominated, is
the cache's business (cache.py); this table only counts. Every method takes
the lock; the scheduling cycle holds it while it reads the arrays.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from controlplane.scheduler import resources
from controlplane.scheduler.podinfo import AffinityTerm, PodInfo, image_name

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


class NodeTable:
    """Nodes and the pods counted on them, as arrays; see the module docstring."""

    def __init__(self, capacity: int = 64) -> None:
        self.lock = threading.RLock()
        self.nodes: dict[str, NodeInfo] = {}
        self.slot_names: list[str | None] = []
        self.free_slots: list[int] = []
        self.n = 0  # slots in use are [0, n)
        self.cap = capacity
        self.res_cols: dict[str, int] = {r: i for i, r in enumerate(FIXED_RESOURCES)}
        self.valid: BoolArray = np.zeros(capacity, bool)
        # Per slot, bumped whenever its row changes (a node written, a pod
        # counted or uncounted): who kept results per node sees which are stale.
        self.slot_gen: IntArray = np.zeros(capacity, np.int64)
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
        self.pod_nodes: dict[str, str] = {}  # pod key -> node name, bound or assumed
        self.orphans: dict[str, dict[str, PodInfo]] = {}  # pods on nodes not seen yet
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
        "valid", "slot_gen", "alloc", "req", "free", "nz", "unschedulable", "not_ready", "memory_pressure",
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
        self.slot_gen[slot] += 1
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
                if self._drop_on_node_removal(pinfo.key):
                    continue
                # A bound pod whose node went away keeps waiting for its node.
                self.orphans.setdefault(name, {})[pinfo.key] = pinfo
                self.pod_nodes[pinfo.key] = name
            slot = info.slot
            self.valid[slot] = False
            self.slot_gen[slot] += 1
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

    def _drop_on_node_removal(self, key: str) -> bool:
        """Whether a pod on a removed node is dropped rather than kept as an orphan."""
        return False

    # ---- pods -------------------------------------------------------------

    def _account(self, p: PodInfo, slot: int, sign: int) -> None:
        self.slot_gen[slot] += 1
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
