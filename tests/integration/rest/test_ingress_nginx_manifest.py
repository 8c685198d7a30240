"""ingress-nginx's own install manifest, in full and unchanged, on a control
plane started with `--disable ingress` (k3s' `--disable traefik`, the way a
user hands Ingress over to another controller).

The manifest is upstream's `deploy/static/provider/cloud/deploy.yaml` of tag
`controller-v1.15.1` (the one its docs `kubectl apply`), read at run time
from a git mirror of github.com/kubernetes/ingress-nginx in
SKIFF_UPSTREAM_MIRRORS (tests/harness/upstream.py); nothing fetched is
committed here. Without one the tests skip, saying so. What they show, with kubectl 1.33 by
its versioned path: every document (Namespace, ServiceAccounts, Roles,
ClusterRoles and their bindings, ConfigMap, the LoadBalancer and admission
Services, the Deployment, both Jobs, the IngressClass `nginx` and the
ValidatingWebhookConfiguration) applies client-side, then with the
documented server-side upgrade, and server-side from scratch; what is stored
is what was sent (`kubectl diff` finds nothing); the Deployment and the Jobs
get their pods; its ServiceAccounts may do what its RBAC grants. Its
controller image cannot run here (no public registry), so its webhook is
never called for real: with failurePolicy Fail and no pod behind its
Service, the API server refuses Ingresses, as kube-apiserver does. Skiff's
controller, disabled, makes no IngressClass and leaves Ingresses alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane import main as cp_main
from tests.harness import upstream
from tests.harness.ports import free_port
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

TAG = "controller-v1.15.1"
PATH = "deploy/static/provider/cloud/deploy.yaml"
NS = "ingress-nginx"
CONTROLLER_SA = f"system:serviceaccount:{NS}:ingress-nginx"
ADMISSION_SA = f"system:serviceaccount:{NS}:ingress-nginx-admission"
# The documents of the manifest, in its order.
KINDS = [
    "Namespace", "ServiceAccount", "ServiceAccount", "Role", "Role", "ClusterRole",
    "ClusterRole", "RoleBinding", "RoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
    "ConfigMap", "Service", "Service", "Deployment", "Job", "Job", "IngressClass",
    "ValidatingWebhookConfiguration",
]  # fmt: skip


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = upstream.show("kubernetes/ingress-nginx", TAG, PATH)
    path = tmp_path_factory.mktemp("ingress-nginx") / "deploy.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A control plane with skiff's ingress controller disabled."""
    base = tmp_path_factory.mktemp("rest-nginx")
    port = free_port()
    args = cp_main.build_parser().parse_args(
        ["--listen", f"127.0.0.1:{port}", "--data-dir", str(base / "cp"),
         "--bookmark-interval", "0.5", "--disable", "ingress"]
    )  # fmt: skip
    running = cp_main.start(args)
    try:
        yield Cluster(running, base / "cp" / "kubeconfig", port, base)
    finally:
        running.stop()


def kinds(cluster: Cluster, manifest: Path) -> list[str]:
    """The kinds of the manifest's objects as the server has them, in order."""
    got = json.loads(cluster.kubectl("get", "-f", str(manifest), "-o", "json").stdout)
    return [i["kind"] for i in got["items"]]


