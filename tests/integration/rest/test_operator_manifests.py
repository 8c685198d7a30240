"""Widely used operators' install manifests and example objects apply
unchanged with kubectl 1.33 (by its versioned path), client-side and
server-side: Argo CD, Traefik, cert-manager, Kyverno and Volcano.

The manifests are excerpts of the upstream files (data/operators/*.yaml.gz,
each document unchanged; the header of each names its source and version):
every CustomResourceDefinition the examples need, those that once failed,
and Argo CD's Services (kubectl's client-side to server-side migration
refused them). Left out: the operators' Deployments, RBAC and ConfigMaps
(they applied from the first), and their admission webhook configurations,
whose Services have no pods here: with failurePolicy Fail they refuse every
object they match (Volcano's own queue and cronjob webhooks), as
kube-apiserver would.

As on Kubernetes, a client-side apply of a CRD whose schema is over 256 KiB
(Argo CD's ApplicationSet, Kyverno's ClusterPolicy) is refused for its
last-applied annotation; the operators' docs apply those server-side
(`kubectl apply --server-side --force-conflicts`), and so does the test."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

DATA = Path(__file__).parent / "data" / "operators"
OPERATORS = ["argocd", "traefik", "cert-manager", "kyverno", "volcano"]
# CRDs a client-side apply refuses, as Kubernetes does (the annotation's limit).
TOO_LONG = {"argocd": ["applicationsets.argoproj.io"], "kyverno": ["clusterpolicies.kyverno.io"]}
NAMESPACE = {"argocd": "argocd"}


@pytest.fixture
def files(operator: str, tmp_path: Path, cluster: Cluster) -> Iterator[tuple[Path, Path, str]]:
    """(the install excerpt, the examples, the namespace); every CRD (and
    so every custom object) removed afterwards."""
    manifest = tmp_path / f"{operator}.yaml"
    manifest.write_text(gzip.decompress((DATA / f"{operator}.yaml.gz").read_bytes()).decode())
    ns = NAMESPACE.get(operator, "default")
    if ns != "default":
        cluster.kubectl("create", "namespace", ns)
    try:
        yield manifest, DATA / f"{operator}-examples.yaml", ns
    finally:
        cluster.kubectl("delete", "-n", ns, "-f", str(manifest), "--ignore-not-found",
                        "--wait=false", check=False)  # fmt: skip
        if ns != "default":
            cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def applied(cluster: Cluster, ns: str, path: Path, *flags: str) -> str:
    """kubectl apply; its stderr (warnings), which must name no failure."""
    done = cluster.kubectl("apply", "-n", ns, *flags, "-f", str(path), timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "failed" not in done.stderr and "error" not in done.stderr.lower(), done.stderr
    return done.stderr


def served(cluster: Cluster, ns: str, examples: Path) -> None:
    """Every example object is there, read back at its own apiVersion."""
    got = json.loads(cluster.kubectl("get", "-n", ns, "-f", str(examples), "-o", "json").stdout)
    items = got.get("items", [got])
    wanted = [
        line.split(":", 1)[1].strip()
        for line in examples.read_text().splitlines()
        if line.startswith("apiVersion:")
    ]
    assert [i["apiVersion"] for i in items] == wanted


@pytest.mark.parametrize("operator", OPERATORS)
def test_client_side_then_the_documented_server_side_upgrade(
    cluster: Cluster, operator: str, files: tuple[Path, Path, str]
) -> None:
    manifest, examples, ns = files
    done = cluster.kubectl("apply", "-n", ns, "-f", str(manifest), timeout=300, check=False)
    refused = TOO_LONG.get(operator, [])
    for name in refused:
        too_long = f'"{name}" is invalid: metadata.annotations: Too long: must have at most'
        assert f"{too_long} 262144 bytes" in done.stderr, done.stderr
    failures = [line for line in done.stderr.splitlines() if "rror" in line or "invalid" in line]
    assert len(failures) == len(refused), done.stderr
    # The operators' documented way: server-side, taking over kubectl's fields.
    applied(cluster, ns, manifest, "--server-side", "--force-conflicts")
    for name in refused:
        cluster.kubectl("get", "crd", name)
    applied(cluster, ns, examples)
    served(cluster, ns, examples)
    applied(cluster, ns, examples, "--server-side", "--force-conflicts")
    served(cluster, ns, examples)
    if operator == "argocd":  # the Services kept their cluster IPs through the migration
        svc = json.loads(cluster.kubectl("get", "-n", ns, "svc", "argocd-server", "-o",
                                         "json").stdout)  # fmt: skip
        assert svc["spec"]["clusterIP"] and svc["spec"]["clusterIPs"] == [svc["spec"]["clusterIP"]]


@pytest.mark.parametrize("operator", OPERATORS)
def test_server_side(cluster: Cluster, operator: str, files: tuple[Path, Path, str]) -> None:
    manifest, examples, ns = files
    applied(cluster, ns, manifest, "--server-side")
    applied(cluster, ns, examples, "--server-side")
    served(cluster, ns, examples)
    applied(cluster, ns, examples, "--server-side")  # again: unchanged, no conflict
