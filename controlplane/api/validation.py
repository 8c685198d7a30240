"""Validation of objects, per kind, with Kubernetes' rules for the fields skiff supports.

`validate(kind, obj, old)` returns a list of messages, each naming the field
path and the problem (`spec.replicas: must be >= 0`); an empty list means
valid. `old` is the stored object on update, for immutability rules. Unknown
fields are not errors: they are kept as the manifest has them. Pure functions:
no storage access, never mutates the object.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.api import crd, crd_validation, jsoncodec, kinds, rbac, volcano
from controlplane.api.checks import Errors, is_qualified_name
from controlplane.api.checks import enum as _enum
from controlplane.api.checks import integer as _int
from controlplane.api.checks import items as _list
from controlplane.api.checks import label_map as _labels
from controlplane.api.checks import mapping as _dict
from controlplane.api.checks import name as _check_name
from controlplane.api.checks import percent_or_int as _percent_or_int
from controlplane.api.checks import quantity as _quantity
from controlplane.api.checks import selector as _selector
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.shared import meta
from controlplane.api.quantity import parse_quantity
from controlplane.api.selectors import SelectorError, from_structured

Object = dict[str, Any]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CRON_FIELD = re.compile(r"^[\d*/,\-A-Za-z?LW#]+$")


# -- pods ------------------------------------------------------------------------


def _container(e: Errors, path: str, c: Any, names: set[str], volumes: set[str]) -> None:
    if not _dict(e, path, c, required=True):
        return
    name: Any = c.get("name")
    if not isinstance(name, str) or not name:
        e.add(f"{path}.name", "required")
    elif not is_dns_label(name):
        e.add(f"{path}.name", f"{name!r} must be a DNS-1123 label")
    elif name in names:
        e.add(f"{path}.name", f"duplicate container name {name!r}")
    else:
        names.add(name)
    if not isinstance(c.get("image"), str) or not c.get("image"):
        e.add(f"{path}.image", "required")
    _enum(
        e, f"{path}.imagePullPolicy", c.get("imagePullPolicy"), ("Always", "IfNotPresent", "Never")
    )
    for field in ("command", "args"):
        value: Any = c.get(field)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(x, str) for x in value)
        ):
            e.add(f"{path}.{field}", "must be a list of strings")
    ports: Any = c.get("ports")
    if _list(e, f"{path}.ports", ports):
        for i, port in enumerate(ports):
            ppath = f"{path}.ports[{i}]"
            if not _dict(e, ppath, port, required=True):
                continue
            if port.get("containerPort") is None:
                e.add(f"{ppath}.containerPort", "required")
            else:
                _int(e, f"{ppath}.containerPort", port.get("containerPort"), 1, 65535)
            _int(e, f"{ppath}.hostPort", port.get("hostPort"), 0, 65535)
            _enum(e, f"{ppath}.protocol", port.get("protocol"), ("TCP", "UDP", "SCTP"))
            pname: Any = port.get("name")
            if pname is not None and (not isinstance(pname, str) or len(pname) > 15
                                      or not is_dns_label(pname)):  # fmt: skip
                e.add(f"{ppath}.name", f"{pname!r} must be a DNS-1123 label of <= 15 characters")
    env: Any = c.get("env")
    if _list(e, f"{path}.env", env):
        for i, var in enumerate(env):
            if not _dict(e, f"{path}.env[{i}]", var, required=True):
                continue
            vname: Any = var.get("name")
            if not isinstance(vname, str) or not _ENV_NAME.match(vname):
                e.add(f"{path}.env[{i}].name", f"invalid environment variable name {vname!r}")
    resources: Any = c.get("resources")
    if _dict(e, f"{path}.resources", resources):
        parsed: dict[str, dict[str, Any]] = {}
        for section in ("requests", "limits"):
            values: Any = resources.get(section)
            if _dict(e, f"{path}.resources.{section}", values):
                parsed[section] = {
                    k: _quantity(e, f"{path}.resources.{section}.{k}", v) for k, v in values.items()
                }
        for key, request in parsed.get("requests", {}).items():
            limit: Any = parsed.get("limits", {}).get(key)
            if request is not None and limit is not None and request > limit:
                e.add(f"{path}.resources.requests.{key}", f"must be <= the limit ({limit})")
    mounts: Any = c.get("volumeMounts")
    if _list(e, f"{path}.volumeMounts", mounts):
        for i, mount in enumerate(mounts):
            mpath = f"{path}.volumeMounts[{i}]"
            if not _dict(e, mpath, mount, required=True):
                continue
            if not mount.get("mountPath"):
                e.add(f"{mpath}.mountPath", "required")
            if mount.get("name") not in volumes:
                e.add(f"{mpath}.name", f"volume {mount.get('name')!r} not found in spec.volumes")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe: Any = c.get(probe_name)
        if _dict(e, f"{path}.{probe_name}", probe):
            for field in (
                "periodSeconds",
                "timeoutSeconds",
                "successThreshold",
                "failureThreshold",
            ):
                _int(e, f"{path}.{probe_name}.{field}", probe.get(field), 1)
            _int(e, f"{path}.{probe_name}.initialDelaySeconds", probe.get("initialDelaySeconds"), 0)
            handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if h in probe]
            if len(handlers) != 1:
                e.add(
                    f"{path}.{probe_name}",
                    "must specify exactly one of exec, httpGet, tcpSocket, grpc",
                )


def validate_pod_spec(
    e: Errors, path: str, spec: Any, restart_policies: tuple[str, ...] = ()
) -> None:
    if not _dict(e, path, spec, required=True):
        return
    volumes: set[str] = set()
    vols: Any = spec.get("volumes")
    if _list(e, f"{path}.volumes", vols):
        for i, vol in enumerate(vols):
            if not _dict(e, f"{path}.volumes[{i}]", vol, required=True):
                continue
            vname: Any = vol.get("name")
            if not isinstance(vname, str) or not is_dns_label(vname):
                e.add(f"{path}.volumes[{i}].name", f"{vname!r} must be a DNS-1123 label")
            elif vname in volumes:
                e.add(f"{path}.volumes[{i}].name", f"duplicate volume name {vname!r}")
            else:
                volumes.add(vname)
            _claim_volume_source(e, f"{path}.volumes[{i}]", vol)
    names: set[str] = set()
    containers: Any = spec.get("containers")
    if _list(e, f"{path}.containers", containers, required=True):
        for i, c in enumerate(containers):
            _container(e, f"{path}.containers[{i}]", c, names, volumes)
    inits: Any = spec.get("initContainers")
    if _list(e, f"{path}.initContainers", inits):
        for i, c in enumerate(inits):
            _container(e, f"{path}.initContainers[{i}]", c, names, volumes)
    policy: Any = spec.get("restartPolicy")
    _enum(e, f"{path}.restartPolicy", policy, ("Always", "OnFailure", "Never"))
    if restart_policies and policy is not None and policy not in restart_policies:
        e.add(f"{path}.restartPolicy", f"unsupported value {policy!r}: supported values: "
              f"{', '.join(restart_policies)}")  # fmt: skip
    _enum(e, f"{path}.dnsPolicy", spec.get("dnsPolicy"),
          ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"))  # fmt: skip
    _int(e, f"{path}.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"), 0)
    _int(e, f"{path}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), 1)
    if "nodeSelector" in spec:
        _labels(e, f"{path}.nodeSelector", spec.get("nodeSelector"))
    node_name: Any = spec.get("nodeName")
    if node_name:
        _check_name(e, f"{path}.nodeName", node_name)
    tolerations: Any = spec.get("tolerations")
    if _list(e, f"{path}.tolerations", tolerations):
        for i, t in enumerate(tolerations):
            tpath = f"{path}.tolerations[{i}]"
            if not _dict(e, tpath, t, required=True):
                continue
            _enum(e, f"{tpath}.operator", t.get("operator"), ("Exists", "Equal"))
            _enum(e, f"{tpath}.effect", t.get("effect") or None,
                  ("NoSchedule", "PreferNoSchedule", "NoExecute"))  # fmt: skip
            if t.get("operator") == "Exists" and t.get("value"):
                e.add(f"{tpath}.value", "must be empty when operator is Exists")
            if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
                e.add(f"{tpath}.tolerationSeconds", "only allowed with effect NoExecute")
    _int(e, f"{path}.priority", spec.get("priority"))
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if flag in spec and not isinstance(spec[flag], bool):
            e.add(f"{path}.{flag}", "must be a boolean")


def _template(e: Errors, path: str, template: Any, selector: Any = None,
              restart_policies: tuple[str, ...] = ()) -> None:  # fmt: skip
    if not _dict(e, path, template, required=True):
        return
    tmeta: Any = template.get("metadata") or {}
    if _dict(e, f"{path}.metadata", tmeta) and "labels" in tmeta:
        _labels(e, f"{path}.metadata.labels", tmeta["labels"])
    validate_pod_spec(e, f"{path}.spec", template.get("spec"), restart_policies)
    if selector is not None and isinstance(selector, dict) and isinstance(tmeta, dict):
        try:
            sel = from_structured(selector)
        except SelectorError:
            return
        if not sel.matches(tmeta.get("labels") or {}):
            e.add(f"{path}.metadata.labels", "`selector` does not match template `labels`")


# -- kinds -----------------------------------------------------------------------


# The problems of pod specs seen lately, by their JSON: a ReplicaSet's pods share
# one spec, and a pod's spec is checked again on every status update.
_SPEC_PROBLEMS: dict[bytes, list[str]] = {}
_SPEC_PROBLEMS_MAX = 1024


def _pod_spec_problems(spec: Any) -> list[str]:
    key = jsoncodec.dumps(spec)
    problems = _SPEC_PROBLEMS.get(key)
    if problems is None:
        found = Errors()
        validate_pod_spec(found, "spec", spec)
        problems = found.items
        if len(_SPEC_PROBLEMS) >= _SPEC_PROBLEMS_MAX:
            _SPEC_PROBLEMS.clear()
        _SPEC_PROBLEMS[key] = problems
    return problems


def _pod(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(_pod_spec_problems(obj.get("spec")))
    status: Any = obj.get("status")
    if _dict(e, "status", status):
        _enum(e, "status.phase", status.get("phase"),
              ("Pending", "Running", "Succeeded", "Failed", "Unknown"))  # fmt: skip
    if old is not None:
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        old_node: Any = old_spec.get("nodeName")
        if old_node and new_spec.get("nodeName") != old_node:
            e.add("spec.nodeName", "field is immutable once the pod is bound")
        old_names = [c.get("name") for c in old_spec.get("containers") or []]
        new_names = [c.get("name") for c in new_spec.get("containers") or [] if isinstance(c, dict)]
        if old_names != new_names:
            e.add("spec.containers", "pod updates may not add or remove containers")


def _replicas(e: Errors, spec: Object) -> None:
    _int(e, "spec.replicas", spec.get("replicas"), 0)


def _workload(e: Errors, obj: Object, old: Object | None, restart: tuple[str, ...]) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    _replicas(e, spec)
    _int(e, "spec.minReadySeconds", spec.get("minReadySeconds"), 0)
    _int(e, "spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"), 0)
    _selector(e, "spec.selector", spec.get("selector"))
    _template(e, "spec.template", spec.get("template"), spec.get("selector"), restart)
    if old is not None and (old.get("spec") or {}).get("selector") != spec.get("selector"):
        e.add("spec.selector", "field is immutable")


def _replicaset(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, obj, old, ("Always",))


def _deployment(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, obj, old, ("Always",))
    spec: Any = obj.get("spec")
    if not isinstance(spec, dict):
        return
    strategy: Any = spec.get("strategy")
    if _dict(e, "spec.strategy", strategy):
        _enum(e, "spec.strategy.type", strategy.get("type"), ("RollingUpdate", "Recreate"))
        rolling: Any = strategy.get("rollingUpdate")
        if strategy.get("type") == "Recreate" and rolling:
            e.add(
                "spec.strategy.rollingUpdate", "may not be specified when strategy type is Recreate"
            )
        if _dict(e, "spec.strategy.rollingUpdate", rolling):
            _percent_or_int(
                e, "spec.strategy.rollingUpdate.maxUnavailable", rolling.get("maxUnavailable")
            )
            _percent_or_int(e, "spec.strategy.rollingUpdate.maxSurge", rolling.get("maxSurge"))
            if rolling.get("maxUnavailable") in (0, "0%") and rolling.get("maxSurge") in (0, "0%"):
                e.add("spec.strategy.rollingUpdate.maxUnavailable",
                      "may not be 0 when maxSurge is 0")  # fmt: skip
    _int(e, "spec.progressDeadlineSeconds", spec.get("progressDeadlineSeconds"), 1)


def _statefulset(e: Errors, obj: Object, old: Object | None) -> None:
    _workload(e, _with_claim_volumes(e, obj), old, ("Always",))
    spec: Any = obj.get("spec")
    if isinstance(spec, dict):
        _statefulset_claims(e, spec)
        _enum(e, "spec.podManagementPolicy", spec.get("podManagementPolicy"),
              ("OrderedReady", "Parallel"))  # fmt: skip
        strategy: Any = spec.get("updateStrategy")
        if _dict(e, "spec.updateStrategy", strategy):
            _enum(
                e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete")
            )


def _daemonset(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if isinstance(spec, dict) and "replicas" in spec:
        e.add("spec.replicas", "not a DaemonSet field (one pod runs per eligible node)")
    _workload(e, obj, old, ("Always",))
    if isinstance(spec, dict):
        strategy: Any = spec.get("updateStrategy")
        if _dict(e, "spec.updateStrategy", strategy):
            _enum(
                e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete")
            )


def _job_spec(e: Errors, path: str, spec: Any, old_spec: Any = None, manual: bool = True) -> None:
    if not _dict(e, path, spec, required=True):
        return
    _int(e, f"{path}.parallelism", spec.get("parallelism"), 0)
    _int(e, f"{path}.completions", spec.get("completions"), 0)
    _int(e, f"{path}.backoffLimit", spec.get("backoffLimit"), 0)
    _int(e, f"{path}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), 1)
    _int(e, f"{path}.ttlSecondsAfterFinished", spec.get("ttlSecondsAfterFinished"), 0)
    _enum(e, f"{path}.completionMode", spec.get("completionMode"), ("NonIndexed", "Indexed"))
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        e.add(f"{path}.completions", "required when completionMode is Indexed")
    selector: Any = spec.get("selector")
    if manual or selector is not None:
        _selector(e, f"{path}.selector", selector, required=manual)
    _template(e, f"{path}.template", spec.get("template"), selector if manual else None,
              ("OnFailure", "Never"))  # fmt: skip
    template: Any = spec.get("template")
    if (
        isinstance(template, dict)
        and isinstance(template.get("spec"), dict)
        and template["spec"].get("restartPolicy") is None
    ):
        e.add(f"{path}.template.spec.restartPolicy", "required: OnFailure or Never")
    if isinstance(old_spec, dict):
        if old_spec.get("template") != spec.get("template"):
            e.add(f"{path}.template", "field is immutable")
        if old_spec.get("completions") != spec.get("completions"):
            e.add(f"{path}.completions", "field is immutable")


def _job(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    _job_spec(
        e, "spec", spec, (old or {}).get("spec"), manual=bool((spec or {}).get("manualSelector"))
    )


def _cronjob(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    schedule: Any = spec.get("schedule")
    if not isinstance(schedule, str) or not schedule.strip():
        e.add("spec.schedule", "required")
    elif not schedule.startswith("@"):
        fields = schedule.split()
        if (fields and fields[0].startswith("TZ=")) or (
            fields and fields[0].startswith("CRON_TZ=")
        ):
            fields = fields[1:]
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            e.add("spec.schedule", f"{schedule!r} is not a standard 5-field cron schedule")
    elif schedule not in ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight",
                          "@hourly") and not schedule.startswith("@every "):  # fmt: skip
        e.add("spec.schedule", f"unknown schedule macro {schedule!r}")
    _enum(
        e, "spec.concurrencyPolicy", spec.get("concurrencyPolicy"), ("Allow", "Forbid", "Replace")
    )
    _int(e, "spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"), 0)
    _int(e, "spec.successfulJobsHistoryLimit", spec.get("successfulJobsHistoryLimit"), 0)
    _int(e, "spec.failedJobsHistoryLimit", spec.get("failedJobsHistoryLimit"), 0)
    jt: Any = spec.get("jobTemplate")
    if _dict(e, "spec.jobTemplate", jt, required=True):
        _job_spec(e, "spec.jobTemplate.spec", jt.get("spec"), manual=False)


def _service(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    stype: Any = spec.get("type")
    _enum(e, "spec.type", stype, ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"))
    if stype == "ExternalName":
        if not spec.get("externalName"):
            e.add("spec.externalName", "required for type ExternalName")
        return
    ports: Any = spec.get("ports")
    headless: Any = spec.get("clusterIP") == "None"
    if _list(e, "spec.ports", ports, required=not headless):
        names: set[str] = set()
        seen: set[tuple[Any, Any]] = set()
        for i, port in enumerate(ports):
            path = f"spec.ports[{i}]"
            if not _dict(e, path, port, required=True):
                continue
            if port.get("port") is None:
                e.add(f"{path}.port", "required")
            else:
                _int(e, f"{path}.port", port.get("port"), 1, 65535)
            _enum(e, f"{path}.protocol", port.get("protocol"), ("TCP", "UDP", "SCTP"))
            target: Any = port.get("targetPort")
            if isinstance(target, str):
                if not is_dns_label(target) or len(target) > 15:
                    e.add(f"{path}.targetPort", f"{target!r} must be a port number or a port name")
            else:
                _int(e, f"{path}.targetPort", target, 1, 65535)
            node_port: Any = port.get("nodePort")
            if node_port is not None:
                if stype not in ("NodePort", "LoadBalancer"):
                    e.add(f"{path}.nodePort", "may only be set for type NodePort or LoadBalancer")
                else:
                    _int(e, f"{path}.nodePort", node_port, 30000, 32767)
            pname: Any = port.get("name")
            if len(ports) > 1 and not pname:
                e.add(f"{path}.name", "required when there is more than one port")
            if pname:
                if not isinstance(pname, str) or not is_dns_label(pname):
                    e.add(f"{path}.name", f"{pname!r} must be a DNS-1123 label")
                elif pname in names:
                    e.add(f"{path}.name", f"duplicate port name {pname!r}")
                names.add(str(pname))
            key = (port.get("port"), port.get("protocol"))
            if key in seen:
                e.add(f"{path}", f"duplicate port {key[0]}/{key[1]}")
            seen.add(key)
    if "selector" in spec:
        _labels(e, "spec.selector", spec["selector"])
    cluster_ip: Any = spec.get("clusterIP")
    if cluster_ip and cluster_ip != "None":
        try:
            ipaddress.ip_address(cluster_ip)
        except ValueError:
            e.add("spec.clusterIP", f"{cluster_ip!r} is not a valid IP address")
    _enum(e, "spec.sessionAffinity", spec.get("sessionAffinity"), ("None", "ClientIP"))
    if old is not None:
        old_ip = (old.get("spec") or {}).get("clusterIP")
        if old_ip and cluster_ip != old_ip and stype != "ExternalName":
            e.add("spec.clusterIP", "field is immutable")


def _endpoints(e: Errors, obj: Object, old: Object | None) -> None:
    subsets: Any = obj.get("subsets")
    if not _list(e, "subsets", subsets):
        return
    for i, subset in enumerate(subsets):
        if not _dict(e, f"subsets[{i}]", subset, required=True):
            continue
        for field in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(subset.get(field) or []):
                ip: Any = addr.get("ip") if isinstance(addr, dict) else None
                try:
                    ipaddress.ip_address(str(ip))
                except ValueError:
                    e.add(f"subsets[{i}].{field}[{j}].ip", f"{ip!r} is not a valid IP address")
        for j, port in enumerate(subset.get("ports") or []):
            if isinstance(port, dict):
                _int(e, f"subsets[{i}].ports[{j}].port", port.get("port"), 1, 65535)


def _node(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec):
        return
    taints: Any = spec.get("taints")
    if _list(e, "spec.taints", taints):
        for i, t in enumerate(taints):
            path = f"spec.taints[{i}]"
            if not _dict(e, path, t, required=True):
                continue
            if not t.get("key") or not is_qualified_name(str(t.get("key"))):
                e.add(f"{path}.key", "required (a qualified name)")
            if t.get("effect") is None:
                e.add(f"{path}.effect", "required")
            _enum(
                e,
                f"{path}.effect",
                t.get("effect"),
                ("NoSchedule", "PreferNoSchedule", "NoExecute"),
            )
    for field in ("podCIDR",):
        value: Any = spec.get(field)
        if value:
            try:
                ipaddress.ip_network(value, strict=False)
            except ValueError:
                e.add(f"spec.{field}", f"{value!r} is not a valid CIDR")
    if "unschedulable" in spec and not isinstance(spec["unschedulable"], bool):
        e.add("spec.unschedulable", "must be a boolean")


def _config_data(e: Errors, obj: Object, fields: tuple[str, ...], base64_field: str = "") -> None:
    keys: set[str] = set()
    for field in fields:
        data: Any = obj.get(field)
        if not _dict(e, field, data):
            continue
        for key, value in data.items():
            if not _CONFIG_KEY.match(str(key)) or len(str(key)) > 253:
                e.add(f"{field}.{key}", "invalid key (alphanumerics, '-', '_' or '.')")
            if str(key) in keys and field != "stringData":
                e.add(f"{field}.{key}", "duplicate key in data and binaryData")
            keys.add(str(key))
            if not isinstance(value, str):
                e.add(f"{field}.{key}", "must be a string")
            elif field == base64_field:
                import base64
                import binascii

                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    e.add(f"{field}.{key}", "must be base64-encoded")


def _configmap(e: Errors, obj: Object, old: Object | None) -> None:
    _config_data(e, obj, ("data", "binaryData"), "binaryData")
    if (
        old is not None
        and old.get("immutable")
        and (old.get("data") != obj.get("data") or old.get("binaryData") != obj.get("binaryData"))
    ):
        e.add("data", "field is immutable when `immutable` is set")


def _secret(e: Errors, obj: Object, old: Object | None) -> None:
    _config_data(e, obj, ("data", "stringData"), "data")
    if old is not None and old.get("type") != obj.get("type"):
        e.add("type", "field is immutable")


def _event(e: Errors, obj: Object, old: Object | None) -> None:
    regarding: Any = obj.get("involvedObject", obj.get("regarding"))
    _dict(e, "involvedObject", regarding)


def _priorityclass(e: Errors, obj: Object, old: Object | None) -> None:
    value: Any = obj.get("value")
    if value is None:
        e.add("value", "required")
    else:
        name = str((obj.get("metadata") or {}).get("name") or "")
        # Only the built-in system-* classes may go above one billion.
        ceiling = 2000001000 if name.startswith("system-") else 1000000000
        _int(e, "value", value, -2147483648, ceiling)
    if "globalDefault" in obj and not isinstance(obj["globalDefault"], bool):
        e.add("globalDefault", "must be a boolean")
    _enum(e, "preemptionPolicy", obj.get("preemptionPolicy"), ("PreemptLowerPriority", "Never"))
    if old is not None and old.get("value") != value:
        e.add("value", "field is immutable")


def _namespace(e: Errors, obj: Object, old: Object | None) -> None:
    status: Any = obj.get("status")
    if _dict(e, "status", status):
        _enum(e, "status.phase", status.get("phase"), ("Active", "Terminating"))


def _podgroup(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_podgroup(e, obj, old, parse_quantity)


def _queue(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_queue(e, obj, old, parse_quantity)


def _vcjob(e: Errors, obj: Object, old: Object | None) -> None:
    def pod_spec(e: volcano.Errors, path: str, spec: Any) -> None:
        assert isinstance(e, Errors)
        validate_pod_spec(e, path, spec, ("Always", "OnFailure", "Never"))

    volcano.validate_job(e, obj, old, pod_spec, is_dns_label, parse_quantity)


def _command(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_command(e, obj, old)


def _crd(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(crd_validation.validate_crd(obj, old))


# -- storage: PersistentVolume, PersistentVolumeClaim, StorageClass ---------------

_VOLUME_SOURCES = ("hostPath", "local")
_KNOWN_VOLUME_SOURCES = (
    "hostPath", "local", "nfs", "iscsi", "csi", "cephfs", "rbd", "fc", "azureDisk", "azureFile",
    "gcePersistentDisk", "awsElasticBlockStore", "cinder", "flexVolume", "glusterfs",
    "portworxVolume", "vsphereVolume", "quobyte", "scaleIO", "storageos", "photonPersistentDisk",
    "flocker",
)  # fmt: skip


def _storage_size(e: Errors, path: str, resources: Any, required: bool = True) -> None:
    """A capacity/requests map's `storage`: present and > 0."""
    if not _dict(e, path, resources, required=required):
        return
    if "storage" not in resources:
        e.add(f"{path}.storage", "required")
        return
    q = _quantity(e, f"{path}.storage", resources["storage"])
    if q is not None and q <= 0:
        e.add(f"{path}.storage", "must be greater than zero")