def applied(cluster: Cluster, manifest: Path, *flags: str) -> None:
    done = cluster.kubectl("apply", *flags, "-f", str(manifest), timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    problems = [line for line in done.stderr.splitlines()
                if "rror" in line or "invalid" in line or "failed" in line]  # fmt: skip
    assert problems == [], done.stderr
    assert len(done.stdout.splitlines()) == len(KINDS), done.stdout


def unchanged(cluster: Cluster, manifest: Path, *flags: str) -> None:
    """`kubectl diff` (a dry-run apply compared with what is stored) finds nothing."""
    done = cluster.kubectl("diff", *flags, "-f", str(manifest), timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def gone(cluster: Cluster, manifest: Path) -> None:
    cluster.kubectl("delete", "-f", str(manifest), "--ignore-not-found", "--wait=false",
                    timeout=120)  # fmt: skip

    def deleted() -> bool:
        done = cluster.kubectl("get", "namespace", NS, check=False)
        return done.returncode != 0 and "NotFound" in done.stderr

    wait_for(deleted, timeout=60, interval=0.3, message=f"namespace {NS} deleted")


def can(cluster: Cluster, who: str, *what: str) -> bool:
    done = cluster.kubectl("auth", "can-i", "--as", who, *what, check=False)
    return done.stdout.strip() == "yes"


def pods_of(cluster: Cluster, selector: str) -> list[dict[str, Any]]:
    got = json.loads(cluster.kubectl("get", "pods", "-n", NS, "-l", selector, "-o", "json").stdout)
    items: list[dict[str, Any]] = got["items"]
    return items


INGRESS = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: NAME, namespace: default}
spec:
  CLASS
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
"""


def ingress(name: str, class_name: str = "") -> str:
    cls = f"ingressClassName: {class_name}" if class_name else ""
    return INGRESS.replace("NAME", name).replace("CLASS", cls)


def test_applies_in_full_client_side_then_server_side(cluster: Cluster, manifest: Path) -> None:
    applied(cluster, manifest)
    assert kinds(cluster, manifest) == KINDS
    unchanged(cluster, manifest)
    # The documented upgrade of a client-side install, then again: no conflict.
    applied(cluster, manifest, "--server-side", "--force-conflicts")
    applied(cluster, manifest, "--server-side")
    unchanged(cluster, manifest, "--server-side")

    # Its workloads run as far as they can here: the Deployment's pod and the
    # Jobs' pods are made (no node runs them: the images are not reachable).
    for selector in ("app.kubernetes.io/component=controller",
                     "batch.kubernetes.io/job-name=ingress-nginx-admission-create",
                     "batch.kubernetes.io/job-name=ingress-nginx-admission-patch"):  # fmt: skip
        wait_for(lambda s=selector: pods_of(cluster, s), timeout=60, interval=0.3,  # type: ignore[misc]
                 message=f"pods of {selector}")  # fmt: skip
    [pod] = pods_of(cluster, "app.kubernetes.io/component=controller")
    assert pod["spec"]["serviceAccountName"] == "ingress-nginx"
    assert pod["spec"]["containers"][0]["args"][3] == "--controller-class=k8s.io/ingress-nginx"

    # Its RBAC grants what its controller and its certificate Jobs need, no more.
    assert can(cluster, CONTROLLER_SA, "list", "ingresses.networking.k8s.io", "-A")
    assert can(
        cluster, CONTROLLER_SA, "update", "ingresses", "--subresource=status", "-n", "default"
    )
    assert can(cluster, CONTROLLER_SA, "update", "leases/ingress-nginx-leader", "-n", NS)
    assert not can(cluster, CONTROLLER_SA, "update", "leases/other", "-n", NS)
    assert can(cluster, CONTROLLER_SA, "list", "endpointslices.discovery.k8s.io", "-A")
    assert can(cluster, ADMISSION_SA, "create", "secrets", "-n", NS)
    assert not can(cluster, ADMISSION_SA, "create", "secrets", "-n", "default")
    assert can(cluster, ADMISSION_SA, "update",
               "validatingwebhookconfigurations/ingress-nginx-admission")  # fmt: skip

    # Its webhook is enforced; with no controller pod behind its Service it
    # cannot answer, and failurePolicy Fail refuses the Ingress.
    refused = cluster.kubectl("apply", "-f", "-", input=ingress("early", "nginx"), check=False)
    assert refused.returncode != 0
    assert 'failed calling webhook "validate.nginx.ingress.kubernetes.io"' in refused.stderr
    assert ('no endpoints available for service "ingress-nginx-controller-admission"'
            in refused.stderr)  # fmt: skip

    gone(cluster, manifest)
    # Server-side from scratch, and again.
    applied(cluster, manifest, "--server-side")
    assert kinds(cluster, manifest) == KINDS
    applied(cluster, manifest, "--server-side")
    unchanged(cluster, manifest, "--server-side")
    gone(cluster, manifest)


def test_skiff_disabled_leaves_ingresses_to_ingress_nginx(cluster: Cluster, manifest: Path) -> None:
    applied(cluster, manifest)
    try:
        # The controller manager runs (its Deployment controller made the
        # ReplicaSet), and made no IngressClass of skiff's.
        wait_for(lambda: cluster.kubectl("get", "rs", "-n", NS, "-o", "name").stdout,
                 timeout=60, interval=0.3, message="ingress-nginx's ReplicaSet")  # fmt: skip
        classes = cluster.kubectl("get", "ingressclass", "-o", "name").stdout.split()
        assert classes == ["ingressclass.networking.k8s.io/nginx"]
        # What the certificate Job would do once it ran: its webhook out of
        # the way, Ingresses of class nginx are admitted, and left to it.
        cluster.kubectl("delete", "validatingwebhookconfiguration", "ingress-nginx-admission")
        wait_for(lambda: cluster.kubectl("apply", "-f", "-", input=ingress("shop", "nginx"),
                                         check=False).returncode == 0,
                 timeout=10, interval=0.1, message="Ingress admitted")  # fmt: skip
        # nginx is not the default class: a class-less Ingress stays class-less.
        cluster.kubectl("apply", "-f", "-", input=ingress("plain"))
        for name, want in (("shop", "nginx"), ("plain", None)):
            got = json.loads(cluster.kubectl("get", "ingress", name, "-o", "json").stdout)
            assert got["spec"].get("ingressClassName") == want
            assert got.get("status", {}).get("loadBalancer", {}) == {}
        events = json.loads(cluster.kubectl("get", "events", "-o", "json").stdout)["items"]
        assert [e for e in events if e["involvedObject"].get("kind") == "Ingress"] == []
    finally:
        cluster.kubectl("delete", "ingress", "shop", "plain", "--ignore-not-found")
        gone(cluster, manifest)
