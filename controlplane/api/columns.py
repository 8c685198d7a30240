"""The columns kubectl shows for each kind, computed from an object: one home
for skiffctl's tables (controlplane/cli/printers.py) and the API server's
meta.k8s.io Table responses (controlplane/apiserver/tables.py).

Each kind has a row function returning kubectl's columns for it (pods: NAME
READY STATUS RESTARTS AGE, wide adds IP NODE NOMINATED NODE READINESS GATES;
deployments: NAME READY UP-TO-DATE AVAILABLE AGE; nodes: NAME STATUS ROLES
AGE VERSION; ...); kinds without one get NAME AGE. Ages follow kubectl's
`HumanDuration`. Pure functions of the object and the current time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controlplane.api import kinds, volumes
from controlplane.api.display import (
    NONE,
    age,
    human_duration,
    labels_string,
    meta,
    name,
    selector_string,
    since,
    spec,
    status,
)
from controlplane.api.kinds.definition import Column, Printer, columns
from controlplane.api.rfc3339 import parse_time

Object = dict[str, Any]

Row = Callable[[Object, float, bool], list[str]]


def _containers(obj: Object) -> list[dict[str, Any]]:
    return list(spec(obj).get("containers") or [])


def pod_status_reason(pod: Object) -> str:
    """The STATUS column kubectl computes: phase, reason, waiting/terminated reasons, Terminating."""
    st = status(pod)
    reason = str(st.get("reason") or st.get("phase") or "Pending")
    init_statuses = st.get("initContainerStatuses") or []
    init_total = len(spec(pod).get("initContainers") or [])
    initializing = False
    for i, cs in enumerate(init_statuses):
        state = cs.get("state") or {}
        term = state.get("terminated")
        if term and term.get("exitCode") == 0:
            continue
        initializing = True
        if term:
            reason = f"Init:{term.get('reason') or 'Error'}"
        elif (state.get("waiting") or {}).get("reason") not in (None, "", "PodInitializing"):
            reason = f"Init:{state['waiting']['reason']}"
        else:
            reason = f"Init:{i}/{init_total}"
        break
    if not initializing:
        has_running = False
        for cs in reversed(st.get("containerStatuses") or []):
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            term = state.get("terminated") or {}
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term.get("reason"):
                reason = str(term["reason"])
            elif term:
                sig = term.get("signal")
                reason = f"Signal:{sig}" if sig else f"ExitCode:{term.get('exitCode', 0)}"
            elif state.get("running") and cs.get("ready"):
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running"
    if meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if st.get("reason") == "NodeLost" else "Terminating"
    return reason


def _pod_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    total = len(_containers(obj)) or len(statuses)
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    row = [name(obj), f"{ready}/{total}", pod_status_reason(obj), str(restarts), age(obj, now)]
    if wide:
        gates = spec(obj).get("readinessGates") or []
        row += [
            str(st.get("podIP") or NONE),
            str(spec(obj).get("nodeName") or NONE),
            str(st.get("nominatedNodeName") or NONE),
            f"{len(gates)}/{len(gates)}" if gates else NONE,
        ]
    return row


def _images(obj: Object, path: Callable[[Object], dict[str, Any]]) -> list[str]:
    containers = ((path(obj).get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        ",".join(str(c.get("name", "")) for c in containers) or NONE,
        ",".join(str(c.get("image", "")) for c in containers) or NONE,
    ]


def _deployment_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    desired = spec(obj).get("replicas", 1)
    row = [
        name(obj),
        f"{st.get('readyReplicas', 0)}/{desired}",
        str(st.get("updatedReplicas", 0)),
        str(st.get("availableReplicas", 0)),
        age(obj, now),
    ]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _replicaset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    row = [
        name(obj),
        str(spec(obj).get("replicas", 1)),
        str(st.get("replicas", 0)),
        str(st.get("readyReplicas", 0)),
        age(obj, now),
    ]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _statefulset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    row = [name(obj), f"{st.get('readyReplicas', 0)}/{spec(obj).get('replicas', 1)}", age(obj, now)]
    if wide:
        row += _images(obj, spec)
    return row


def _daemonset_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    node_selector = ((spec(obj).get("template") or {}).get("spec") or {}).get("nodeSelector")
    row = [
        name(obj),
        str(st.get("desiredNumberScheduled", 0)),
        str(st.get("currentNumberScheduled", 0)),
        str(st.get("numberReady", 0)),
        str(st.get("updatedNumberScheduled", 0)),
        str(st.get("numberAvailable", 0)),
        labels_string(node_selector),
        age(obj, now),
    ]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _job_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    conditions = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    if conditions.get("Complete") == "True":
        state = "Complete"
    elif conditions.get("Failed") == "True":
        state = "Failed"
    elif conditions.get("Suspended") == "True":
        state = "Suspended"
    else:
        state = "Running"
    completions = spec(obj).get("completions")
    shown = f"{st.get('succeeded', 0)}/{completions if completions is not None else 1}"
    start, end = parse_time(st.get("startTime")), parse_time(st.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    row = [name(obj), state, shown, duration, age(obj, now)]
    if wide:
        row += [*_images(obj, spec), selector_string(spec(obj).get("selector"))]
    return row


def _cronjob_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    last = st.get("lastScheduleTime")
    return [
        name(obj),
        str(spec(obj).get("schedule", "")),
        str(spec(obj).get("timeZone") or NONE),
        "True" if spec(obj).get("suspend") else "False",
        str(len(st.get("active") or [])),
        since(last, now) if last else NONE,
        age(obj, now),
    ]


def _ports(svc: Object) -> str:
    parts = []
    for p in spec(svc).get("ports") or []:
        port = f"{p.get('port')}"
        if p.get("nodePort"):
            port += f":{p['nodePort']}"
        parts.append(f"{port}/{p.get('protocol', 'TCP')}")
    return ",".join(parts) or NONE


def _service_row(obj: Object, now: float, wide: bool) -> list[str]:
    sp = spec(obj)
    external = sp.get("externalIPs") or [
        i.get("ip") or i.get("hostname")
        for i in (status(obj).get("loadBalancer") or {}).get("ingress") or []
    ]
    svc_type = str(sp.get("type", "ClusterIP"))
    if not external:
        ext = "<pending>" if svc_type == "LoadBalancer" else NONE
    else:
        ext = ",".join(str(e) for e in external)
    row = [name(obj), svc_type, str(sp.get("clusterIP") or NONE), ext, _ports(obj), age(obj, now)]
    if wide:
        row.append(labels_string(sp.get("selector")))
    return row


def _endpoints_row(obj: Object, now: float, wide: bool) -> list[str]:
    eps = []
    for subset in obj.get("subsets") or []:
        ports = [p.get("port") for p in subset.get("ports") or []] or [None]
        for addr in subset.get("addresses") or []:
            for port in ports:
                eps.append(f"{addr.get('ip')}:{port}" if port is not None else str(addr.get("ip")))
    shown = ",".join(eps[:3]) + (f" + {len(eps) - 3} more..." if len(eps) > 3 else "")
    return [name(obj), shown or NONE, age(obj, now)]


def node_ready(node: Object) -> str:
    for c in status(node).get("conditions") or []:
        if c.get("type") == "Ready":
            return {"True": "Ready", "False": "NotReady"}.get(str(c.get("status")), "Unknown")
    return "Unknown"


def node_roles(node: Object) -> str:
    roles = []
    for key, value in (meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.append(key.split("/", 1)[1])
        elif key == "kubernetes.io/role":
            roles.append(str(value))
    return ",".join(sorted(r for r in roles if r)) or NONE


def _node_row(obj: Object, now: float, wide: bool) -> list[str]:
    state = node_ready(obj)
    if spec(obj).get("unschedulable"):
        state += ",SchedulingDisabled"
    info = status(obj).get("nodeInfo") or {}
    row = [name(obj), state, node_roles(obj), age(obj, now), str(info.get("kubeletVersion") or "")]
    if wide:
        addrs = status(obj).get("addresses") or []

        def addr(kind: str) -> str:
            return next((str(a.get("address")) for a in addrs if a.get("type") == kind), NONE)

        row += [
            addr("InternalIP"),
            addr("ExternalIP"),
            str(info.get("osImage") or "<unknown>"),
            str(info.get("kernelVersion") or "<unknown>"),
            str(info.get("containerRuntimeVersion") or "<unknown>"),
        ]
    return row


def _namespace_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(status(obj).get("phase") or "Active"), age(obj, now)]


def _configmap_row(obj: Object, now: float, wide: bool) -> list[str]:
    n = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [name(obj), str(n), age(obj, now)]


def _secret_row(obj: Object, now: float, wide: bool) -> list[str]:
    n = len(obj.get("data") or {}) + len(obj.get("stringData") or {})
    return [name(obj), str(obj.get("type") or "Opaque"), str(n), age(obj, now)]


def event_object(ev: Object) -> str:
    inv = ev.get("involvedObject") or ev.get("regarding") or {}
    return f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"


def event_time(ev: Object) -> float | None:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        t = parse_time(ev.get(key))
        if t is not None:
            return t
    series = ev.get("series") or {}
    t = parse_time(series.get("lastObservedTime"))
    return t if t is not None else parse_time(meta(ev).get("creationTimestamp"))


def _event_row(obj: Object, now: float, wide: bool) -> list[str]:
    t = event_time(obj)
    count = obj.get("count") or (obj.get("series") or {}).get("count")
    last = "<unknown>" if t is None else human_duration(now - t)
    if count and int(count) > 1:
        first = parse_time(obj.get("firstTimestamp"))
        if first is not None:
            last += f" (x{count} over {human_duration(now - first)})"
        else:
            last += f" (x{count})"
    row = [
        last,
        str(obj.get("type") or "Normal"),
        str(obj.get("reason") or ""),
        event_object(obj),
        str(obj.get("message") or obj.get("note") or "").strip(),
    ]
    if wide:
        src = obj.get("source") or {}
        row.insert(4, str(src.get("component") or obj.get("reportingComponent") or ""))
    return row


def _priorityclass_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj),
        str(obj.get("value", 0)),
        str(bool(obj.get("globalDefault"))).lower(),
        age(obj, now),
    ]


def _podgroup_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj),
        str(spec(obj).get("minMember", "")),
        str(status(obj).get("phase") or "Pending"),
        age(obj, now),
    ]


def _modes(obj: Object) -> str:
    return volumes.modes_text(volumes.access_modes(obj)) or "<unset>"


def _pv_row(obj: Object, now: float, wide: bool) -> list[str]:
    ref = spec(obj).get("claimRef") or {}
    claim = f"{ref.get('namespace', '')}/{ref['name']}" if ref.get("name") else ""
    row = [
        name(obj),
        str((spec(obj).get("capacity") or {}).get("storage", "")),
        _modes(obj),
        str(spec(obj).get("persistentVolumeReclaimPolicy", "")),
        str(status(obj).get("phase", "")),
        claim,
        volumes.volume_class(obj),
        str(status(obj).get("reason", "")),
        age(obj, now),
    ]
    return row + ([str(spec(obj).get("volumeMode", "Filesystem"))] if wide else [])


def _pvc_row(obj: Object, now: float, wide: bool) -> list[str]:
    row = [
        name(obj),
        str(status(obj).get("phase", "")),
        str(spec(obj).get("volumeName", "")),
        str((status(obj).get("capacity") or {}).get("storage", "")),
        volumes.modes_text(status(obj).get("accessModes") or []),
        volumes.claim_class(obj),
        age(obj, now),
    ]
    return row + ([str(spec(obj).get("volumeMode", "Filesystem"))] if wide else [])


def _storageclass_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [
        name(obj) + (" (default)" if volumes.is_default_class(obj) else ""),
        str(obj.get("provisioner", "")),
        str(obj.get("reclaimPolicy", "Delete")),
        str(obj.get("volumeBindingMode", "Immediate")),
        str(bool(obj.get("allowVolumeExpansion"))).lower(),
        age(obj, now),
    ]


def _queue_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    return [
        name(obj),
        str(spec(obj).get("weight", 1)),
        str(st.get("state") or "Open"),
        *(str(st.get(k) or 0) for k in ("inqueue", "pending", "running")),
        age(obj, now),
    ]


def _vcjob_row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    replicas = sum(int(t.get("replicas") or 0) for t in spec(obj).get("tasks") or ())
    return [
        name(obj),
        str((st.get("state") or {}).get("phase") or "Pending"),
        str(spec(obj).get("minAvailable", "")),
        str(replicas),
        *(str(st.get(k) or 0) for k in ("running", "succeeded", "failed", "retryCount")),
        age(obj, now),
    ]


def _default_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), age(obj, now)]


DEFAULT = Printer(columns(("NAME", "AGE")), _default_row)


_WIDE_IMAGES = ["CONTAINERS", "IMAGES", "SELECTOR"]

# Kind -> (headers, wide extra headers, row function)
COLUMNS: dict[str, tuple[list[str], list[str], Row]] = {
    "Pod": (
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
        _pod_row,
    ),
    "Deployment": (
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        _WIDE_IMAGES,
        _deployment_row,
    ),
    "ReplicaSet": (["NAME", "DESIRED", "CURRENT", "READY", "AGE"], _WIDE_IMAGES, _replicaset_row),
    "StatefulSet": (["NAME", "READY", "AGE"], ["CONTAINERS", "IMAGES"], _statefulset_row),
    "DaemonSet": (
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
        _WIDE_IMAGES,
        _daemonset_row,
    ),
    "Job": (["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"], _WIDE_IMAGES, _job_row),
    "CronJob": (
        ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"],
        [],
        _cronjob_row,
    ),
    "Service": (
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"],
        ["SELECTOR"],
        _service_row,
    ),
    "Endpoints": (["NAME", "ENDPOINTS", "AGE"], [], _endpoints_row),
    "Node": (
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"],
        _node_row,
    ),
    "Namespace": (["NAME", "STATUS", "AGE"], [], _namespace_row),
    "ConfigMap": (["NAME", "DATA", "AGE"], [], _configmap_row),
    "Secret": (["NAME", "TYPE", "DATA", "AGE"], [], _secret_row),
    "Event": (["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], [], _event_row),
    "PriorityClass": (["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE"], [], _priorityclass_row),
    "PodGroup": (["NAME", "MIN-MEMBER", "PHASE", "AGE"], [], _podgroup_row),
    "Queue": (["NAME", "WEIGHT", "STATE", "INQUEUE", "PENDING", "RUNNING", "AGE"], [], _queue_row),
    "Job.batch.volcano.sh": (
        ["NAME", "PHASE", "MIN", "REPLICAS", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES", "AGE"],
        [],
        _vcjob_row,
    ),
    "PersistentVolume": (
        [
            "NAME",
            "CAPACITY",
            "ACCESS MODES",
            "RECLAIM POLICY",
            "STATUS",
            "CLAIM",
            "STORAGECLASS",
            "REASON",
            "AGE",
        ],
        ["VOLUMEMODE"],
        _pv_row,
    ),
    "PersistentVolumeClaim": (
        ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"],
        ["VOLUMEMODE"],
        _pvc_row,
    ),
    "StorageClass": (
        [
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ],
        [],
        _storageclass_row,
    ),
}


def _printer(kind: str) -> Printer | None:
    definition = kinds.find(kind)
    printer = definition.printer if definition is not None else None
    if printer is None and kind in COLUMNS:
        base, extra, row = COLUMNS[kind]
        if kind == "Event":
            cols = (*columns(tuple(base[:4])), Column("SOURCE", 1), Column(base[4]))
        else:
            cols = columns(tuple(base), tuple(extra))
        printer = Printer(cols, row)
    return printer


def printer_of(kind: str) -> Printer:
    """The kind's table columns and row function (NAME, AGE when it has none)."""
    return _printer(kind) or DEFAULT


def headers_for(kind: str, wide: bool) -> list[str]:
    return printer_of(kind).headers(wide)


def row_for(kind: str, obj: Object, now: float, wide: bool) -> list[str]:
    return printer_of(kind).row(obj, now, wide)
