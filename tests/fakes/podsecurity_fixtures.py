"""Pods for every Pod Security Standards check: passing and failing, per level.

Shaped as Kubernetes' own fixtures (k8s.io/pod-security-admission/test): a
minimal valid pod per level (baseline: an init container and a container;
restricted: plus runAsNonRoot, allowPrivilegeEscalation=false, a
RuntimeDefault seccomp profile and capabilities dropped), and for each check
generators that turn it into pods the check allows and pods it refuses. A
baseline check's fixtures hold at restricted too. Each failing pod carries
the reason and detail kube-apiserver gives for it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Pod = dict[str, Any]


def minimal_pod(level: str) -> Pod:
    pod: Pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "initContainers": [{"name": "initcontainer1", "image": "busybox"}],
            "containers": [{"name": "container1", "image": "busybox"}],
        },
    }
    if level == "restricted":
        pod["spec"]["securityContext"] = {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        }
        for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]:
            c["securityContext"] = {"allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}}  # fmt: skip
    return pod


def _tweak(change: Callable[[Pod], None]) -> Callable[[Pod], Pod]:
    def make(base: Pod) -> Pod:
        pod = copy.deepcopy(base)
        change(pod)
        return pod

    return make


def _sc(c: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = c.setdefault("securityContext", {})
    return found


def _c0(pod: Pod) -> dict[str, Any]:
    found: dict[str, Any] = pod["spec"]["containers"][0]
    return found


def _psc(pod: Pod) -> dict[str, Any]:
    found: dict[str, Any] = pod["spec"].setdefault("securityContext", {})
    return found


@dataclass(frozen=True)
class Case:
    check: str
    level: str  # the check's own level
    passing: Callable[[Pod], Pod]
    failing: Callable[[Pod], Pod]
    reason: str
    detail: str
    # At restricted, where a restricted check overrides this one: its (reason, detail).
    restricted: tuple[str, str] | None = None

    def expected(self, level: str) -> tuple[str, str]:
        if level == "restricted" and self.restricted is not None:
            return self.restricted
        return self.reason, self.detail


CASES: tuple[Case, ...] = (
    Case("privileged", "baseline",
         _tweak(lambda p: _sc(_c0(p)).update(privileged=False)),
         _tweak(lambda p: _sc(_c0(p)).update(privileged=True)),
         "privileged", 'container "container1" must not set securityContext.privileged=true'),
    Case("hostNamespaces", "baseline",
         _tweak(lambda p: p["spec"].update(hostNetwork=False, hostPID=False, hostIPC=False)),
         _tweak(lambda p: p["spec"].update(hostNetwork=True, hostIPC=True)),
         "host namespaces", "hostNetwork=true, hostIPC=true"),
    Case("hostPathVolumes", "baseline",
         _tweak(lambda p: p["spec"].update(volumes=[{"name": "v", "emptyDir": {}}])),
         _tweak(lambda p: p["spec"].update(volumes=[{"name": "root", "hostPath": {"path": "/"}}])),
         "hostPath volumes", 'volume "root"',
         ("restricted volume types", 'volume "root" uses restricted volume type "hostPath"')),
    Case("hostPorts", "baseline",
         _tweak(lambda p: _c0(p).update(ports=[{"containerPort": 80}])),
         _tweak(lambda p: _c0(p).update(ports=[{"containerPort": 80, "hostPort": 8080}])),
         "hostPort", 'container "container1" uses hostPort 8080'),
    Case("capabilities_baseline", "baseline",
         _tweak(lambda p: _sc(_c0(p)).setdefault("capabilities", {}).update(
             add=["NET_BIND_SERVICE"])),
         _tweak(lambda p: _sc(_c0(p)).setdefault("capabilities", {}).update(
             add=["SYS_ADMIN", "NET_RAW"])),
         "non-default capabilities",
         'container "container1" must not include "NET_RAW", "SYS_ADMIN" in '
         "securityContext.capabilities.add",
         ("unrestricted capabilities", 'container "container1" must not include "NET_RAW", '
          '"SYS_ADMIN" in securityContext.capabilities.add')),
    Case("procMount", "baseline",
         _tweak(lambda p: _sc(_c0(p)).update(procMount="Default")),
         _tweak(lambda p: _sc(_c0(p)).update(procMount="Unmasked")),
         "procMount", 'container "container1" must not set securityContext.procMount to "Unmasked"'),
    Case("seLinuxOptions", "baseline",
         _tweak(lambda p: _psc(p).update(seLinuxOptions={"type": "container_t", "level": "s0"})),
         _tweak(lambda p: _psc(p).update(seLinuxOptions={"type": "spc_t", "user": "root"})),
         "seLinuxOptions",
         'pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set'),
    Case("seccompProfile_baseline", "baseline",
         _tweak(lambda p: _psc(p).update(seccompProfile={"type": "RuntimeDefault"})),
         _tweak(lambda p: _sc(_c0(p)).update(seccompProfile={"type": "Unconfined"})),
         "seccompProfile",
         'container "container1" must not set securityContext.seccompProfile.type to "Unconfined"'),
    Case("appArmorProfile", "baseline",
         _tweak(lambda p: _psc(p).update(appArmorProfile={"type": "RuntimeDefault"})),
         _tweak(lambda p: _psc(p).update(appArmorProfile={"type": "Unconfined"})),
         "forbidden AppArmor profile", 'pod must not set AppArmor profile type to "Unconfined"'),
    Case("sysctls", "baseline",
         _tweak(lambda p: _psc(p).update(sysctls=[{"name": "net.ipv4.tcp_syncookies",
                                                   "value": "1"}])),
         _tweak(lambda p: _psc(p).update(sysctls=[{"name": "kernel.panic", "value": "1"}])),
         "forbidden sysctls", "kernel.panic"),
    Case("windowsHostProcess", "baseline",
         _tweak(lambda p: _psc(p).update(windowsOptions={"hostProcess": False})),
         _tweak(lambda p: _psc(p).update(windowsOptions={"hostProcess": True})),
         "hostProcess", "pod must not set securityContext.windowsOptions.hostProcess=true"),
    Case("hostProbesAndHostLifecycle", "baseline",
         _tweak(lambda p: _c0(p).update(livenessProbe={"httpGet": {"port": 80}})),
         _tweak(lambda p: _c0(p).update(livenessProbe={"httpGet": {"port": 80,
                                                                   "host": "10.0.0.1"}})),
         "probe or lifecycle host",
         'container "container1" uses probe or lifecycle host "10.0.0.1"'),
    Case("allowPrivilegeEscalation", "restricted",
         _tweak(lambda p: None),
         _tweak(lambda p: _sc(_c0(p)).update(allowPrivilegeEscalation=True)),
         "allowPrivilegeEscalation != false",
         'container "container1" must set securityContext.allowPrivilegeEscalation=false'),
    Case("capabilities_restricted", "restricted",
         _tweak(lambda p: _sc(_c0(p))["capabilities"].update(add=["NET_BIND_SERVICE"])),
         _tweak(lambda p: _sc(_c0(p)).update(capabilities={"add": ["CHOWN"]})),
         "unrestricted capabilities",
         'container "container1" must set securityContext.capabilities.drop=["ALL"]; '
         'container "container1" must not include "CHOWN" in securityContext.capabilities.add'),
    Case("restrictedVolumes", "restricted",
         _tweak(lambda p: p["spec"].update(volumes=[
             {"name": "a", "configMap": {"name": "c"}}, {"name": "b", "secret": {"secretName": "s"}},
             {"name": "c", "persistentVolumeClaim": {"claimName": "x"}},
             {"name": "d", "projected": {"sources": []}}, {"name": "e", "emptyDir": {}}])),
         _tweak(lambda p: p["spec"].update(volumes=[{"name": "n", "nfs": {"server": "s",
                                                                          "path": "/"}}])),
         "restricted volume types", 'volume "n" uses restricted volume type "nfs"'),
    Case("runAsNonRoot", "restricted",
         _tweak(lambda p: _sc(_c0(p)).update(runAsNonRoot=True)),
         _tweak(lambda p: _psc(p).pop("runAsNonRoot")),
         "runAsNonRoot != true",
         'pod or containers "initcontainer1", "container1" must set '
         "securityContext.runAsNonRoot=true"),
    Case("runAsUser", "restricted",
         _tweak(lambda p: _psc(p).update(runAsUser=1000)),
         _tweak(lambda p: _sc(_c0(p)).update(runAsUser=0)),
         "runAsUser=0", 'container "container1" must not set runAsUser=0'),
    Case("seccompProfile_restricted", "restricted",
         _tweak(lambda p: _sc(_c0(p)).update(seccompProfile={"type": "Localhost",
                                                              "localhostProfile": "p.json"})),
         _tweak(lambda p: _psc(p).pop("seccompProfile")),
         "seccompProfile",
         'pod or containers "initcontainer1", "container1" must set '
         'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"'),
)  # fmt: skip


def levels_of(case: Case) -> tuple[str, ...]:
    """The levels a case's fixtures hold at (a baseline check's hold at restricted too)."""
    return ("baseline", "restricted") if case.level == "baseline" else ("restricted",)
