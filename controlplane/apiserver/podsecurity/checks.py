"""The baseline checks of the Pod Security Standards, and what every check shares.

One function per check and policy version, as k8s.io/pod-security-admission/policy
has them (check_<id>.go): each takes the pod's (or template's) metadata and
spec as decoded JSON and returns a `Result` with Kubernetes' reason
(`host namespaces`) and detail (`hostNetwork=true`). The evaluator
(evaluator.py) decides which run for a level and version, and in what order.
The restricted checks are in checks_restricted.py.

The checks read only the fields they name; a missing or `null` field is
Go's nil. They never change the object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Object = Mapping[str, Any]


@dataclass(frozen=True)
class Result:
    allowed: bool = True
    reason: str = ""
    detail: str = ""


ALLOWED = Result()
CheckFn = Callable[[Object, Object], Result]
"""(metadata, spec) -> Result."""


def forbid(reason: str, detail: str) -> Result:
    return Result(False, reason, detail)


def join_quote(items: list[str] | set[str]) -> str:
    """`"a", "b"` (a set is sorted first, as Go's sets.List)."""
    values = sorted(items) if isinstance(items, set) else items
    return ", ".join(f'"{v}"' for v in values)


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def named(noun: str, items: list[str] | set[str]) -> str:
    """`container "a"`, `containers "a", "b"`: how the checks name what they refuse."""
    return f"{pluralize(noun, noun + 's', len(items))} {join_quote(items)}"


def go_quote(text: str) -> str:
    """Go's %q for a string (JSON's escaping, which agrees on printable text)."""
    return json.dumps(text, ensure_ascii=False)


def get(obj: Any, *path: str) -> Any:
    """obj[path[0]][path[1]]...; None where a step is missing, null or not an object."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(spec: Object) -> Iterator[Object]:
    """Init containers, containers, then ephemeral containers (visitContainers)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in as_list(spec.get(key)):
            if isinstance(c, Mapping):
                yield c


def name(c: Object) -> str:
    return str(c.get("name") or "")


def sc(c: Object, field: str) -> Any:
    """The container's securityContext.<field> (None if unset)."""
    return get(c, "securityContext", field)


def pod_sc(spec: Object, field: str) -> Any:
    return get(spec, "securityContext", field)


def setters(pod: bool, bad: list[str]) -> list[str]:
    """["pod", 'container(s) "a", "b"'] as the checks name who set a bad value."""
    out = ["pod"] if pod else []
    if bad:
        out.append(named("container", bad))
    return out


def is_windows(spec: Object) -> bool:
    return bool(get(spec, "os", "name") == "windows")


# ---------------------------------------------------------------- baseline checks


def privileged_1_0(meta: Object, spec: Object) -> Result:
    # Truthy, as the agent reads it (securityContext is not typed by validation).
    bad = [name(c) for c in containers(spec) if sc(c, "privileged")]
    if not bad:
        return ALLOWED
    return forbid("privileged",
                  f"{named('container', bad)} must not set securityContext.privileged=true")  # fmt: skip


def host_namespaces_1_0(meta: Object, spec: Object) -> Result:
    found = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return forbid("host namespaces", ", ".join(found)) if found else ALLOWED


def host_path_volumes_1_0(meta: Object, spec: Object) -> Result:
    bad = [str(v.get("name") or "") for v in as_list(spec.get("volumes"))
           if isinstance(v, Mapping) and v.get("hostPath") is not None]  # fmt: skip
    if not bad:
        return ALLOWED
    return forbid("hostPath volumes",
                  named("volume", bad))  # fmt: skip


def host_ports_1_0(meta: Object, spec: Object) -> Result:
    bad: list[str] = []
    ports: set[str] = set()
    for c in containers(spec):
        found = [p.get("hostPort") for p in as_list(c.get("ports"))
                 if isinstance(p, Mapping) and p.get("hostPort") not in (None, 0)]  # fmt: skip
        if found:
            bad.append(name(c))
            ports.update(str(p) for p in found)
    if not bad:
        return ALLOWED
    return forbid("hostPort", f"{named('container', bad)} {pluralize('uses', 'use', len(bad))} "
                  f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")  # fmt: skip


def _hosts(handler: Any) -> list[str]:
    return [str(h) for h in (get(handler, "httpGet", "host"), get(handler, "tcpSocket", "host"))
            if h]  # fmt: skip


def host_probes_and_host_lifecycle_1_34(meta: Object, spec: Object) -> Result:
    bad: set[str] = set()
    hosts: set[str] = set()
    for c in containers(spec):
        found = [h for probe in ("livenessProbe", "readinessProbe", "startupProbe")
                 for h in _hosts(c.get(probe))]  # fmt: skip
        found += [h for hook in ("postStart", "preStop") for h in _hosts(get(c, "lifecycle", hook))]
        if found:
            bad.add(name(c))
            hosts.update(found)
    if not bad:
        return ALLOWED
    return forbid("probe or lifecycle host",
                  f"{named('container', bad)} {pluralize('uses', 'use', len(bad))} "
                  f"{pluralize('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))}"
                  f" {join_quote(hosts)}")  # fmt: skip


CAPABILITIES_BASELINE = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})  # fmt: skip


