"""Pod spec -> CRI configs: PodSandboxConfig and ContainerConfig.

Pure translation, as the kubelet does it: names, labels and annotations the
kubelet sets (so other CRI tools recognise pods), log paths
`/var/log/pods/<ns>_<name>_<uid>/<container>/<restart>.log`, DNS from
dnsPolicy, port mappings from hostPorts, the cgroup parent from the QoS
class, security contexts, and environment variables with `$(VAR)` expansion
and valueFrom sources. ConfigMaps and Secrets come in through lookup
functions; this module never calls the API server or the runtime.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pod_actions import container_hash
from controlplane.api.qos import QOSClass, qos_class
from controlplane.api.quantity import parse_quantity
from proto.runtime.v1 import api_pb2 as cri

POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
POD_UID_LABEL = "io.kubernetes.pod.uid"
CONTAINER_NAME_LABEL = "io.kubernetes.container.name"
HASH_ANNOTATION = "io.kubernetes.container.hash"
RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount"
GRACE_ANNOTATION = "io.kubernetes.pod.terminationGracePeriod"
TERMINATION_MESSAGE_PATH_ANNOTATION = "io.kubernetes.container.terminationMessagePath"
TERMINATION_MESSAGE_POLICY_ANNOTATION = "io.kubernetes.container.terminationMessagePolicy"

# Lookups for valueFrom sources: (namespace, name) -> data, or None if missing.
DataLookup = Callable[[str, str], Mapping[str, str] | None]


class ConfigError(ValueError):
    """The pod cannot be turned into a container config (the kubelet's
    CreateContainerConfigError): a missing ConfigMap key, a bad fieldRef..."""


@dataclass(frozen=True)
class NodeSettings:
    log_root: str = "/var/log/pods"
    cluster_dns: tuple[str, ...] = ()
    cluster_domain: str = "cluster.local"
    host_dns_servers: tuple[str, ...] = ()
    host_dns_searches: tuple[str, ...] = ()
    cgroup_root: str = "/skiff.slice/pods"
    node_name: str = ""
    host_ip: str = ""


def pod_log_dir(pod: Mapping[str, Any], log_root: str = "/var/log/pods") -> str:
    md = pod["metadata"]
    return f"{log_root}/{md.get('namespace', 'default')}_{md['name']}_{md.get('uid', '')}"


def container_log_path(name: str, restart_count: int) -> str:
    """Relative to the sandbox's log directory, as CRI expects."""
    return f"{name}/{restart_count}.log"


def pod_cgroup_parent(pod: Mapping[str, Any], root: str) -> str:
    uid = pod["metadata"].get("uid", "")
    qos = qos_class(dict(pod))
    if qos is QOSClass.GUARANTEED:
        return f"{root}/pod{uid}"
    return f"{root}/{qos.value.lower()}/pod{uid}"


def pod_labels(pod: Mapping[str, Any]) -> dict[str, str]:
    md = pod["metadata"]
    labels = dict(md.get("labels") or {})
    labels[POD_NAME_LABEL] = md["name"]
    labels[POD_NAMESPACE_LABEL] = md.get("namespace", "default")
    labels[POD_UID_LABEL] = md.get("uid", "")
    return labels


def dns_config(pod: Mapping[str, Any], node: NodeSettings) -> cri.DNSConfig:
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    host_network = bool(spec.get("hostNetwork"))
    ns = pod["metadata"].get("namespace", "default")
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    cluster = policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not host_network)
    if policy != "None":
        if cluster and node.cluster_dns:
            d = node.cluster_domain
            servers = list(node.cluster_dns)
            searches = [f"{ns}.svc.{d}", f"svc.{d}", d, *node.host_dns_searches]
            options = ["ndots:5"]
        else:
            servers = list(node.host_dns_servers)
            searches = list(node.host_dns_searches)
    extra = spec.get("dnsConfig") or {}
    servers += [s for s in extra.get("nameservers") or [] if s not in servers]
    searches += [s for s in extra.get("searches") or [] if s not in searches]
    for opt in extra.get("options") or []:
        text = opt["name"] + (f":{opt['value']}" if opt.get("value") not in (None, "") else "")
        options = [o for o in options if o.split(":")[0] != opt["name"]] + [text]
    return cri.DNSConfig(servers=servers[:3], searches=searches[:32], options=options)


