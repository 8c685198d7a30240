"""The PodSecurity plugin's decisions: enforce, audit and warn per namespace
labels, workload templates, namespace label changes, exemptions, and its
configuration file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver import admission_context as ctx
from controlplane.apiserver.admission_context import CREATE, UPDATE, Attributes
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.podsecurity import config
from controlplane.apiserver.podsecurity.plugin import PodSecurity
from controlplane.client.errors import Forbidden, Invalid
from tests.fakes.podsecurity_fixtures import minimal_pod

ALICE = Identity("alice", groups=("system:authenticated",))
LABEL = "pod-security.kubernetes.io/"


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {LABEL + k.replace("_", "-"): v
                                                  for k, v in labels.items()}}}  # fmt: skip


def plugin(namespaces: dict[str, dict[str, Any]], pods: list[dict[str, Any]] | None = None,
           cfg: config.PodSecurityConfig | None = None) -> PodSecurity:  # fmt: skip
    return PodSecurity(cfg, namespaces.get, lambda ns: pods or [])


def privileged_pod(name: str = "p") -> dict[str, Any]:
    pod = minimal_pod("baseline")
    pod["metadata"]["name"] = name
    pod["spec"]["hostNetwork"] = True
    return pod


def run(p: PodSecurity, attrs: Attributes) -> ctx.Recorder:
    with ctx.recording() as rec:
        p.validate(attrs)
    return rec


def pod_attrs(pod: dict[str, Any], ns: str = "team", who: Identity = ALICE,
              old: dict[str, Any] | None = None, sub: str = "") -> Attributes:  # fmt: skip
    return Attributes(UPDATE if old else CREATE, "Pod", ns, pod["metadata"]["name"], sub, who,
                      pod, old)  # fmt: skip


def test_enforce_refuses_with_kubernetes_message_and_audits() -> None:
    p = plugin({"team": namespace("team", enforce="baseline", audit="restricted")})
    with ctx.recording() as rec, pytest.raises(Forbidden) as err:
        p.validate(pod_attrs(privileged_pod()))
    assert str(err.value) == ('pods "p" is forbidden: violates PodSecurity "baseline:latest": '
                              "host namespaces (hostNetwork=true)")  # fmt: skip
    assert rec.annotations[LABEL + "enforce-policy"] == "baseline:latest"
    assert rec.annotations[LABEL + "audit-violations"].startswith(
        'would violate PodSecurity "restricted:latest": host namespaces (hostNetwork=true), '
    )
    assert rec.warnings == []  # no warnings on a refused request


def test_warn_and_audit_let_the_pod_through() -> None:
    p = plugin({"team": namespace("team", warn="baseline", warn_version="v1.30",
                                  audit="baseline")})  # fmt: skip
    rec = run(p, pod_attrs(privileged_pod()))
    assert rec.warnings == ['would violate PodSecurity "baseline:v1.30": host namespaces '
                            "(hostNetwork=true)"]  # fmt: skip
    assert rec.annotations[LABEL + "audit-violations"] == (
        'would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true)'
    )


def test_unlabeled_namespace_uses_the_configured_default() -> None:
    assert run(plugin({"team": namespace("team")}), pod_attrs(privileged_pod())).warnings == []
    cfg = config.parse_configuration({
        "apiVersion": "pod-security.admission.config.k8s.io/v1",
        "kind": "PodSecurityConfiguration",
        "defaults": {"enforce": "baseline", "enforce-version": "v1.29"}}, "test")  # fmt: skip
    with pytest.raises(Forbidden, match=r'"baseline:v1\.29"'):
        run(plugin({"team": namespace("team")}, cfg=cfg), pod_attrs(privileged_pod()))


def test_bad_labels_enforce_restricted_and_audit_the_error() -> None:
    p = plugin({"team": namespace("team", enforce="strict")})
    with ctx.recording() as rec, pytest.raises(Forbidden, match='"restricted:latest"'):
        p.validate(pod_attrs(minimal_pod("baseline")))
    assert rec.annotations["error"].startswith("Failed to parse policy: metadata.labels[")


def test_exemptions_skip_everything_and_say_why() -> None:
    cfg = config.parse_configuration({
        "apiVersion": "pod-security.admission.config.k8s.io/v1beta1",
        "kind": "PodSecurityConfiguration",
        "exemptions": {"usernames": ["ci-bot"], "runtimeClasses": ["kata"],
                       "namespaces": ["infra"]}}, "test")  # fmt: skip
    strict = namespace("x", enforce="restricted")
    p = plugin({"team": strict, "infra": strict}, cfg=cfg)
    assert run(p, pod_attrs(privileged_pod(), ns="infra")).annotations == {LABEL + "exempt":
                                                                          "namespace"}  # fmt: skip
    bot = Identity("ci-bot")
    assert run(p, pod_attrs(privileged_pod(), who=bot)).annotations == {LABEL + "exempt": "user"}
    kata = privileged_pod()
    kata["spec"]["runtimeClassName"] = "kata"
    assert run(p, pod_attrs(kata)).annotations[LABEL + "exempt"] == "runtimeClass"
    with pytest.raises(Forbidden):
        run(p, pod_attrs(privileged_pod()))


def test_kube_system_is_exempt_by_default() -> None:
    p = plugin({"kube-system": namespace("kube-system", enforce="restricted")})
    assert run(p, pod_attrs(privileged_pod(), ns="kube-system")).annotations == {
        LABEL + "exempt": "namespace"
    }


def test_status_and_binding_are_not_checked_but_a_spec_change_is() -> None:
    p = plugin({"team": namespace("team", enforce="baseline")})
    good = minimal_pod("baseline")
    run(p, pod_attrs(good, old=good, sub="status"))
    bad = privileged_pod()
    run(p, pod_attrs(bad, old=bad, sub="status"))  # an existing pod's status: not checked
    labelled = dict(bad, metadata={**bad["metadata"], "labels": {"a": "b"}})
    run(p, pod_attrs(labelled, old=bad))  # metadata only: not significant
    with pytest.raises(Forbidden):  # securityContext added by an update
        changed = minimal_pod("baseline")
        changed["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        run(p, pod_attrs(changed, old=good))
    with pytest.raises(Forbidden):  # an image change re-checks the pod, as in Kubernetes
        moved = privileged_pod()
        moved["spec"]["containers"][0]["image"] = "other"
        run(p, pod_attrs(moved, old=bad))


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job",
                                  "CronJob", "ReplicationController", "PodTemplate"])  # fmt: skip
def test_workload_templates_warn_and_audit_but_are_not_refused(kind: str) -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": privileged_pod()["spec"]}
    obj: dict[str, Any] = {"metadata": {"name": "w"}}
    if kind == "PodTemplate":
        obj["template"] = template
    elif kind == "CronJob":
        obj["spec"] = {"jobTemplate": {"spec": {"template": template}}}
    else:
        obj["spec"] = {"template": template}
    p = plugin({"team": namespace("team", enforce="restricted", warn="baseline",
                                  audit="baseline")})  # fmt: skip
    rec = run(p, Attributes(CREATE, kind, "team", "w", "", ALICE, obj))
    assert rec.warnings == ['would violate PodSecurity "baseline:latest": host namespaces '
                            "(hostNetwork=true)"]  # fmt: skip
    assert LABEL + "audit-violations" in rec.annotations


def test_namespace_labels_must_parse() -> None:
    p = plugin({})
    bad = namespace("team", enforce="strict", warn_version="1.29")
    with pytest.raises(Invalid) as err:
        run(p, Attributes(CREATE, "Namespace", "", "team", "", ALICE, bad))
    assert str(err.value) == (
        'Namespace "team" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
        'Invalid value: "strict": must be one of privileged, baseline, restricted; '
        'metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.29": '
        'must be "latest" or "v1.x"'
    )
    # an update that leaves the same bad labels alone is let through
    run(p, Attributes(UPDATE, "Namespace", "", "team", "", ALICE, bad, bad))


def test_raising_enforce_warns_about_existing_pods() -> None:
    pods = [privileged_pod("web-1"), privileged_pod("web-0"), minimal_pod("baseline")]
    for pod in pods[:2]:
        pod["metadata"]["ownerReferences"] = [{"uid": "rs1", "controller": True}]
    p = plugin({}, pods)
    old = namespace("team")
    new = namespace("team", enforce="baseline")
    rec = run(p, Attributes(UPDATE, "Namespace", "", "team", "", ALICE, new, old))
    assert rec.warnings == [
        'existing pods in namespace "team" violate the new PodSecurity enforce level '
        '"baseline:latest"',
        "web-0 (and 1 other pod): host namespaces",
    ]
    # relaxing it (same version) checks nothing
    assert run(p, Attributes(UPDATE, "Namespace", "", "team", "", ALICE, old, new)).warnings == []


def test_exempt_namespace_with_labels_warns_that_they_are_ignored() -> None:
    p = plugin({})
    ns = namespace("kube-system", enforce="restricted")
    rec = run(p, Attributes(CREATE, "Namespace", "", "kube-system", "", ALICE, ns))
    assert rec.warnings == ['namespace "kube-system" is exempt from Pod Security, and the policy '
                            "(enforce=restricted:latest) will be ignored"]  # fmt: skip


def test_configuration_file_inline_and_by_path(tmp_path: Path) -> None:
    (tmp_path / "psa.yaml").write_text(
        "apiVersion: pod-security.admission.config.k8s.io/v1\nkind: PodSecurityConfiguration\n"
        "defaults: {enforce: baseline, audit: restricted, audit-version: v1.25}\n"
        "exemptions: {namespaces: [monitoring]}\n"
    )
    admission = tmp_path / "admission.yaml"
    admission.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
        "plugins:\n- name: NodeRestriction\n- name: PodSecurity\n  path: psa.yaml\n"
    )
    cfg = config.load(admission)
    assert str(cfg.defaults.enforce) == "baseline:latest"
    assert str(cfg.defaults.audit) == "restricted:v1.25"
    assert cfg.exempt_namespaces == {"monitoring"}  # the file's list, not the built-in one
    assert config.load(None).exempt_namespaces == {"kube-system"}


@pytest.mark.parametrize(("body", "problem"), [
    ("defaults: {enforce: strict}", 'defaults.enforce: Invalid value: "strict": must be one of'),
    ("defaults: {warn-version: '1.2'}", 'defaults.warn-version: Invalid value: "1.2": must be'),
    ("exemptions: {namespaces: [Bad_NS]}", 'exemptions.namespaces[0]: Invalid value: "Bad_NS"'),
    ("exemptions: {usernames: [a, a]}", 'exemptions.usernames[1]: Duplicate value: "a"'),
])  # fmt: skip
def test_bad_configuration_names_the_field(tmp_path: Path, body: str, problem: str) -> None:
    admission = tmp_path / "admission.yaml"
    admission.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
        "- name: PodSecurity\n  configuration:\n"
        "    apiVersion: pod-security.admission.config.k8s.io/v1\n"
        "    kind: PodSecurityConfiguration\n    " + body + "\n"
    )
    with pytest.raises(config.ConfigError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        config.load(admission)