def capabilities_baseline_1_0(meta: Object, spec: Object) -> Result:
    bad: list[str] = []
    caps: set[str] = set()
    for c in containers(spec):
        extra = [str(a) for a in as_list(get(c, "securityContext", "capabilities", "add"))
                 if str(a) not in CAPABILITIES_BASELINE]  # fmt: skip
        if extra:
            bad.append(name(c))
            caps.update(extra)
    if not bad:
        return ALLOWED
    return forbid("non-default capabilities",
                  f"{named('container', bad)} must not include {join_quote(caps)} in "
                  "securityContext.capabilities.add")  # fmt: skip


def proc_mount_1_0(meta: Object, spec: Object) -> Result:
    bad: list[str] = []
    kinds: set[str] = set()
    for c in containers(spec):
        value = sc(c, "procMount")
        if value is not None and value != "Default":
            bad.append(name(c))
            kinds.add(str(value))
    if not bad:
        return ALLOWED
    return forbid("procMount", f"{named('container', bad)} must not set "
                  f"securityContext.procMount to {join_quote(kinds)}")  # fmt: skip


SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_TYPES_1_31 = SELINUX_TYPES_1_0 | {"container_engine_t"}


def _selinux(spec: Object, allowed: frozenset[str]) -> Result:
    types: set[str] = set()
    user = role = False

    def valid(opts: Any) -> bool:
        nonlocal user, role
        ok = True
        kind = str(get(opts, "type") or "")
        if kind not in allowed:
            ok = False
            types.add(kind)
        if get(opts, "user"):
            ok, user = False, True
        if get(opts, "role"):
            ok, role = False, True
        return ok

    opts = pod_sc(spec, "seLinuxOptions")
    pod_bad = opts is not None and not valid(opts)
    bad = [name(c) for c in containers(spec)
           if sc(c, "seLinuxOptions") is not None and not valid(sc(c, "seLinuxOptions"))]  # fmt: skip
    who = setters(pod_bad, bad)
    if not who:
        return ALLOWED
    data: list[str] = []
    if types:
        data.append(named("type", types))
    if user:
        data.append("user may not be set")
    if role:
        data.append("role may not be set")
    return forbid("seLinuxOptions", f"{' and '.join(who)} set forbidden "
                  f"securityContext.seLinuxOptions: {'; '.join(data)}")  # fmt: skip


def selinux_options_1_0(meta: Object, spec: Object) -> Result:
    return _selinux(spec, SELINUX_TYPES_1_0)


def selinux_options_1_31(meta: Object, spec: Object) -> Result:
    return _selinux(spec, SELINUX_TYPES_1_31)


SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def _annotations(meta: Object) -> Mapping[str, Any]:
    found = meta.get("annotations")
    return found if isinstance(found, Mapping) else {}


def _seccomp_annotation_ok(value: str) -> bool:
    return value in ("runtime/default", "docker/default") or value.startswith("localhost/")