def port_mappings(pod: Mapping[str, Any]) -> list[cri.PortMapping]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if not p.get("hostPort"):
                continue
            proto = {"TCP": cri.TCP, "UDP": cri.UDP, "SCTP": cri.SCTP}[p.get("protocol", "TCP")]
            out.append(
                cri.PortMapping(
                    protocol=proto,
                    container_port=int(p["containerPort"]),
                    host_port=int(p["hostPort"]),
                    host_ip=p.get("hostIP", ""),
                )
            )
    return out


def _namespace_options(spec: Mapping[str, Any]) -> cri.NamespaceOption:
    return cri.NamespaceOption(
        network=cri.NODE if spec.get("hostNetwork") else cri.POD,
        pid=cri.NODE
        if spec.get("hostPID")
        else (cri.POD if spec.get("shareProcessNamespace") else cri.CONTAINER),
        ipc=cri.NODE if spec.get("hostIPC") else cri.POD,
    )


def sandbox_config(
    pod: Mapping[str, Any], node: NodeSettings, attempt: int
) -> cri.PodSandboxConfig:
    md = pod["metadata"]
    spec = pod.get("spec") or {}
    psc = spec.get("securityContext") or {}
    sec = cri.LinuxSandboxSecurityContext(
        namespace_options=_namespace_options(spec),
        supplemental_groups=[int(g) for g in psc.get("supplementalGroups") or []],
        privileged=any(
            ((c.get("securityContext") or {}).get("privileged"))
            for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        ),
    )
    if "runAsUser" in psc:
        sec.run_as_user.value = int(psc["runAsUser"])
    if "runAsGroup" in psc:
        sec.run_as_group.value = int(psc["runAsGroup"])
    sysctls = {s["name"]: str(s["value"]) for s in psc.get("sysctls") or []}
    hostname = "" if spec.get("hostNetwork") else (spec.get("hostname") or md["name"])[:63]
    return cri.PodSandboxConfig(
        metadata=cri.PodSandboxMetadata(
            name=md["name"],
            uid=md.get("uid", ""),
            namespace=md.get("namespace", "default"),
            attempt=attempt,
        ),
        hostname=hostname,
        log_directory=pod_log_dir(pod, node.log_root),
        dns_config=dns_config(pod, node),
        port_mappings=port_mappings(pod),
        labels=pod_labels(pod),
        annotations=dict(md.get("annotations") or {}),
        linux=cri.LinuxPodSandboxConfig(
            cgroup_parent=pod_cgroup_parent(pod, node.cgroup_root),
            security_context=sec,
            sysctls=sysctls,
        ),
    )


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: known names are replaced, unknown
    references are left as written, and `$$` escapes a dollar."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _VAR.sub(sub, text)


def field_ref(pod: Mapping[str, Any], path: str, node: NodeSettings) -> str:
    md = pod["metadata"]
    status = pod.get("status") or {}
    simple = {
        "metadata.name": md.get("name", ""),
        "metadata.namespace": md.get("namespace", "default"),
        "metadata.uid": md.get("uid", ""),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName", node.node_name),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", ""),
        "status.hostIP": status.get("hostIP", node.host_ip),
        "status.podIP": status.get("podIP", ""),
        "status.podIPs": ",".join(p.get("ip", "") for p in status.get("podIPs") or []),
    }
    if path in simple:
        return str(simple[path])
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return str((md.get(m.group(1)) or {}).get(m.group(2), ""))
    raise ConfigError(f"fieldRef {path!r} is not supported")


def _resource_ref(container: Mapping[str, Any], ref: Mapping[str, Any]) -> str:
    what = ref["resource"]
    kind, _, name = what.partition(".")
    res = container.get("resources") or {}
    value = (res.get(kind) or {}).get(name)
    if value is None and kind == "requests":
        value = (res.get("limits") or {}).get(name)
    if value is None:
        value = "0"
    divisor = parse_quantity(ref.get("divisor") or "1")
    return str(math.ceil(parse_quantity(value) / divisor))


