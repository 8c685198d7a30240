"""skiffctl describe: one object in detail, with the events about it.

`describe KIND [NAME...] | TYPE/NAME... [-l SELECTOR]`. Every object gets the
header kubectl shows (Name, Namespace, Labels, Annotations, CreationTimestamp,
Controlled By), then a section for its kind (Pods: node, status, IP,
containers and conditions; Deployments and ReplicaSets: selector, replica
counts, pod template; Nodes: roles, conditions, addresses, capacity and the
pods on it; Services: type, IP, ports, endpoints), or its spec and status
rendered generically for other kinds, then `Events:` as a table.
"""

from __future__ import annotations

import argparse
from typing import Any

from controlplane.api import kinds, volumes
from controlplane.api.kinds import KindInfo
from controlplane.cli import printers
from controlplane.cli.context import Context
from controlplane.cli.events import matches
from controlplane.cli.get import list_all, scope
from controlplane.cli.resources import parse_targets
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.scheduler.explain import describe_scheduling

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("resources", nargs="+", metavar="KIND [NAME...] | TYPE/NAME")
    parser.add_argument("-l", "--selector", default="")
    parser.add_argument("-A", "--all-namespaces", action="store_true")
    parser.add_argument("--show-events", default="true", choices=("true", "false"))


class Writer:
    """Collects lines; `key: value` fields at one indent share one value column, as
    kubectl's tabwriter aligns them."""

    def __init__(self) -> None:
        # (indent, label or None for a raw line, text)
        self.entries: list[tuple[int, str | None, str]] = []

    def field(self, key: str, value: Any, indent: int = 0) -> None:
        self.entries.append((indent, f"{key}:", _scalar(value)))

    def head(self, key: str, indent: int = 0) -> None:
        self.entries.append((indent, None, f"{key}:"))

    def line(self, text: str, indent: int = 0) -> None:
        self.entries.append((indent, None, text))

    def multi(self, key: str, mapping: dict[str, Any] | None, indent: int = 0) -> None:
        """Labels/annotations style: first pair on the key line, the rest aligned below."""
        items = sorted((mapping or {}).items())
        if not items:
            self.field(key, printers.NONE, indent)
            return
        for i, (k, v) in enumerate(items):
            self.entries.append((indent, f"{key}:" if i == 0 else "", f"{k}={v}"))

    def table(self, headers: list[str], rows: list[list[str]], indent: int = 2) -> None:
        dashes = ["-" * len(h) for h in headers]
        text = printers.format_table(headers, [dashes, *rows])
        for ln in text.rstrip("\n").split("\n"):
            self.entries.append((indent, None, ln))

    def text(self) -> str:
        widths: dict[int, int] = {}
        for indent, label, _ in self.entries:
            if label:
                widths[indent] = max(widths.get(indent, 0), len(label))
        lines = []
        for indent, label, text in self.entries:
            if label is None:
                lines.append(" " * indent + text)
            else:
                lines.append(
                    (" " * indent + label.ljust(widths.get(indent, 0) + 2) + text).rstrip()
                )
        return "\n".join(lines) + "\n"


