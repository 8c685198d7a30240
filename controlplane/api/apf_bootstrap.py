"""API priority and fairness's bootstrap configuration, as Kubernetes 1.32
ships it (k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap): the mandatory
FlowSchemas and PriorityLevelConfigurations every server has, and the
suggested ones it creates for a new cluster.

`reconcile(kind, stored, wanted, mandatory)` says what the ensurer writes
for one bootstrap object, as Kubernetes' ensurer decides it:
- mandatory objects (exempt, catch-all; the `probes` FlowSchema): the spec
  is put back whenever it differs (for the exempt level, only its
  `exempt` settings may be changed by an admin), annotation
  `apf.kubernetes.io/autoupdate-spec: "true"`;
- suggested objects: the spec is put back only while the annotation says
  "true" (missing: "true" if the object was never changed, generation 1,
  else "false", and the annotation is written so); `"false"` leaves an
  admin's edits alone.

Pure data and functions (no I/O): the API server creates what is missing
at start, the apf-configuration controller reconciles and keeps the
Dangling conditions.
"""

from __future__ import annotations

import copy
from typing import Any

Object = dict[str, Any]

API_VERSION = "flowcontrol.apiserver.k8s.io/v1"
AUTOUPDATE = "apf.kubernetes.io/autoupdate-spec"
FS, PLC = "FlowSchema", "PriorityLevelConfiguration"

_ALL_RESOURCES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                  "namespaces": ["*"], "clusterScope": True}  # fmt: skip
_ALL_NON_RESOURCES = {"verbs": ["*"], "nonResourceURLs": ["*"]}


def _plc(name: str, spec: Object) -> Object:
    return {"apiVersion": API_VERSION, "kind": PLC, "metadata": {"name": name}, "spec": spec}


def _limited(shares: int, lendable: int, queues: int, hand: int, length: int) -> Object:
    return {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "limitResponse": {"type": "Queue", "queuing": {
            "queues": queues, "handSize": hand, "queueLengthLimit": length}}}}  # fmt: skip


def _fs(name: str, level: str, precedence: int, method: str, *rules: Object) -> Object:
    spec: Object = {"priorityLevelConfiguration": {"name": level},
                    "matchingPrecedence": precedence, "rules": list(rules)}  # fmt: skip
    if method:
        spec["distinguisherMethod"] = {"type": method}
    return {"apiVersion": API_VERSION, "kind": FS, "metadata": {"name": name}, "spec": spec}


def _groups(*names: str) -> list[Object]:
    return [{"kind": "Group", "group": {"name": n}} for n in names]


def _users(*names: str) -> list[Object]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def _kube_system_sa(name: str = "*") -> Object:
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": name}}


def _all(subjects: list[Object]) -> Object:
    return {"subjects": subjects, "resourceRules": [dict(_ALL_RESOURCES)],
            "nonResourceRules": [dict(_ALL_NON_RESOURCES)]}  # fmt: skip


def _leases(subjects: list[Object]) -> Object:
    return {"subjects": subjects, "resourceRules": [{
        "verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"], "namespaces": ["*"]}]}  # fmt: skip