def resolve_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    node: NodeSettings,
    configmaps: DataLookup,
    secrets: DataLookup,
    service_env: Mapping[str, str] | None = None,
) -> list[tuple[str, str]]:
    ns = pod["metadata"].get("namespace", "default")
    env: dict[str, str] = dict(service_env or {})
    cname = container["name"]

    def source(kind: str, ref: Mapping[str, Any], lookup: DataLookup) -> Mapping[str, str] | None:
        data = lookup(ns, ref["name"])
        if data is None and not ref.get("optional"):
            raise ConfigError(f"container {cname}: {kind} {ns}/{ref['name']} not found")
        return data

    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        if "configMapRef" in src:
            data = source("configmap", src["configMapRef"], configmaps)
        else:
            data = source("secret", src["secretRef"], secrets)
        for k, v in (data or {}).items():
            env[prefix + k] = v
    for item in container.get("env") or []:
        name = item["name"]
        vf = item.get("valueFrom")
        if vf is None:
            env[name] = expand(str(item.get("value", "")), env)
            continue
        if "fieldRef" in vf:
            env[name] = field_ref(pod, vf["fieldRef"]["fieldPath"], node)
        elif "resourceFieldRef" in vf:
            env[name] = _resource_ref(container, vf["resourceFieldRef"])
        elif "configMapKeyRef" in vf or "secretKeyRef" in vf:
            is_cm = "configMapKeyRef" in vf
            ref = vf["configMapKeyRef"] if is_cm else vf["secretKeyRef"]
            kind = "configmap" if is_cm else "secret"
            data = source(kind, ref, configmaps if is_cm else secrets)
            if data is None:
                continue
            if ref["key"] not in data:
                if ref.get("optional"):
                    continue
                raise ConfigError(
                    f"container {cname}: couldn't find key {ref['key']} in {kind} {ns}/{ref['name']}"
                )
            env[name] = data[ref["key"]]
        else:
            raise ConfigError(f"container {cname}: env {name}: unsupported valueFrom")
    return list(env.items())


def secret_data(secret: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's data (base64) plus stringData, as plain strings."""
    out = {
        k: base64.b64decode(v).decode(errors="replace")
        for k, v in (secret.get("data") or {}).items()
    }
    out.update(secret.get("stringData") or {})
    return out


DEFAULT_SECCOMP_ROOT = Path("/var/lib/skiff/seccomp")


def localhost_profile(root: Path, ref: Any) -> str:
    """The absolute path of a pod's `localhostProfile`, inside the seccomp root
    (as the kubelet joins it to its seccomp directory): never absolute, never
    `..`, never empty. The runtime loads the path it is given, as containerd
    does (CRI's localhost_ref is the trusted kubelet's): the confinement is here."""
    text = str(ref or "")
    parts = text.split("/")
    if not text or text.startswith("/") or ".." in parts or "\x00" in text:
        raise ConfigError(
            f"seccompProfile.localhostProfile {text!r}: must be a relative path under the "
            "seccomp profile root, without '..'"
        )
    return str(root / text)


def _seccomp(
    sc: Mapping[str, Any], pod_sc: Mapping[str, Any], root: Path = DEFAULT_SECCOMP_ROOT
) -> tuple[cri.SecurityProfile, str]:
    prof = sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}
    # RuntimeDefault unless the pod asks for Unconfined (the kubelet's
    # --seccomp-default, on for every pod skiff runs)
    kind = prof.get("type", "RuntimeDefault")
    if kind == "RuntimeDefault":
        return cri.SecurityProfile(
            profile_type=cri.SecurityProfile.RuntimeDefault
        ), "runtime/default"
    if kind == "Localhost":
        ref = localhost_profile(root, prof.get("localhostProfile"))
        return (
            cri.SecurityProfile(profile_type=cri.SecurityProfile.Localhost, localhost_ref=ref),
            f"localhost/{ref}",
        )
    return cri.SecurityProfile(profile_type=cri.SecurityProfile.Unconfined), "unconfined"


