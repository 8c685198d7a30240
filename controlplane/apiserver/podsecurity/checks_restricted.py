"""The restricted checks of the Pod Security Standards (see checks.py).

Where the agent reads a field more loosely than Go's typed decoding would
(securityContext is free-form in skiff's validation), a check refuses
whatever the agent would run unconfined: `runAsUser: "0"` is root to the
agent (int()), so it is `runAsUser=0` here too; only a JSON `true` is
`runAsNonRoot=true` and only a JSON `false` is `allowPrivilegeEscalation=false`.

skiff has no user namespaces, so the relaxations Kubernetes 1.34+ gives pods
with `hostUsers: false` are not made: such a pod would run as real root.
"""

from __future__ import annotations

from typing import Any

from controlplane.apiserver.podsecurity.checks import (
    ALLOWED,
    Object,
    Result,
    as_list,
    containers,
    forbid,
    get,
    is_windows,
    join_quote,
    name,
    named,
    pluralize,
    pod_sc,
    sc,
    seccomp_setters,
    setters,
)


def allow_privilege_escalation_1_8(meta: Object, spec: Object) -> Result:
    bad = [name(c) for c in containers(spec) if sc(c, "allowPrivilegeEscalation") is not False]
    if not bad:
        return ALLOWED
    return forbid("allowPrivilegeEscalation != false",
                  f"{named('container', bad)} must set "
                  "securityContext.allowPrivilegeEscalation=false")  # fmt: skip


def allow_privilege_escalation_1_25(meta: Object, spec: Object) -> Result:
    return ALLOWED if is_windows(spec) else allow_privilege_escalation_1_8(meta, spec)


def capabilities_restricted_1_22(meta: Object, spec: Object) -> Result:
    missing: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in containers(spec):
        capabilities = sc(c, "capabilities")
        if capabilities is None:
            missing.append(name(c))
            continue
        if "ALL" not in [str(d) for d in as_list(get(capabilities, "drop"))]:
            missing.append(name(c))
        extra = [str(a) for a in as_list(get(capabilities, "add")) if str(a) != "NET_BIND_SERVICE"]
        if extra:
            adding.append(name(c))
            caps.update(extra)
    details: list[str] = []
    if missing:
        details.append(f'{named("container", missing)} must set '
                       'securityContext.capabilities.drop=["ALL"]')  # fmt: skip
    if adding:
        details.append(f"{named('container', adding)} must not include {join_quote(caps)} in "
                       "securityContext.capabilities.add")  # fmt: skip
    return forbid("unrestricted capabilities", "; ".join(details)) if details else ALLOWED


def capabilities_restricted_1_25(meta: Object, spec: Object) -> Result:
    return ALLOWED if is_windows(spec) else capabilities_restricted_1_22(meta, spec)


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                    "persistentVolumeClaim", "projected", "secret")  # fmt: skip
# The order Kubernetes names a restricted volume's type in (the first found).
_RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
                       "iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
                       "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
                       "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")  # fmt: skip


def restricted_volumes_1_0(meta: Object, spec: Object) -> Result:
    bad: list[str] = []
    kinds: set[str] = set()
    for v in as_list(spec.get("volumes")):
        if not isinstance(v, dict):
            continue
        if any(v.get(k) is not None for k in _ALLOWED_VOLUMES):
            continue
        bad.append(str(v.get("name") or ""))
        kinds.add(next((k for k in _RESTRICTED_VOLUMES if v.get(k) is not None), "unknown"))
    if not bad:
        return ALLOWED
    return forbid("restricted volume types",
                  f"{named('volume', bad)} {pluralize('uses', 'use', len(bad))} "
                  f"{pluralize('restricted volume type', 'restricted volume types', len(kinds))} "
                  f"{join_quote(kinds)}")  # fmt: skip


def run_as_non_root_1_0(meta: Object, spec: Object) -> Result:
    pod = pod_sc(spec, "runAsNonRoot")
    pod_true = pod is True
    explicit: list[str] = []
    implicit: list[str] = []
    for c in containers(spec):
        own = sc(c, "runAsNonRoot")
        if own is None:
            if not pod_true:
                implicit.append(name(c))
        elif own is not True:
            explicit.append(name(c))
    who = setters(pod is not None and not pod_true, explicit)
    if who:
        return forbid("runAsNonRoot != true",
                      f"{' and '.join(who)} must not set securityContext.runAsNonRoot=false")  # fmt: skip
    if implicit:
        return forbid("runAsNonRoot != true", f"pod or {named('container', implicit)} "
                      "must set securityContext.runAsNonRoot=true")  # fmt: skip
    return ALLOWED


def _root(value: Any) -> bool:
    """Whether the agent would run as uid 0 for this runAsUser (it takes int())."""
    if value is None:
        return False
    try:
        return int(value) == 0
    except (TypeError, ValueError):
        return False


def run_as_user_1_23(meta: Object, spec: Object) -> Result:
    bad = [name(c) for c in containers(spec) if _root(sc(c, "runAsUser"))]
    who = setters(_root(pod_sc(spec, "runAsUser")), bad)
    if not who:
        return ALLOWED
    return forbid("runAsUser=0", f"{' and '.join(who)} must not set runAsUser=0")


def seccomp_profile_restricted_1_19(meta: Object, spec: Object) -> Result:
    who, values, pod_set, unset = seccomp_setters(spec)
    if who:
        return forbid("seccompProfile", f"{' and '.join(who)} must not set "
                      f"securityContext.seccompProfile.type to {join_quote(values)}")  # fmt: skip
    if unset and not pod_set:
        return forbid("seccompProfile", f"pod or {named('container', unset)} must set "
                      "securityContext.seccompProfile.type to "
                      '"RuntimeDefault" or "Localhost"')  # fmt: skip
    return ALLOWED


def seccomp_profile_restricted_1_25(meta: Object, spec: Object) -> Result:
    return ALLOWED if is_windows(spec) else seccomp_profile_restricted_1_19(meta, spec)