def _access_modes(e: Errors, path: str, modes: Any) -> None:
    if not _list(e, path, modes, required=True):
        return
    allowed = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
    for i, mode in enumerate(modes):
        _enum(e, f"{path}[{i}]", mode, allowed)
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        e.add(path, "may not use ReadWriteOncePod with other access modes")


def _host_path(e: Errors, path: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        e.add(path, "required")
    elif not value.startswith("/"):
        e.add(path, f"{value!r} must be an absolute path")
    elif ".." in value.split("/"):
        e.add(path, f"{value!r} must not contain '..'")
    elif "\x00" in value:
        e.add(path, "must not contain NUL")


def _node_selector_terms(e: Errors, path: str, selector: Any) -> None:
    if not _dict(e, path, selector, required=True):
        return
    terms: Any = selector.get("nodeSelectorTerms")
    if not _list(e, f"{path}.nodeSelectorTerms", terms, required=True):
        return
    ops = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
    for i, term in enumerate(terms):
        tpath = f"{path}.nodeSelectorTerms[{i}]"
        if not _dict(e, tpath, term, required=True):
            continue
        for field in ("matchExpressions", "matchFields"):
            exprs: Any = term.get(field)
            if not _list(e, f"{tpath}.{field}", exprs):
                continue
            for j, expr in enumerate(exprs):
                epath = f"{tpath}.{field}[{j}]"
                if not _dict(e, epath, expr, required=True):
                    continue
                if not expr.get("key"):
                    e.add(f"{epath}.key", "required")
                _enum(e, f"{epath}.operator", expr.get("operator"), ops)
                if expr.get("operator") in ("In", "NotIn") and not expr.get("values"):
                    e.add(f"{epath}.values", "required for operator In or NotIn")


def _persistentvolume(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not _dict(e, "spec", spec, required=True):
        return
    _storage_size(e, "spec.capacity", spec.get("capacity"))
    _access_modes(e, "spec.accessModes", spec.get("accessModes"))
    _enum(e, "spec.persistentVolumeReclaimPolicy", spec.get("persistentVolumeReclaimPolicy"),
          ("Retain", "Delete"))  # fmt: skip
    _enum(e, "spec.volumeMode", spec.get("volumeMode"), ("Filesystem",))
    sources = [k for k in _KNOWN_VOLUME_SOURCES if k in spec]
    if not sources:
        e.add("spec", "must specify a volume source (hostPath or local)")
    elif len(sources) > 1:
        e.add("spec", f"may specify only one volume source, not {', '.join(sources)}")
    else:
        source = sources[0]
        if source not in _VOLUME_SOURCES:
            e.add(f"spec.{source}", "unsupported volume source: supported sources: hostPath, local")
        elif _dict(e, f"spec.{source}", spec[source], required=True):
            _host_path(e, f"spec.{source}.path", spec[source].get("path"))
            if source == "hostPath":
                _enum(e, "spec.hostPath.type", spec[source].get("type") or None,
                      ("DirectoryOrCreate", "Directory"))  # fmt: skip
            elif not spec.get("nodeAffinity"):
                e.add("spec.nodeAffinity", "required for a local volume")
    affinity: Any = spec.get("nodeAffinity")
    if _dict(e, "spec.nodeAffinity", affinity):
        _node_selector_terms(e, "spec.nodeAffinity.required", affinity.get("required"))
    class_name: Any = spec.get("storageClassName")
    if class_name:
        _check_name(e, "spec.storageClassName", class_name)
    ref: Any = spec.get("claimRef")
    if _dict(e, "spec.claimRef", ref) and not ref.get("name"):
        e.add("spec.claimRef.name", "required")
    if spec.get("mountOptions"):
        # As Kubernetes: hostPath and local volumes are bind mounts, without options.
        e.add("spec.mountOptions", "may not specify mount options for this volume type")
    status: Any = obj.get("status")
    if _dict(e, "status", status):
        _enum(e, "status.phase", status.get("phase"),
              ("Pending", "Available", "Bound", "Released", "Failed"))  # fmt: skip
    if old is not None:
        old_spec: Any = old.get("spec") or {}
        for field in (*_VOLUME_SOURCES, "volumeMode"):
            if old_spec.get(field) != spec.get(field):
                e.add(f"spec.{field}", "field is immutable")
        if old_spec.get("nodeAffinity") and old_spec.get("nodeAffinity") != spec.get(
            "nodeAffinity"
        ):
            e.add("spec.nodeAffinity", "field is immutable once set")


def _claim_spec(e: Errors, path: str, spec: Any) -> None:
    if not _dict(e, path, spec, required=True):
        return
    _access_modes(e, f"{path}.accessModes", spec.get("accessModes"))
    resources: Any = spec.get("resources")
    if _dict(e, f"{path}.resources", resources, required=True):
        _storage_size(e, f"{path}.resources.requests", resources.get("requests"))
    class_name: Any = spec.get("storageClassName")
    if class_name:
        _check_name(e, f"{path}.storageClassName", class_name)
    if spec.get("selector") is not None:
        _selector(e, f"{path}.selector", spec.get("selector"), required=False)
    _enum(e, f"{path}.volumeMode", spec.get("volumeMode"), ("Filesystem",))
    volume_name: Any = spec.get("volumeName")
    if volume_name:
        _check_name(e, f"{path}.volumeName", volume_name)
    for field in ("dataSource", "dataSourceRef"):
        if spec.get(field):
            e.add(
                f"{path}.{field}",
                "not supported: skiff cannot populate a volume from a data source",
            )


def _persistentvolumeclaim(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    _claim_spec(e, "spec", spec)
    status: Any = obj.get("status")
    if _dict(e, "status", status):
        _enum(e, "status.phase", status.get("phase"), ("Pending", "Bound", "Lost"))
    if old is None or not isinstance(spec, dict):
        return
    old_spec: Any = old.get("spec") or {}
    for field in ("accessModes", "selector", "volumeMode", "storageClassName", "dataSource"):
        if old_spec.get(field) != spec.get(field) and not (
            field == "storageClassName" and old_spec.get(field) is None
        ):
            e.add(f"spec.{field}", "field is immutable after creation")
    if old_spec.get("volumeName") and old_spec.get("volumeName") != spec.get("volumeName"):
        e.add("spec.volumeName", "field is immutable once the claim is bound")
    old_req = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
    new_req = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if old_req is not None and new_req is not None and old_req != new_req:
        try:
            if parse_quantity(new_req) < parse_quantity(old_req):
                e.add(
                    "spec.resources.requests.storage", "field can not be less than previous value"
                )
        except ValueError:
            pass


def _storageclass(e: Errors, obj: Object, old: Object | None) -> None:
    provisioner: Any = obj.get("provisioner")
    if not isinstance(provisioner, str) or not provisioner:
        e.add("provisioner", "required")
    elif not is_qualified_name(provisioner) and provisioner != "kubernetes.io/no-provisioner":
        e.add("provisioner", f"{provisioner!r} must be a qualified name")
    _enum(e, "reclaimPolicy", obj.get("reclaimPolicy"), ("Retain", "Delete"))
    _enum(e, "volumeBindingMode", obj.get("volumeBindingMode"),
          ("Immediate", "WaitForFirstConsumer"))  # fmt: skip
    params: Any = obj.get("parameters")
    if _dict(e, "parameters", params):
        for key, value in params.items():
            if not isinstance(value, str):
                e.add(f"parameters.{key}", "must be a string")
    if "allowVolumeExpansion" in obj and not isinstance(obj["allowVolumeExpansion"], bool):
        e.add("allowVolumeExpansion", "must be a boolean")
    if old is not None:
        for field in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
            if old.get(field) != obj.get(field):
                e.add(field, "field is immutable")


def _claim_volume_source(e: Errors, path: str, vol: Any) -> None:
    source: Any = vol.get("persistentVolumeClaim")
    if source is None:
        return
    if _dict(e, f"{path}.persistentVolumeClaim", source, required=True):
        name: Any = source.get("claimName")
        if not name:
            e.add(f"{path}.persistentVolumeClaim.claimName", "required")
        else:
            _check_name(e, f"{path}.persistentVolumeClaim.claimName", name)
        if "readOnly" in source and not isinstance(source["readOnly"], bool):
            e.add(f"{path}.persistentVolumeClaim.readOnly", "must be a boolean")


def _with_claim_volumes(e: Errors, obj: Object) -> Object:
    """A StatefulSet whose template also has a volume per volumeClaimTemplate, so
    the template's volumeMounts may name the templates (as on Kubernetes)."""
    spec: Any = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("volumeClaimTemplates"), list):
        return obj
    template: Any = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return obj
    names = [
        ((t.get("metadata") or {}).get("name") if isinstance(t, dict) else None)
        for t in spec["volumeClaimTemplates"]
    ]
    pod_spec = dict(template["spec"])
    existing = {v.get("name") for v in pod_spec.get("volumes") or [] if isinstance(v, dict)}
    extra = [
        {"name": n, "persistentVolumeClaim": {"claimName": n}}
        for n in names
        if isinstance(n, str) and n and n not in existing
    ]
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), *extra]
    return {**obj, "spec": {**spec, "template": {**template, "spec": pod_spec}}}