def _scalar(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return printers.NONE
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ", ".join(_scalar(v) for v in value)
    return str(value)


def _generic(w: Writer, value: Any, indent: int) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            key = k[:1].upper() + k[1:] if indent == 0 else k
            if isinstance(v, dict) and v:
                w.head(key, indent)
                _generic(w, v, indent + 2)
            elif isinstance(v, list) and v and any(isinstance(i, dict) for i in v):
                w.head(key, indent)
                for item in v:
                    if isinstance(item, dict):
                        first = True
                        for ik, iv in item.items():
                            prefix = "- " if first else "  "
                            first = False
                            if isinstance(iv, dict | list) and iv:
                                w.line(f"{prefix}{ik}:", indent + 2)
                                _generic(w, iv, indent + 6)
                            else:
                                w.line(f"{prefix}{ik}: {_scalar(iv)}", indent + 2)
                    else:
                        w.line(f"- {_scalar(item)}", indent + 2)
            else:
                w.field(key, v, indent)
    elif isinstance(value, list):
        for item in value:
            w.line(f"- {_scalar(item)}", indent)


def _containers(
    w: Writer, containers: list[dict[str, Any]], statuses: list[dict[str, Any]], indent: int
) -> None:
    by_name = {s.get("name"): s for s in statuses}
    for c in containers:
        w.head(str(c.get("name")), indent)
        w.field("Image", c.get("image"), indent + 2)
        if c.get("command"):
            w.field("Command", " ".join(str(x) for x in c["command"]), indent + 2)
        if c.get("args"):
            w.field("Args", " ".join(str(x) for x in c["args"]), indent + 2)
        ports = [
            f"{p.get('containerPort')}/{p.get('protocol', 'TCP')}" for p in c.get("ports") or []
        ]
        if ports:
            w.field("Port", ", ".join(ports), indent + 2)
        st = by_name.get(c.get("name"))
        if st is not None:
            state = st.get("state") or {}
            for name, detail in state.items():
                w.field("State", name[:1].upper() + name[1:], indent + 2)
                for k in ("reason", "exitCode", "startedAt", "finishedAt", "message"):
                    if isinstance(detail, dict) and k in detail:
                        w.field(k[:1].upper() + k[1:], detail[k], indent + 4)
            w.field("Ready", bool(st.get("ready")), indent + 2)
            w.field("Restart Count", st.get("restartCount", 0), indent + 2)
        resources = c.get("resources") or {}
        for section in ("limits", "requests"):
            if resources.get(section):
                w.head(section.capitalize(), indent + 2)
                for k, v in sorted(resources[section].items()):
                    w.field(k, v, indent + 4)
        if c.get("env"):
            w.head("Environment", indent + 2)
            for e in c["env"]:
                w.field(str(e.get("name")), e.get("value", "<set from a source>"), indent + 4)


def _conditions(w: Writer, conditions: list[dict[str, Any]]) -> None:
    if not conditions:
        return
    w.head("Conditions")
    w.table(["Type", "Status"], [[str(c.get("type")), str(c.get("status"))] for c in conditions])


def _pod(ctx: Context, w: Writer, obj: Object) -> None:
    sp, st = printers.spec(obj), printers.status(obj)
    node = sp.get("nodeName")
    w.field("Priority", sp.get("priority", 0))
    if sp.get("priorityClassName"):
        w.field("Priority Class Name", sp["priorityClassName"])
    w.field("Node", f"{node}/{st.get('hostIP', '')}".rstrip("/") if node else printers.NONE)
    w.field("Start Time", st.get("startTime"))
    w.field(
        "Status",
        printers.pod_status_reason(obj)
        if printers.meta(obj).get("deletionTimestamp")
        else st.get("phase", "Pending"),
    )
    if st.get("reason"):
        w.field("Reason", st["reason"])
    if st.get("message"):
        w.field("Message", st["message"])
    w.field("IP", st.get("podIP"))
    if sp.get("initContainers"):
        w.head("Init Containers")
        _containers(w, sp["initContainers"], st.get("initContainerStatuses") or [], 2)
    w.head("Containers")
    _containers(w, sp.get("containers") or [], st.get("containerStatuses") or [], 2)
    _conditions(w, st.get("conditions") or [])
    if sp.get("volumes"):
        w.head("Volumes")
        _generic(
            w,
            {
                v.get("name", "?"): {k: x for k, x in v.items() if k != "name"}
                for v in sp["volumes"]
            },
            2,
        )
    w.multi("Node-Selectors", sp.get("nodeSelector"))
    tolerations = [
        f"{t.get('key', '')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect', '')}"
        for t in sp.get("tolerations") or []
    ]
    w.field("Tolerations", tolerations)
    scheduling = describe_scheduling(obj)
    if scheduling:
        w.head("Scheduling")
        for text in scheduling:
            w.line(text, 2)


def _template(w: Writer, sp: dict[str, Any]) -> None:
    template = sp.get("template") or {}
    w.head("Pod Template")
    w.multi("Labels", (template.get("metadata") or {}).get("labels"), 2)
    w.head("Containers", 2)
    _containers(w, (template.get("spec") or {}).get("containers") or [], [], 4)


def _workload(ctx: Context, w: Writer, obj: Object) -> None:
    sp, st = printers.spec(obj), printers.status(obj)
    w.field("Selector", printers.selector_string(sp.get("selector")))
    desired = sp.get("replicas", 1)
    if obj.get("kind") == "Deployment":
        w.field(
            "Replicas",
            f"{desired} desired | {st.get('updatedReplicas', 0)} updated | "
            f"{st.get('replicas', 0)} total | {st.get('availableReplicas', 0)} available | "
            f"{st.get('unavailableReplicas', 0)} unavailable",
        )
        strategy = sp.get("strategy") or {}
        w.field("StrategyType", strategy.get("type", "RollingUpdate"))
        w.field("MinReadySeconds", sp.get("minReadySeconds", 0))
    else:
        w.field("Replicas", f"{st.get('replicas', 0)} current / {desired} desired")
        w.field(
            "Pods Status",
            f"{st.get('readyReplicas', 0)} Ready / {st.get('availableReplicas', 0)} Available",
        )
    _template(w, sp)
    _conditions(w, st.get("conditions") or [])


def _node(ctx: Context, w: Writer, obj: Object) -> None:
    sp, st = printers.spec(obj), printers.status(obj)
    w.field("Roles", printers.node_roles(obj))
    w.field("Unschedulable", bool(sp.get("unschedulable")))
    w.field("PodCIDR", sp.get("podCIDR"))
    taints = [
        f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
        for t in sp.get("taints") or []
    ]
    w.field("Taints", taints)
    conditions = st.get("conditions") or []
    if conditions:
        w.head("Conditions")
        w.table(
            ["Type", "Status", "LastHeartbeatTime", "Reason", "Message"],
            [
                [
                    str(c.get("type")),
                    str(c.get("status")),
                    str(c.get("lastHeartbeatTime", "")),
                    str(c.get("reason", "")),
                    str(c.get("message", "")),
                ]
                for c in conditions
            ],
        )
    if st.get("addresses"):
        w.head("Addresses")
        for a in st["addresses"]:
            w.field(str(a.get("type")), a.get("address"), 2)
    for section in ("capacity", "allocatable"):
        if st.get(section):
            w.head(section.capitalize())
            for k, v in sorted(st[section].items()):
                w.field(k, v, 2)
    if st.get("nodeInfo"):
        w.head("System Info")
        _generic(w, st["nodeInfo"], 2)
    pods, _ = list_all(
        ctx.client, kinds.by_kind("Pod"), None, "", f"spec.nodeName={printers.name(obj)}"
    )
    live = [p for p in pods if printers.status(p).get("phase") not in ("Succeeded", "Failed")]
    w.line(f"Non-terminated Pods:          ({len(live)} in total)")
    if live:
        w.table(
            ["Namespace", "Name", "Age"],
            [
                [
                    str(printers.meta(p).get("namespace")),
                    printers.name(p),
                    printers.age(p, ctx.now()),
                ]
                for p in live
            ],
        )


def _service(ctx: Context, w: Writer, obj: Object) -> None:
    sp = printers.spec(obj)
    w.multi("Selector", sp.get("selector"))
    w.field("Type", sp.get("type", "ClusterIP"))
    w.field("IP", sp.get("clusterIP"))
    for p in sp.get("ports") or []:
        w.field("Port", f"{p.get('name') or '<unset>'}  {p.get('port')}/{p.get('protocol', 'TCP')}")
        w.field("TargetPort", f"{p.get('targetPort', p.get('port'))}/{p.get('protocol', 'TCP')}")
        if p.get("nodePort"):
            w.field(
                "NodePort",
                f"{p.get('name') or '<unset>'}  {p['nodePort']}/{p.get('protocol', 'TCP')}",
            )
    try:
        ep = ctx.client.get("Endpoints", printers.name(obj), printers.meta(obj).get("namespace"))
        addrs = [
            f"{a.get('ip')}:{p.get('port')}"
            for s in ep.get("subsets") or []
            for a in s.get("addresses") or []
            for p in s.get("ports") or [{}]
        ]
        w.field("Endpoints", ",".join(addrs))
    except errors.NotFound:
        w.field("Endpoints", printers.NONE)
    w.field("Session Affinity", sp.get("sessionAffinity", "None"))


def _claim(ctx: Context, w: Writer, obj: Object) -> None:
    sp, st = printers.spec(obj), printers.status(obj)
    w.field("StorageClass", volumes.claim_class(obj))
    w.field("Status", st.get("phase", "Pending"))
    w.field("Volume", sp.get("volumeName", ""))
    w.field("Capacity", (st.get("capacity") or {}).get("storage", ""))
    w.field("Access Modes", volumes.modes_text(st.get("accessModes") or []))
    w.field("VolumeMode", sp.get("volumeMode", "Filesystem"))
    ns = printers.meta(obj).get("namespace") or "default"
    pods, _ = list_all(ctx.client, kinds.by_kind("Pod"), ns, "", "")
    users = [
        printers.name(p)
        for p in pods
        if printers.name(obj) in volumes.pod_claim_names(p)
        and printers.status(p).get("phase") not in ("Succeeded", "Failed")
    ]
    w.field("Used By", users or printers.NONE)


def _volume(ctx: Context, w: Writer, obj: Object) -> None:
    sp, st = printers.spec(obj), printers.status(obj)
    w.field("StorageClass", volumes.volume_class(obj))
    w.field("Status", st.get("phase", ""))
    ref = sp.get("claimRef") or {}
    w.field("Claim", f"{ref.get('namespace', '')}/{ref['name']}" if ref.get("name") else "")
    w.field("Reclaim Policy", sp.get("persistentVolumeReclaimPolicy", ""))
    w.field("Access Modes", volumes.modes_text(volumes.access_modes(obj)))
    w.field("VolumeMode", sp.get("volumeMode", "Filesystem"))
    w.field("Capacity", (sp.get("capacity") or {}).get("storage", ""))
    nodes = volumes.volume_node_names(obj)
    w.field(
        "Node Affinity", f"kubernetes.io/hostname in [{', '.join(nodes)}]" if nodes else "<none>"
    )
    if st.get("message"):
        w.field("Message", st["message"])
    w.head("Source")
    source = "local" if "local" in sp else "hostPath"
    w.field("Type", "LocalVolume" if source == "local" else "HostPath", 2)
    w.field("Path", volumes.volume_path(obj), 2)


SECTIONS = {
    "Pod": _pod,
    "PersistentVolumeClaim": _claim,
    "PersistentVolume": _volume,
    "Deployment": _workload,
    "ReplicaSet": _workload,
    "StatefulSet": _workload,
    "Node": _node,
    "Service": _service,
}


def describe(ctx: Context, info: KindInfo, obj: Object, events: list[Object] | None) -> str:
    w = Writer()
    meta = printers.meta(obj)
    w.field("Name", meta.get("name"))
    if info.namespaced:
        w.field("Namespace", meta.get("namespace"))
    w.multi("Labels", meta.get("labels"))
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED}
    w.multi("Annotations", annotations)
    w.field("CreationTimestamp", meta.get("creationTimestamp"))
    if meta.get("deletionTimestamp"):
        w.field("DeletionTimestamp", meta["deletionTimestamp"])
    if meta.get("finalizers"):
        w.field("Finalizers", meta["finalizers"])
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            w.field("Controlled By", f"{ref.get('kind')}/{ref.get('name')}")
    section = SECTIONS.get(info.key)
    if section is not None:
        section(ctx, w, obj)
    else:
        rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        _generic(w, rest, 0)
    if events is not None:
        if not events:
            w.field("Events", printers.NONE)
        else:
            w.head("Events")
            now = ctx.now()
            rows = []
            for ev in events:
                t = printers.event_time(ev)
                src = ev.get("source") or {}
                rows.append(
                    [
                        str(ev.get("type") or "Normal"),
                        str(ev.get("reason") or ""),
                        "<unknown>" if t is None else printers.human_duration(now - t),
                        str(src.get("component") or ev.get("reportingComponent") or ""),
                        str(ev.get("message") or ev.get("note") or "").strip(),
                    ]
                )
            w.table(["Type", "Reason", "Age", "From", "Message"], rows)
    return w.text()


