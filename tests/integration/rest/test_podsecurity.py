"""PodSecurity admission through the REST API, as kubectl 1.33 and the Python
client see it: a namespace labelled `enforce: restricted` refuses a user's
privileged pod with Kubernetes' message, `warn` prints warnings, `audit`
annotates the audit log, workload templates are warned about, namespace
labels are checked, and the admission configuration file's defaults and
exemptions hold."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane import main as cp_main
from tests.fakes.podsecurity_fixtures import CASES, levels_of, minimal_pod
from tests.harness.kubectl import GO_ENV, NEWEST, OLDEST
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

kubernetes = pytest.importorskip("kubernetes")
client: Any = kubernetes.client
k8s_config: Any = kubernetes.config

pytestmark = pytest.mark.slow

KUBECTL = str(NEWEST)
KUBECTL_OLDEST = str(OLDEST)
ADMISSION = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: privileged, audit: baseline}
    exemptions: {usernames: [ci-bot], namespaces: [kube-system, infra]}
"""
ROOT_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: root}
spec:
  hostNetwork: true
  hostPID: true
  containers:
  - name: c
    image: busybox
    securityContext: {privileged: true}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - name: host
    hostPath: {path: /}
"""


# kubectl create sends protobuf, which the API server reads for reviews only:
# the tests apply manifests instead.
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
  labels: {{pod-security.kubernetes.io/{label}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: dev-edit, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: ci-bot}}
"""


class Plane:
    def __init__(self, running: cp_main.RunningControlPlane, home: Path, audit: Path) -> None:
        self.running = running
        self.home = home
        self.audit = audit
        self.kubeconfig = running.data_dir / "kubeconfig"
        authority = running.server.authority
        assert authority is not None
        self.alice = authority.user_token("alice", ("dev",))
        self.bot = authority.user_token("ci-bot")

    def kubectl(self, *args: str, input: str | None = None, token: str = "",
                binary: str = KUBECTL) -> subprocess.CompletedProcess[str]:  # fmt: skip
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
               "KUBECONFIG": str(self.kubeconfig), **GO_ENV}  # fmt: skip
        extra = [f"--token={token}"] if token else []
        return subprocess.run([binary, *extra, *args], input=input, capture_output=True,
                              text=True, timeout=60, env=env)  # fmt: skip

    def admin(self, *args: str, input: str | None = None) -> str:
        done = self.kubectl(*args, input=input)
        assert done.returncode == 0, done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    base = tmp_path_factory.mktemp("psa")
    (base / "admission.yaml").write_text(ADMISSION)
    audit = base / "audit.log"
    args = cp_main.build_parser().parse_args(
        ["--listen", f"127.0.0.1:{free_port()}", "--data-dir", str(base / "cp"),
         "--admission-control-config-file", str(base / "admission.yaml"),
         "--audit-log-path", str(audit), "--disable", "scheduler",
         "--disable", "volcano-scheduler"]
    )  # fmt: skip
    running = cp_main.start(args)
    try:
        p = Plane(running, base, audit)
        for ns, label in (("strict", "enforce: restricted"), ("base", "enforce: baseline"),
                          ("loud", "warn: baseline"), ("infra", "enforce: restricted")):  # fmt: skip
            p.admin("apply", "-f", "-", input=NAMESPACE.format(ns=ns, label=label))
        yield p
    finally:
        running.stop()


def test_a_privileged_pod_is_refused_in_a_restricted_namespace(plane: Plane) -> None:
    """The attack: a user with `edit` runs a host-root pod where enforce is restricted."""
    done = plane.kubectl("apply", "-n", "strict", "-f", "-", input=ROOT_POD, token=plane.alice)
    assert done.returncode != 0
    assert done.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "root" is forbidden: '
        'violates PodSecurity "restricted:latest": host namespaces (hostNetwork=true, '
        'hostPID=true), privileged (container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set '
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
        '"c" must set securityContext.capabilities.drop=["ALL"]), restricted volume types '
        '(volume "host" uses restricted volume type "hostPath"), runAsNonRoot != true (pod or '
        'container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
        'container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")'
    )
    gone = plane.kubectl("get", "pod", "root", "-n", "strict")
    assert "NotFound" in gone.stderr
    base = plane.kubectl("apply", "-n", "base", "-f", "-", input=ROOT_POD, token=plane.alice)
    assert 'violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true, ' \
        "hostPID=true), hostPath volumes" in base.stderr  # fmt: skip