def _statefulset_claims(e: Errors, spec: Object) -> None:
    templates: Any = spec.get("volumeClaimTemplates")
    if _list(e, "spec.volumeClaimTemplates", templates):
        seen: set[str] = set()
        for i, t in enumerate(templates):
            path = f"spec.volumeClaimTemplates[{i}]"
            if not _dict(e, path, t, required=True):
                continue
            name: Any = (t.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not is_dns_label(name):
                e.add(f"{path}.metadata.name", f"{name!r} must be a DNS-1123 label")
            elif name in seen:
                e.add(f"{path}.metadata.name", f"duplicate claim template {name!r}")
            else:
                seen.add(name)
            _claim_spec(e, f"{path}.spec", t.get("spec"))
    policy: Any = spec.get("persistentVolumeClaimRetentionPolicy")
    if _dict(e, "spec.persistentVolumeClaimRetentionPolicy", policy):
        for field in ("whenDeleted", "whenScaled"):
            _enum(e, f"spec.persistentVolumeClaimRetentionPolicy.{field}", policy.get(field),
                  ("Retain", "Delete"))  # fmt: skip


def _rbac(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(rbac.problems(str(obj.get("kind") or ""), obj, old))


VALIDATORS: dict[str, Callable[[Errors, Object, Object | None], None]] = {
    "CustomResourceDefinition": _crd,
    "Pod": _pod,
    "ReplicaSet": _replicaset,
    "Deployment": _deployment,
    "StatefulSet": _statefulset,
    "DaemonSet": _daemonset,
    "Job": _job,
    "CronJob": _cronjob,
    "Service": _service,
    "Endpoints": _endpoints,
    "Node": _node,
    "ConfigMap": _configmap,
    "Secret": _secret,
    "Event": _event,
    "PriorityClass": _priorityclass,
    "Namespace": _namespace,
    "PodGroup": _podgroup,
    "PersistentVolume": _persistentvolume,
    "PersistentVolumeClaim": _persistentvolumeclaim,
    "StorageClass": _storageclass,
    "Role": _rbac,
    "ClusterRole": _rbac,
    "RoleBinding": _rbac,
    "ClusterRoleBinding": _rbac,
    "Queue": _queue,
    volcano.JOB_KEY: _vcjob,
    "Command": _command,
}


def validate(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """Every problem with obj as `path: problem`; [] when valid."""
    definition = kinds.definition(kind)
    info = definition.info
    e = Errors()
    if not isinstance(obj, dict):
        return ["object: must be a JSON object"]
    api_version: Any = obj.get("apiVersion")
    if api_version is not None and not info.accepts_api_version(str(api_version)):
        e.add(
            "apiVersion",
            f"{api_version!r} does not serve kind {info.kind} (use {info.api_version})",
        )
    meta.validate(e, info, obj, definition.name_rule)
    validator = definition.validate or VALIDATORS.get(info.key)
    if validator is not None:
        validator(e, obj, dict(old) if old is not None else None)
    elif crd.is_custom(info.key):
        e.items.extend(crd.validate_object(info.key, obj))
    return e.items


def validate_metadata(e: Errors, info: KindInfo, obj: Object) -> None:
    """metadata's rules alone, with the kind's name rule (pods/binding)."""
    meta.validate(e, info, obj, kinds.definition(info.key).name_rule)