MANDATORY_PLCS: list[Object] = [
    _plc("exempt", {"type": "Exempt",
                    "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
    _plc("catch-all", {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5, "lendablePercent": 0,
        "limitResponse": {"type": "Reject"}}}),
]  # fmt: skip

MANDATORY_FLOWSCHEMAS: list[Object] = [
    _fs("exempt", "exempt", 1, "", _all(_groups("system:masters"))),
    _fs("probes", "exempt", 2, "", {
        "subjects": _groups("system:unauthenticated", "system:authenticated"),
        "nonResourceRules": [{"verbs": ["get"],
                              "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    _fs("catch-all", "catch-all", 10000, "ByUser",
        _all(_groups("system:unauthenticated", "system:authenticated"))),
]  # fmt: skip

SUGGESTED_PLCS: list[Object] = [
    _plc("system", _limited(30, 33, 64, 6, 50)),
    _plc("node-high", _limited(40, 25, 64, 6, 50)),
    _plc("leader-election", _limited(10, 0, 16, 4, 50)),
    _plc("workload-high", _limited(40, 50, 128, 6, 50)),
    _plc("workload-low", _limited(100, 90, 128, 6, 50)),
    _plc("global-default", _limited(20, 50, 128, 6, 50)),
]

SUGGESTED_FLOWSCHEMAS: list[Object] = [
    _fs("system-nodes", "system", 500, "ByUser", _all(_groups("system:nodes"))),
    _fs("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups("system:nodes"),
        "resourceRules": [
            {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
             "clusterScope": True},
            {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "namespaces": ["*"]}]}),
    _fs("system-leader-election", "leader-election", 100, "ByUser", _leases(
        [*_users("system:kube-controller-manager", "system:kube-scheduler"),
         _kube_system_sa()])),
    _fs("endpoint-controller", "workload-high", 150, "ByUser", {
        "subjects": [*_users("system:kube-controller-manager"),
                     _kube_system_sa("endpoint-controller")],
        "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": [""],
                           "resources": ["endpoints"], "namespaces": ["*"]}]}),
    _fs("workload-leader-election", "leader-election", 200, "ByUser",
        _leases([_kube_system_sa()])),
    _fs("kube-controller-manager", "workload-high", 800, "ByNamespace",
        _all(_users("system:kube-controller-manager"))),
    _fs("kube-scheduler", "workload-high", 800, "ByNamespace",
        _all(_users("system:kube-scheduler"))),
    _fs("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
        _all([_kube_system_sa()])),
    _fs("service-accounts", "workload-low", 9000, "ByUser",
        _all(_groups("system:serviceaccounts"))),
    _fs("global-default", "global-default", 9900, "ByUser",
        _all(_groups("system:unauthenticated", "system:authenticated"))),
]  # fmt: skip


def bootstrap_objects() -> list[tuple[Object, bool]]:
    """Every bootstrap object (fresh copies, annotated), with whether it is mandatory."""
    out: list[tuple[Object, bool]] = []
    for objs, mandatory in ((MANDATORY_PLCS, True), (SUGGESTED_PLCS, False),
                            (MANDATORY_FLOWSCHEMAS, True), (SUGGESTED_FLOWSCHEMAS, False)):  # fmt: skip
        for obj in objs:
            fresh = copy.deepcopy(obj)
            fresh["metadata"]["annotations"] = {AUTOUPDATE: "true"}
            out.append((fresh, mandatory))
    return out


def wanted(kind: str, name: str) -> tuple[Object, bool] | None:
    """The bootstrap object of that kind and name, and whether it is mandatory."""
    for obj, mandatory in bootstrap_objects():
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj, mandatory
    return None


def reconcile(stored: Object, want: Object, mandatory: bool) -> Object | None:
    """The object to write back over `stored`, or None when it stays (see
    the module docstring)."""
    meta = stored.get("metadata") or {}
    annotations = dict(meta.get("annotations") or {})
    flag = annotations.get(AUTOUPDATE)
    spec = copy.deepcopy(want["spec"])
    if mandatory:
        auto = True
        if stored.get("kind") == PLC and meta.get("name") == "exempt":
            # The exempt level's `exempt` settings are the admin's to change.
            spec["exempt"] = (stored.get("spec") or {}).get("exempt") or spec["exempt"]
    elif flag is None:
        auto = meta.get("generation", 1) == 1
    else:
        auto = flag.lower() == "true"
    want_flag = "true" if auto else "false"
    spec_changes = auto and stored.get("spec") != spec
    if not spec_changes and flag == want_flag:
        return None
    out = copy.deepcopy(stored)
    out["metadata"]["annotations"] = {**annotations, AUTOUPDATE: want_flag}
    if spec_changes:
        out["spec"] = spec
    return out


def dangling(flow_schema: Object, levels: set[str]) -> Object:
    """The FlowSchema's Dangling condition (without its transition time)."""
    level = str(((flow_schema.get("spec") or {}).get("priorityLevelConfiguration") or {})
                .get("name", ""))  # fmt: skip
    if level in levels:
        return {"type": "Dangling", "status": "False", "reason": "Found",
                "message": f"This FlowSchema references the PriorityLevelConfiguration "
                           f"object named \"{level}\" and it exists"}  # fmt: skip
    return {"type": "Dangling", "status": "True", "reason": "NotFound",
            "message": f"This FlowSchema references the PriorityLevelConfiguration object "
                       f"named \"{level}\" but there is no such object"}  # fmt: skip