def _events_for(ctx: Context, info: KindInfo, obj: Object) -> list[Object]:
    ns = printers.meta(obj).get("namespace") or "default"
    try:
        evs, _ = list_all(ctx.client, kinds.by_kind("Event"), ns)
    except errors.ApiError:
        return []
    uid = printers.meta(obj).get("uid")
    out = [
        e
        for e in evs
        if matches(e, info.key, printers.name(obj), set())
        and (
            not uid
            or not (e.get("involvedObject") or {}).get("uid")
            or (e.get("involvedObject") or {}).get("uid") == uid
        )
    ]
    out.sort(key=lambda e: printers.event_time(e) or 0.0)
    return out


def run(ctx: Context) -> int:
    args = ctx.args
    targets = parse_targets(args.resources)
    failed = 0
    first = True
    for t in targets:
        if t.name is None:
            objs, _ = list_all(ctx.client, t.info, scope(ctx, t.info), args.selector)
            if not objs:
                ns = scope(ctx, t.info)
                ctx.err("No resources found" + (f" in {ns} namespace." if ns else "."))
        else:
            try:
                objs = [
                    ctx.client.get(t.info.key, t.name, ctx.namespace if t.info.namespaced else None)
                ]
            except errors.NotFound as err:
                ctx.err(f"Error from server (NotFound): {err}")
                failed += 1
                continue
        for obj in objs:
            if not first:
                ctx.out("")
                ctx.out("")
            first = False
            events = _events_for(ctx, t.info, obj) if args.show_events == "true" else None
            ctx.stdout.write(describe(ctx, t.info, obj, events))
    return 1 if failed else 0