def test_every_check_through_the_python_client(plane: Plane) -> None:
    """Kubernetes' fixture scheme: per check and level, a passing pod is
    admitted and a failing one refused with 403 naming the check (dry run)."""
    api = k8s_config.new_client_from_config(config_file=str(plane.kubeconfig))
    core = client.CoreV1Api(api)
    for level, ns in (("baseline", "base"), ("restricted", "strict")):
        for case in [c for c in CASES if level in levels_of(c)]:
            good = case.passing(minimal_pod(level))
            core.create_namespaced_pod(ns, good, dry_run="All")
            bad = case.failing(minimal_pod(level))
            with pytest.raises(client.ApiException) as refused:
                core.create_namespaced_pod(ns, bad, dry_run="All")
            status = json.loads(refused.value.body)
            reason, detail = case.expected(level)
            assert refused.value.status == 403 and status["reason"] == "Forbidden", case.check
            assert status["message"] == (f'pods "p" is forbidden: violates PodSecurity '
                                         f'"{level}:latest": {reason} ({detail})')  # fmt: skip


def test_warn_mode_prints_warnings_and_lets_the_pod_in(plane: Plane) -> None:
    for binary in (KUBECTL, KUBECTL_OLDEST):
        name = "warned" if binary == KUBECTL else "warned-old"
        pod = ROOT_POD.replace("name: root", f"name: {name}")
        done = plane.kubectl("apply", "-n", "loud", "-f", "-", input=pod, token=plane.alice,
                             binary=binary)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stderr.startswith(
            'Warning: would violate PodSecurity "baseline:latest": host namespaces '
            '(hostNetwork=true, hostPID=true), hostPath volumes (volume "host"), privileged '
            '(container "c" must not set securityContext.privileged=true)'
        ), done.stderr


def test_workload_templates_are_warned_about_not_refused(plane: Plane) -> None:
    pod = yaml.safe_load(ROOT_POD)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
                           "template": {"metadata": {"labels": {"app": "d"}},
                                        "spec": pod["spec"]}}}  # fmt: skip
    done = plane.kubectl("apply", "-n", "loud", "-f", "-", input=json.dumps(deployment),
                         token=plane.alice)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'Warning: would violate PodSecurity "baseline:latest": host namespaces' in done.stderr
    # where enforce is restricted, the Deployment is stored (its pods would be refused)
    done = plane.kubectl("apply", "-n", "strict", "-f", "-", input=json.dumps(deployment),
                         token=plane.alice)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "deployment.apps/d created" in done.stdout


def test_namespace_labels_are_checked_and_raising_enforce_warns(plane: Plane) -> None:
    done = plane.kubectl("label", "namespace", "loud", "pod-security.kubernetes.io/enforce=bogus")
    assert done.returncode != 0
    assert ('The Namespace "loud" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]:'
            ' Invalid value: "bogus": must be one of privileged, baseline, restricted'
            ) in done.stderr  # fmt: skip
    wait_for(lambda: "warned" in plane.admin("get", "pods", "-n", "loud", "-o", "name"), 10)
    done = plane.kubectl("label", "--dry-run=server", "namespace", "loud",
                         "pod-security.kubernetes.io/enforce=baseline")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ('Warning: existing pods in namespace "loud" violate the new PodSecurity enforce level '
            '"baseline:latest"') in done.stderr  # fmt: skip
    assert "Warning: warned (and 1 other pod): host namespaces, hostPath volumes, privileged" \
        in done.stderr  # fmt: skip


def test_exemptions_from_the_configuration_file(plane: Plane) -> None:
    for ns, token in (("strict", plane.bot), ("infra", plane.alice)):
        done = plane.kubectl("apply", "-n", ns, "-f", "-", "--dry-run=server", input=ROOT_POD,
                             token=token)  # fmt: skip
        assert done.returncode == 0, done.stderr


def test_audit_mode_annotates_the_audit_log(plane: Plane) -> None:
    """The file's default audit level (baseline) applies to an unlabelled namespace."""
    plane.admin(
        "apply", "-f", "-", input="{apiVersion: v1, kind: Namespace, metadata: {name: quiet}}"
    )
    plane.admin("apply", "-n", "quiet", "-f", "-", input=ROOT_POD.replace("root", "audited"))

    def annotated() -> dict[str, Any] | None:
        for line in plane.audit.read_text().splitlines():
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if ref.get("namespace") == "quiet" and ref.get("resource") == "pods" \
                    and event["verb"] == "create":  # fmt: skip
                return dict(event.get("annotations") or {})
        return None

    found = wait_for(annotated, 10)
    assert found is not None
    assert found["pod-security.kubernetes.io/enforce-policy"] == "privileged:latest"
    assert found["pod-security.kubernetes.io/audit-violations"].startswith(
        'would violate PodSecurity "baseline:latest": host namespaces (hostNetwork=true'
    )