def run_as_non_root_error(
    pod: Mapping[str, Any], container: Mapping[str, Any], image: cri.Image | None
) -> str | None:
    """Why `runAsNonRoot` refuses this container (the kubelet's messages),
    or None: a runAsUser of 0, or an image user that is root or a name whose
    uid cannot be known before the container runs."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    sc = container.get("securityContext") or {}
    if not sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")):
        return None
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if uid is not None:
        return "container's runAsUser breaks non-root policy" if int(uid) == 0 else None
    if image is not None and image.HasField("uid"):
        return (
            "container has runAsNonRoot and image will run as root"
            if image.uid.value == 0
            else None
        )
    name = image.username if image is not None else ""
    if name:
        return (
            f"container has runAsNonRoot and image has non-numeric user ({name}), "
            "cannot verify user is non-root"
        )
    return "container has runAsNonRoot and image will run as root"


def container_security(
    pod: Mapping[str, Any], container: Mapping[str, Any],
    seccomp_root: Path = DEFAULT_SECCOMP_ROOT,
) -> cri.LinuxContainerSecurityContext:  # fmt: skip
    spec = pod.get("spec") or {}
    pod_sc = spec.get("securityContext") or {}
    sc = container.get("securityContext") or {}
    caps = sc.get("capabilities") or {}
    profile, path = _seccomp(sc, pod_sc, seccomp_root)
    out = cri.LinuxContainerSecurityContext(
        capabilities=cri.Capability(
            add_capabilities=list(caps.get("add") or []),
            drop_capabilities=list(caps.get("drop") or []),
        ),
        privileged=bool(sc.get("privileged")),
        namespace_options=_namespace_options(spec),
        readonly_rootfs=bool(sc.get("readOnlyRootFilesystem")),
        supplemental_groups=[int(g) for g in pod_sc.get("supplementalGroups") or []]
        + ([int(pod_sc["fsGroup"])] if pod_sc.get("fsGroup") is not None else []),
        no_new_privs=sc.get("allowPrivilegeEscalation") is False,
        seccomp=profile,
        seccomp_profile_path=path,
    )
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    group = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    if user is not None:
        out.run_as_user.value = int(user)
    if group is not None:
        out.run_as_group.value = int(group)
    # passed on, never dropped: a host without AppArmor refuses a Localhost profile
    aa = sc.get("appArmorProfile") or pod_sc.get("appArmorProfile") or {}
    if aa.get("type") == "Localhost":
        out.apparmor.CopyFrom(
            cri.SecurityProfile(
                profile_type=cri.SecurityProfile.Localhost,
                localhost_ref=str(aa.get("localhostProfile") or ""),
            )
        )
    elif aa.get("type") == "Unconfined":
        out.apparmor.CopyFrom(cri.SecurityProfile(profile_type=cri.SecurityProfile.Unconfined))
    return out


def container_config(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    restart_count: int,
    env: list[tuple[str, str]],
    mounts: list[cri.Mount],
    resources: cri.LinuxContainerResources,
    image_ref: str = "",
    seccomp_root: Path = DEFAULT_SECCOMP_ROOT,
) -> cri.ContainerConfig:
    env_map = dict(env)
    labels = {
        CONTAINER_NAME_LABEL: container["name"],
        POD_NAME_LABEL: pod["metadata"]["name"],
        POD_NAMESPACE_LABEL: pod["metadata"].get("namespace", "default"),
        POD_UID_LABEL: pod["metadata"].get("uid", ""),
    }
    annotations = {
        HASH_ANNOTATION: container_hash(dict(container)),
        RESTART_COUNT_ANNOTATION: str(restart_count),
        GRACE_ANNOTATION: str((pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)),
        TERMINATION_MESSAGE_PATH_ANNOTATION: container.get(
            "terminationMessagePath", "/dev/termination-log"
        ),
        TERMINATION_MESSAGE_POLICY_ANNOTATION: container.get("terminationMessagePolicy", "File"),
    }
    return cri.ContainerConfig(
        metadata=cri.ContainerMetadata(name=container["name"], attempt=restart_count),
        image=cri.ImageSpec(
            image=image_ref or container["image"], user_specified_image=container["image"]
        ),
        command=[expand(s, env_map) for s in container.get("command") or []],
        args=[expand(s, env_map) for s in container.get("args") or []],
        working_dir=container.get("workingDir", ""),
        envs=[cri.KeyValue(key=k, value=v.encode()) for k, v in env],
        mounts=mounts,
        labels=labels,
        annotations=annotations,
        log_path=container_log_path(container["name"], restart_count),
        stdin=bool(container.get("stdin")),
        stdin_once=bool(container.get("stdinOnce")),
        tty=bool(container.get("tty")),
        linux=cri.LinuxContainerConfig(
            resources=resources,
            security_context=container_security(pod, container, seccomp_root),
        ),
    )
