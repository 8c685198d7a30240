"""Widely used operators' install manifests and example objects apply
unchanged with kubectl 1.33 (by its versioned path), client-side and
server-side: Argo CD, Traefik, cert-manager, Kyverno and Volcano.

The manifests are upstream's, read at run time from git mirrors
(tests/harness/upstream.py, SKIFF_UPSTREAM_MIRRORS; without a mirror or its
tag the tests skip, saying so); nothing fetched is committed.

Argo CD's and Volcano's whole static install manifests apply, every document
unchanged (WHOLE: Deployments, RBAC, ConfigMaps, Secrets, Services,
NetworkPolicies, webhook configurations...). For the example objects, the
tests apply the documents they select by kind and name (SOURCES): every
CustomResourceDefinition the examples need and Argo CD's Services (kubectl's
client-side to server-side migration once refused them), without the
operators' admission webhook configurations, whose Services have no pods
here: with failurePolicy Fail they refuse every object they match (Volcano's
own queue and cronjob webhooks), as kube-apiserver would.

The example objects are upstream's too for Argo CD, Kyverno and Volcano
(files of the same tags); Traefik's and cert-manager's are our own
(data/operators/*-examples.yaml), objects of the kinds their docs show.

As on Kubernetes, a client-side apply of a CRD whose schema is over 256 KiB
(Argo CD's ApplicationSet, Kyverno's ClusterPolicy) is refused for its
last-applied annotation; the operators' docs apply those server-side
(`kubectl apply --server-side --force-conflicts`), and so does the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.harness import upstream
from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]

DATA = Path(__file__).parent / "data" / "operators"


@dataclass(frozen=True)
class Source:
    """Where an operator's manifest is upstream: files at a tag, and of them
    the documents kept, by (kind, name) (None: every document)."""

    repo: str
    tag: str
    paths: list[str]
    keep: set[tuple[str, str]] | None = None
    examples: list[str] = field(default_factory=list)  # upstream files; else ours


def _crds(*names: str) -> set[tuple[str, str]]:
    return {("CustomResourceDefinition", n) for n in names}


SOURCES = {
    "argocd": Source(
        "argoproj/argo-cd", "v3.5.1", ["manifests/install.yaml"],
        _crds("applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io")
        | {("Service", "argocd-redis"), ("Service", "argocd-server")},
        ["docs/operator-manual/application.yaml", "docs/operator-manual/project.yaml"],
    ),
    "traefik": Source(
        "traefik/traefik-helm-chart", "v41.3.0",
        [f"traefik/crds/traefik.io_{n}.yaml"
         for n in ("ingressroutes", "ingressroutetcps", "middlewares", "tlsoptions")],
    ),
    "cert-manager": Source(
        "cert-manager/cert-manager", "v1.21.1",
        [f"deploy/crds/{n}.yaml" for n in (
            "acme.cert-manager.io_challenges", "acme.cert-manager.io_orders",
            "cert-manager.io_certificaterequests", "cert-manager.io_certificates",
            "cert-manager.io_clusterissuers", "cert-manager.io_issuers")],
    ),
    "kyverno": Source(
        "kyverno/kyverno", "v1.19.0",
        ["config/crds/kyverno/kyverno.io_clusterpolicies.yaml",
         "config/crds/policies.kyverno.io/policies.kyverno.io_validatingpolicies.yaml"],
        examples=["test/cli/scenarios_to_cli/samples/more/restrict_ingress_classes/policy.yaml",
                  "test/cli/sample-policy-exclusion/vpol.yaml"],
    ),
    "volcano": Source(
        "volcano-sh/volcano", "v1.15.1", ["installer/volcano-development.yaml"],
        _crds("jobs.batch.volcano.sh", "cronjobs.batch.volcano.sh", "commands.bus.volcano.sh",
              "podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"),
        ["example/deployment/queue.yaml", "example/cronjob/cronjob.yaml"],
    ),
}  # fmt: skip
OPERATORS = list(SOURCES)
# CRDs a client-side apply refuses, as Kubernetes does (the annotation's limit).
TOO_LONG = {"argocd": ["applicationsets.argoproj.io"], "kyverno": ["clusterpolicies.kyverno.io"]}
NAMESPACE = {"argocd": "argocd"}


def _written(operator: str, tmp_path: Path) -> tuple[Path, Path]:
    """(the selected install documents, the examples) as files; skips
    without the mirror or its tag."""
    src = SOURCES[operator]
    text = "".join(upstream.show(src.repo, src.tag, p) + "\n---\n" for p in src.paths)
    manifest = tmp_path / f"{operator}.yaml"
    manifest.write_text(upstream.select(text, src.keep))
    if not src.examples:
        return manifest, DATA / f"{operator}-examples.yaml"
    examples = tmp_path / f"{operator}-examples.yaml"
    texts = (upstream.show(src.repo, src.tag, p).rstrip("\n") for p in src.examples)
    examples.write_text("\n---\n".join(texts) + "\n")
    return manifest, examples


@pytest.fixture
def files(operator: str, tmp_path: Path, cluster: Cluster) -> Iterator[tuple[Path, Path, str]]:
    """(the install documents, the examples, the namespace); every CRD (and
    so every custom object) removed afterwards."""
    manifest, examples = _written(operator, tmp_path)
    ns = NAMESPACE.get(operator, "default")
    if ns != "default":
        cluster.kubectl("create", "namespace", ns)
    try:
        yield manifest, examples, ns
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


# Each operator's whole static install manifest, every document unchanged,
# applied as its docs say (Argo CD's into the namespace made for it,
# Volcano's naming its own). cert-manager and Traefik publish theirs from Helm
# charts only (their repositories hold no static manifest at these tags), and
# the mirror of Kyverno lacks its install file's blob: their CRDs only, above.
WHOLE = {
    "argocd": Source("argoproj/argo-cd", "v3.5.1", ["manifests/install.yaml"]),
    "volcano": Source("volcano-sh/volcano", "v1.15.1", ["installer/volcano-development.yaml"]),
}


@pytest.mark.parametrize("operator", list(WHOLE))
def test_the_whole_install_manifest_applies(
    cluster: Cluster, operator: str, tmp_path: Path
) -> None:
    """Deployments, RBAC, ConfigMaps, Secrets, Services, webhook
    configurations, NetworkPolicies...: client-side (the over-long CRDs
    refused as Kubernetes refuses them), then the documented server-side
    upgrade, after which every document is served."""
    src = WHOLE[operator]
    text = "".join(upstream.show(src.repo, src.tag, p) + "\n---\n" for p in src.paths)
    manifest = tmp_path / f"{operator}-install.yaml"
    manifest.write_text(upstream.select(text, None))
    docs = [doc for doc, _ in upstream.documents(text)]
    ns = NAMESPACE.get(operator)
    into = ["-n", ns] if ns else []
    if ns:
        cluster.kubectl("create", "namespace", ns)
    try:
        done = cluster.kubectl("apply", *into, "-f", str(manifest), timeout=300, check=False)
        refused = TOO_LONG.get(operator, [])
        for name in refused:
            assert f'"{name}" is invalid: metadata.annotations: Too long' in done.stderr, (
                done.stderr
            )
        failures = [ln for ln in done.stderr.splitlines() if "rror" in ln or "invalid" in ln]
        assert len(failures) == len(refused), done.stderr
        done = cluster.kubectl("apply", *into, "--server-side", "--force-conflicts", "-f",
                               str(manifest), timeout=300, check=False)  # fmt: skip
        assert done.returncode == 0 and "rror" not in done.stderr, done.stderr
        got = cluster.kubectl("get", *into, "-f", str(manifest), "-o", "name", timeout=120)
        assert len(got.stdout.split()) == len(docs), got.stdout
    finally:
        cluster.kubectl("delete", *into, "-f", str(manifest), "--ignore-not-found",
                        "--wait=false", timeout=300, check=False)  # fmt: skip
        if ns:
            cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
