"""The pod spec, as a Pod and every pod template (ReplicaSet, Deployment,
StatefulSet, DaemonSet, Job, CronJob, PodTemplate, Volcano's Job tasks) have
it: its validation and its defaults. Its schema is podspec_schema.py.

- `validate(e, path, spec, restart_policies)`: containers and init
  containers (unique DNS-label names, image, ports, env names, resources
  with requests <= limits, volume mounts naming a volume, probes with one
  handler), volumes (unique names, persistentVolumeClaim sources,
  emptyDir.sizeLimit a positive quantity),
  restartPolicy (optionally narrowed: a Deployment's pods only Always),
  dnsPolicy, grace and deadline seconds, nodeSelector, nodeName,
  tolerations, host namespaces.
- `validate_template(e, path, template, selector, restart_policies)`: a
  pod template: its labels, its spec, and that `selector` matches them.
- `defaults(spec)` / `template_defaults(obj, *path)`: what Kubernetes fills
  in a pod spec (restartPolicy Always, dnsPolicy ClusterFirst, 30 s grace,
  imagePullPolicy from the image's tag, probe timings, port protocol, ...).

Pure functions.
"""

from __future__ import annotations

import re
from typing import Any

from controlplane.api.checks import (
    DNS_LABEL_MESSAGE,
    Errors,
    each_object,
    enum,
    go_value,
    integer,
    items,
    label_map,
    mapping,
    name,
    quantity,
)
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.shared.fill import child, listed
from controlplane.api.selectors import SelectorError, from_structured

Object = dict[str, Any]

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
ENV_NAME_MESSAGE = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  "
    "or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
)

# ---- validation ---------------------------------------------------------------------


def _container(e: Errors, path: str, c: Any, names: set[str], volumes: set[str]) -> None:
    if not mapping(e, path, c, required=True):
        return
    cname: Any = c.get("name")
    if not isinstance(cname, str) or not cname:
        e.add(f"{path}.name", "required")
    elif not is_dns_label(cname):
        e.invalid(f"{path}.name", cname, DNS_LABEL_MESSAGE)
    elif cname in names:
        e.duplicate(f"{path}.name", cname)
    else:
        names.add(cname)
    if not isinstance(c.get("image"), str) or not c.get("image"):
        e.add(f"{path}.image", "required")
    enum(
        e, f"{path}.imagePullPolicy", c.get("imagePullPolicy"), ("Always", "IfNotPresent", "Never")
    )
    for field in ("command", "args"):
        value: Any = c.get(field)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(x, str) for x in value)
        ):
            e.add(f"{path}.{field}", "must be a list of strings")
    ports: Any = c.get("ports")
    if items(e, f"{path}.ports", ports):
        for ppath, port in each_object(e, f"{path}.ports", ports, required=True):
            if port.get("containerPort") is None:
                e.add(f"{ppath}.containerPort", "required")
            else:
                integer(e, f"{ppath}.containerPort", port.get("containerPort"), 1, 65535)
            integer(e, f"{ppath}.hostPort", port.get("hostPort"), 0, 65535)
            enum(e, f"{ppath}.protocol", port.get("protocol"), ("TCP", "UDP", "SCTP"))
            pname: Any = port.get("name")
            if pname is not None and (not isinstance(pname, str) or len(pname) > 15
                                      or not is_dns_label(pname)):  # fmt: skip
                e.invalid(f"{ppath}.name", pname, "must be no more than 15 characters and a "
                          "DNS-1123 label")  # fmt: skip
    env: Any = c.get("env")
    if items(e, f"{path}.env", env):
        for vpath, var in each_object(e, f"{path}.env", env, required=True):
            vname: Any = var.get("name")
            if not isinstance(vname, str) or not _ENV_NAME.match(vname):
                e.invalid(f"{vpath}.name", vname, ENV_NAME_MESSAGE)
    resources: Any = c.get("resources")
    if mapping(e, f"{path}.resources", resources):
        parsed: dict[str, dict[str, Any]] = {}
        for section in ("requests", "limits"):
            values: Any = resources.get(section)
            if mapping(e, f"{path}.resources.{section}", values):
                parsed[section] = {
                    k: quantity(e, f"{path}.resources.{section}.{k}", v) for k, v in values.items()
                }
        for key, request in parsed.get("requests", {}).items():
            limit: Any = parsed.get("limits", {}).get(key)
            if request is not None and limit is not None and request > limit:
                e.invalid(f"{path}.resources.requests", resources["requests"][key],
                          f"must be less than or equal to {key} limit of "
                          f"{resources['limits'][key]}")  # fmt: skip
    mounts: Any = c.get("volumeMounts")
    if items(e, f"{path}.volumeMounts", mounts):
        for mpath, mount in each_object(e, f"{path}.volumeMounts", mounts, required=True):
            if not mount.get("mountPath"):
                e.add(f"{mpath}.mountPath", "required")
            if mount.get("name") not in volumes:
                e.add(f"{mpath}.name", f"Not found: {go_value(mount.get('name'))}")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe: Any = c.get(probe_name)
        if mapping(e, f"{path}.{probe_name}", probe):
            for field in (
                "periodSeconds",
                "timeoutSeconds",
                "successThreshold",
                "failureThreshold",
            ):
                integer(e, f"{path}.{probe_name}.{field}", probe.get(field), 1)
            integer(
                e, f"{path}.{probe_name}.initialDelaySeconds", probe.get("initialDelaySeconds"), 0
            )
            handlers = [h for h in ("exec", "httpGet", "tcpSocket", "grpc") if h in probe]
            if len(handlers) != 1:
                e.add(
                    f"{path}.{probe_name}",
                    "must specify exactly one of exec, httpGet, tcpSocket, grpc",
                )


