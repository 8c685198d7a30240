"""Which checks run for a level and version, in which order (policy/registry.go).

Every check has an id, a level and versions (the first policy version each
function applies to). For a policy version the evaluator takes each check's
newest function not newer than it; `latest`, and any version past the
newest a check knows, is the newest. Baseline runs the baseline checks;
restricted runs the restricted ones plus the baseline ones no restricted
check overrides at that version (restrictedVolumes overrides
hostPathVolumes, capabilities_restricted capabilities_baseline and
seccompProfile_restricted seccompProfile_baseline). Results come in
Kubernetes' order: baseline check ids sorted, then restricted ids sorted, so
messages read as kube-apiserver's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from controlplane.apiserver.podsecurity import checks as b
from controlplane.apiserver.podsecurity import checks_restricted as r
from controlplane.apiserver.podsecurity.checks import CheckFn, Object, Result
from controlplane.apiserver.podsecurity.levels import (
    BASELINE,
    PRIVILEGED,
    RESTRICTED,
    LevelVersion,
)


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    versions: tuple[tuple[int, CheckFn], ...]  # (first v1.N it applies to, function)
    overrides: tuple[str, ...] = field(default=())  # baseline checks it replaces


CHECKS: tuple[Check, ...] = (
    Check("allowPrivilegeEscalation", RESTRICTED,
          ((8, r.allow_privilege_escalation_1_8), (25, r.allow_privilege_escalation_1_25))),
    Check("appArmorProfile", BASELINE, ((0, b.app_armor_profile_1_0),)),
    Check("capabilities_baseline", BASELINE, ((0, b.capabilities_baseline_1_0),)),
    Check("capabilities_restricted", RESTRICTED,
          ((22, r.capabilities_restricted_1_22), (25, r.capabilities_restricted_1_25)),
          ("capabilities_baseline",)),
    Check("hostNamespaces", BASELINE, ((0, b.host_namespaces_1_0),)),
    Check("hostPathVolumes", BASELINE, ((0, b.host_path_volumes_1_0),)),
    Check("hostPorts", BASELINE, ((0, b.host_ports_1_0),)),
    Check("hostProbesAndHostLifecycle", BASELINE, ((34, b.host_probes_and_host_lifecycle_1_34),)),
    Check("privileged", BASELINE, ((0, b.privileged_1_0),)),
    Check("procMount", BASELINE, ((0, b.proc_mount_1_0),)),
    Check("restrictedVolumes", RESTRICTED, ((0, r.restricted_volumes_1_0),), ("hostPathVolumes",)),
    Check("runAsNonRoot", RESTRICTED, ((0, r.run_as_non_root_1_0),)),
    Check("runAsUser", RESTRICTED, ((23, r.run_as_user_1_23),)),
    Check("seLinuxOptions", BASELINE, ((0, b.selinux_options_1_0), (31, b.selinux_options_1_31))),
    Check("seccompProfile_baseline", BASELINE,
          ((0, b.seccomp_profile_baseline_1_0), (19, b.seccomp_profile_baseline_1_19))),
    Check("seccompProfile_restricted", RESTRICTED,
          ((19, r.seccomp_profile_restricted_1_19), (25, r.seccomp_profile_restricted_1_25)),
          ("seccompProfile_baseline",)),
    Check("sysctls", BASELINE, ((0, b.sysctls_1_0), (27, b.sysctls_1_27), (29, b.sysctls_1_29),
                                (32, b.sysctls_1_32))),
    Check("windowsHostProcess", BASELINE, ((0, b.windows_host_process_1_0),)),
)  # fmt: skip


def _at(check: Check, minor: int) -> CheckFn | None:
    found = None
    for first, fn in check.versions:
        if first <= minor:
            found = fn
    return found


class Evaluator:
    """The checks of each (level, v1.N) laid out once; `evaluate` runs them."""

    def __init__(self, checks: Sequence[Check] = CHECKS) -> None:
        self.max_minor = max(first for c in checks for first, _ in c.versions)
        ordered = sorted((c for c in checks if c.level == BASELINE), key=lambda c: c.id)
        ordered += sorted((c for c in checks if c.level == RESTRICTED), key=lambda c: c.id)
        self._table: dict[tuple[str, int], tuple[CheckFn, ...]] = {}
        for minor in range(self.max_minor + 1):
            overridden = {o for c in checks if c.level == RESTRICTED and _at(c, minor)
                          for o in c.overrides}  # fmt: skip
            for level in (BASELINE, RESTRICTED):
                fns = []
                for c in ordered:
                    fn = _at(c, minor)
                    if fn is None or (c.level == RESTRICTED and level == BASELINE):
                        continue
                    if level == RESTRICTED and c.id in overridden:
                        continue
                    fns.append(fn)
                self._table[(level, minor)] = tuple(fns)

    def evaluate(self, lv: LevelVersion, meta: Object, spec: Object) -> list[Result]:
        if lv.level == PRIVILEGED:
            return []
        minor = self.max_minor if lv.version.latest else min(lv.version.minor, self.max_minor)
        return [fn(meta, spec) for fn in self._table[(lv.level, minor)]]


@dataclass(frozen=True)
class Aggregate:
    """The forbidden results of one evaluation (AggregateCheckResult)."""

    reasons: tuple[str, ...] = ()
    details: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.reasons

    def reason(self) -> str:
        """`host ports, privileged` (a namespace's pods, summed up)."""
        return ", ".join(self.reasons)

    def detail(self) -> str:
        """`host namespaces (hostNetwork=true), privileged (container "c" must not ...)`."""
        return ", ".join(
            f"{r} ({d})" if d else r for r, d in zip(self.reasons, self.details, strict=True)
        )


def aggregate(results: Sequence[Result]) -> Aggregate:
    bad = [res for res in results if not res.allowed]
    return Aggregate(tuple(res.reason or "unknown forbidden reason" for res in bad),
                     tuple(res.detail for res in bad))  # fmt: skip
