"""Every Pod Security Standards check, one passing and one failing pod per check
and level (Kubernetes' fixture scheme), with kube-apiserver's reasons and details,
and the evaluator's versions, overrides and order."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.apiserver.podsecurity.evaluator import Aggregate, Evaluator, aggregate
from controlplane.apiserver.podsecurity.levels import LevelVersion, parse_version
from tests.fakes.podsecurity_fixtures import CASES, Case, levels_of, minimal_pod

EVALUATOR = Evaluator()
PARAMS = [pytest.param(case, level, id=f"{case.check}-{level}")
          for case in CASES for level in levels_of(case)]  # fmt: skip


def evaluate(level: str, pod: dict[str, Any], version: str = "latest") -> Aggregate:
    lv = LevelVersion(level, parse_version(version))
    return aggregate(EVALUATOR.evaluate(lv, pod.get("metadata") or {}, pod["spec"]))


def test_every_check_has_fixtures() -> None:
    from controlplane.apiserver.podsecurity.evaluator import CHECKS

    assert {c.id for c in CHECKS} == {case.check for case in CASES}


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_the_minimal_pod_of_a_level_passes_it(level: str) -> None:
    assert evaluate(level, minimal_pod(level)).allowed


def test_the_minimal_baseline_pod_fails_restricted_with_kubernetes_message() -> None:
    result = evaluate("restricted", minimal_pod("baseline"))
    assert result.detail() == (
        'allowPrivilegeEscalation != false (containers "initcontainer1", "container1" must set '
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "
        '"initcontainer1", "container1" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or containers "initcontainer1", "container1" must set '
        'securityContext.runAsNonRoot=true), seccompProfile (pod or containers "initcontainer1", '
        '"container1" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    )


@pytest.mark.parametrize(("case", "level"), PARAMS)
def test_passing_pod_passes(case: Case, level: str) -> None:
    result = evaluate(level, case.passing(minimal_pod(level)))
    assert result.allowed, result.detail()


@pytest.mark.parametrize(("case", "level"), PARAMS)
def test_failing_pod_fails_with_the_reason_and_detail(case: Case, level: str) -> None:
    result = evaluate(level, case.failing(minimal_pod(level)))
    reason, detail = case.expected(level)
    assert result.reasons == (reason,)
    assert result.details == (detail,)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.level == "restricted"], ids=lambda c: c.check
)
def test_a_restricted_check_does_not_apply_at_baseline(case: Case) -> None:
    assert evaluate("baseline", case.failing(minimal_pod("restricted"))).allowed


def test_the_attack_pod_fails_baseline_in_kubernetes_order() -> None:
    pod = minimal_pod("baseline")
    pod["spec"].update(hostNetwork=True, hostPID=True,
                       volumes=[{"name": "root", "hostPath": {"path": "/"}}])  # fmt: skip
    pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    assert evaluate("baseline", pod).detail() == (
        'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "root"), '
        'privileged (container "container1" must not set securityContext.privileged=true)'
    )


def test_versions_pick_the_check_of_their_time() -> None:
    pod = minimal_pod("restricted")
    pod["spec"]["securityContext"]["sysctls"] = [{"name": "net.ipv4.tcp_keepalive_time"}]
    assert not evaluate("baseline", pod, "v1.28").allowed  # added to the safe set in 1.29
    assert evaluate("baseline", pod, "v1.29").allowed
    # restricted before 1.22 did not ask for drop ALL, but still the baseline capabilities
    pod = minimal_pod("restricted")
    for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        c["securityContext"]["capabilities"] = {"add": ["SYS_ADMIN"]}
    assert evaluate("restricted", pod, "v1.21").reasons == ("non-default capabilities",)
    assert evaluate("restricted", pod, "v1.22").reasons == ("unrestricted capabilities",)
    # before 1.19 seccomp was an annotation
    pod = minimal_pod("baseline")
    pod["metadata"]["annotations"] = {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}
    assert evaluate("baseline", pod, "v1.18").detail() == (
        'seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")'
    )
    assert evaluate("baseline", pod, "v1.19").allowed
    # a version newer than any check is latest
    bad = CASES[0].failing(minimal_pod("baseline"))
    assert evaluate("baseline", bad, "v1.999") == evaluate("baseline", bad, "latest")


def test_values_the_agent_reads_loosely_are_refused() -> None:
    """securityContext is not typed by validation: what the agent would take as
    privileged or root is refused, whatever its JSON type."""
    pod = minimal_pod("restricted")
    pod["spec"]["containers"][0]["securityContext"].update(privileged="false", runAsUser="0")
    result = evaluate("restricted", pod)
    assert result.reasons == ("privileged", "runAsUser=0")
    pod = minimal_pod("restricted")
    pod["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = "false"
    assert evaluate("restricted", pod).reasons == ("allowPrivilegeEscalation != false",)


def test_user_namespace_pods_get_no_relaxation() -> None:
    """skiff runs no user namespaces: hostUsers false would still be real root."""
    pod = minimal_pod("restricted")
    pod["spec"]["hostUsers"] = False
    pod["spec"]["securityContext"]["runAsNonRoot"] = False
    pod["spec"]["containers"][0]["securityContext"]["procMount"] = "Unmasked"
    assert evaluate("restricted", pod).reasons == ("procMount", "runAsNonRoot != true")