def _claim_volume_source(e: Errors, path: str, vol: Any) -> None:
    source: Any = vol.get("persistentVolumeClaim")
    if source is None:
        return
    if mapping(e, f"{path}.persistentVolumeClaim", source, required=True):
        claim: Any = source.get("claimName")
        if not claim:
            e.add(f"{path}.persistentVolumeClaim.claimName", "required")
        else:
            name(e, f"{path}.persistentVolumeClaim.claimName", claim)
        if "readOnly" in source and not isinstance(source["readOnly"], bool):
            e.add(f"{path}.persistentVolumeClaim.readOnly", "must be a boolean")


def _empty_dir(e: Errors, path: str, vol: Any) -> None:
    """emptyDir.sizeLimit: a positive quantity (it becomes a tmpfs size in
    bytes, or the limit disk usage is evicted past)."""
    source: Any = vol.get("emptyDir")
    if source is None or not mapping(e, f"{path}.emptyDir", source):
        return
    limit: Any = source.get("sizeLimit")
    if limit is None:
        return
    value = quantity(e, f"{path}.emptyDir.sizeLimit", limit)
    if value is not None and value == 0:
        e.add(f"{path}.emptyDir.sizeLimit", f"Invalid value: {limit!r}: must be greater than zero")


def validate(e: Errors, path: str, spec: Any, restart_policies: tuple[str, ...] = ()) -> None:
    if not mapping(e, path, spec, required=True):
        return
    volumes: set[str] = set()
    vols: Any = spec.get("volumes")
    if items(e, f"{path}.volumes", vols):
        for vpath, vol in each_object(e, f"{path}.volumes", vols, required=True):
            vname: Any = vol.get("name")
            if not isinstance(vname, str) or not is_dns_label(vname):
                e.invalid(f"{vpath}.name", vname, DNS_LABEL_MESSAGE)
            elif vname in volumes:
                e.duplicate(f"{vpath}.name", vname)
            else:
                volumes.add(vname)
            _claim_volume_source(e, vpath, vol)
            _empty_dir(e, vpath, vol)
    names: set[str] = set()
    containers: Any = spec.get("containers")
    if items(e, f"{path}.containers", containers, required=True):
        for i, c in enumerate(containers):
            _container(e, f"{path}.containers[{i}]", c, names, volumes)
    inits: Any = spec.get("initContainers")
    if items(e, f"{path}.initContainers", inits):
        for i, c in enumerate(inits):
            _container(e, f"{path}.initContainers[{i}]", c, names, volumes)
    policy: Any = spec.get("restartPolicy")
    enum(e, f"{path}.restartPolicy", policy, ("Always", "OnFailure", "Never"))
    if restart_policies and policy is not None and policy not in restart_policies:
        e.not_supported(f"{path}.restartPolicy", policy, restart_policies)
    enum(e, f"{path}.dnsPolicy", spec.get("dnsPolicy"),
         ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"))  # fmt: skip
    integer(
        e, f"{path}.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds"), 0
    )
    integer(e, f"{path}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"), 1)
    if "nodeSelector" in spec:
        label_map(e, f"{path}.nodeSelector", spec.get("nodeSelector"))
    node_name: Any = spec.get("nodeName")
    if node_name:
        name(e, f"{path}.nodeName", node_name)
    tolerations: Any = spec.get("tolerations")
    if items(e, f"{path}.tolerations", tolerations):
        for tpath, t in each_object(e, f"{path}.tolerations", tolerations, required=True):
            enum(e, f"{tpath}.operator", t.get("operator"), ("Exists", "Equal"))
            enum(e, f"{tpath}.effect", t.get("effect") or None,
                 ("NoSchedule", "PreferNoSchedule", "NoExecute"))  # fmt: skip
            if t.get("operator") == "Exists" and t.get("value"):
                e.add(f"{tpath}.value", "must be empty when operator is Exists")
            if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
                e.add(f"{tpath}.tolerationSeconds", "only allowed with effect NoExecute")
    integer(e, f"{path}.priority", spec.get("priority"))
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if flag in spec and not isinstance(spec[flag], bool):
            e.add(f"{path}.{flag}", "must be a boolean")