def seccomp_profile_baseline_1_0(meta: Object, spec: Object) -> Result:
    notes = _annotations(meta)
    bad: set[str] = set()
    keys = [SECCOMP_POD_ANNOTATION] + [SECCOMP_CONTAINER_ANNOTATION + name(c)
                                        for c in containers(spec)]  # fmt: skip
    for key in keys:
        if key in notes and not _seccomp_annotation_ok(str(notes[key])):
            bad.add(f"{key}={go_quote(str(notes[key]))}")
    if not bad:
        return ALLOWED
    return forbid("seccompProfile", f"forbidden {pluralize('annotation', 'annotations', len(bad))}"
                  f" {', '.join(sorted(bad))}")  # fmt: skip


def seccomp_setters(spec: Object) -> tuple[list[str], set[str], bool, list[str]]:
    """(setters of a bad type, the bad types, pod set a good one, containers that set none)."""
    values: set[str] = set()
    profile = pod_sc(spec, "seccompProfile")
    pod_bad = profile is not None and get(profile, "type") not in SECCOMP_TYPES
    if pod_bad:
        values.add(str(get(profile, "type") or ""))
    bad: list[str] = []
    unset: list[str] = []
    for c in containers(spec):
        own = sc(c, "seccompProfile")
        if own is None:
            unset.append(name(c))
        elif get(own, "type") not in SECCOMP_TYPES:
            bad.append(name(c))
            values.add(str(get(own, "type") or ""))
    return setters(pod_bad, bad), values, profile is not None and not pod_bad, unset


def seccomp_profile_baseline_1_19(meta: Object, spec: Object) -> Result:
    who, values, _, _ = seccomp_setters(spec)
    if not who:
        return ALLOWED
    return forbid("seccompProfile", f"{' and '.join(who)} must not set "
                  f"securityContext.seccompProfile.type to {join_quote(values)}")  # fmt: skip


APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def app_armor_profile_1_0(meta: Object, spec: Object) -> Result:
    values: set[str] = set()
    profile = pod_sc(spec, "appArmorProfile")
    pod_bad = profile is not None and get(profile, "type") not in SECCOMP_TYPES
    if pod_bad:
        values.add(str(get(profile, "type") or ""))
    bad: list[str] = []
    for c in containers(spec):
        own = sc(c, "appArmorProfile")
        if own is not None and get(own, "type") not in SECCOMP_TYPES:
            bad.append(name(c))
            values.add(str(get(own, "type") or ""))
    who = setters(pod_bad, bad)
    listed = sorted(values)
    notes = sorted(
        f"{k}={go_quote(str(v))}"
        for k, v in _annotations(meta).items()
        if k.startswith(APPARMOR_ANNOTATION)
        and not (not v or v == "runtime/default" or str(v).startswith("localhost/"))
    )
    if notes:
        listed += notes
        who.append(pluralize("annotation", "annotations", len(notes)))
    if not who:
        return ALLOWED
    return forbid(pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles",
                            len(listed)),
                  f"{' and '.join(who)} must not set AppArmor profile type to {join_quote(listed)}")  # fmt: skip


SYSCTLS_1_0 = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
})  # fmt: skip
SYSCTLS_1_27 = SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_1_29 = SYSCTLS_1_27 | {
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}  # fmt: skip
SYSCTLS_1_32 = SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(meta: Object, spec: Object) -> Result:
        bad = [str(get(s, "name")) for s in as_list(pod_sc(spec, "sysctls"))
               if str(get(s, "name")) not in allowed]  # fmt: skip
        return forbid("forbidden sysctls", ", ".join(bad)) if bad else ALLOWED

    return check


sysctls_1_0 = _sysctls(SYSCTLS_1_0)
sysctls_1_27 = _sysctls(SYSCTLS_1_27)
sysctls_1_29 = _sysctls(SYSCTLS_1_29)
sysctls_1_32 = _sysctls(SYSCTLS_1_32)


def windows_host_process_1_0(meta: Object, spec: Object) -> Result:
    bad = [name(c) for c in containers(spec)
           if get(c, "securityContext", "windowsOptions", "hostProcess")]  # fmt: skip
    pod = bool(get(spec, "securityContext", "windowsOptions", "hostProcess"))
    who = setters(pod, bad)
    if not who:
        return ALLOWED
    return forbid("hostProcess", f"{' and '.join(who)} must not set "
                  "securityContext.windowsOptions.hostProcess=true")  # fmt: skip