def validate_template(e: Errors, path: str, template: Any, selector: Any = None,
                      restart_policies: tuple[str, ...] = ()) -> None:  # fmt: skip
    if not mapping(e, path, template, required=True):
        return
    tmeta: Any = template.get("metadata") or {}
    if mapping(e, f"{path}.metadata", tmeta) and "labels" in tmeta:
        label_map(e, f"{path}.metadata.labels", tmeta["labels"])
    validate(e, f"{path}.spec", template.get("spec"), restart_policies)
    if selector is not None and isinstance(selector, dict) and isinstance(tmeta, dict):
        try:
            sel = from_structured(selector)
        except SelectorError:
            return
        if not sel.matches(tmeta.get("labels") or {}):
            e.invalid(f"{path}.metadata.labels", tmeta.get("labels") or {},
                      "`selector` does not match template `labels`")  # fmt: skip


# ---- defaults -----------------------------------------------------------------------


def _probe(probe: Any) -> None:
    if isinstance(probe, dict):
        probe.setdefault("timeoutSeconds", 1)
        probe.setdefault("periodSeconds", 10)
        probe.setdefault("successThreshold", 1)
        probe.setdefault("failureThreshold", 3)


def _container_defaults(c: Any) -> None:
    if not isinstance(c, dict):
        return
    image = str(c.get("image", ""))
    if "imagePullPolicy" not in c:
        last = image.rsplit("/", 1)[-1]
        tagged = ":" in last or "@" in image
        latest = last.endswith(":latest") or not tagged
        c["imagePullPolicy"] = "Always" if latest and "@" not in image else "IfNotPresent"
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in listed(c.get("ports")):
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(c.get(probe))


def defaults(spec: Object) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for c in listed(spec.get(key)):
            _container_defaults(c)
    for volume in listed(spec.get("volumes")):
        # SetDefaults_Volume: a volume naming no source is an emptyDir.
        if isinstance(volume, dict) and set(volume) <= {"name"}:
            volume["emptyDir"] = {}


def template_defaults(obj: Object, *path: str) -> None:
    """The defaults of the pod spec of the template at obj[path...]["template"]."""
    current = obj
    for key in path:
        current = child(current, key)
    defaults(child(child(current, "template"), "spec"))
