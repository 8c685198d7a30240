"""Metrics of `skiff up` as a monitoring stack reads them (issue 34).

- Every endpoint parses with prometheus_client's text parser and carries
  Kubernetes' names: the API server's /metrics, and the agent's /metrics,
  /metrics/cadvisor, /metrics/resource and /metrics/probes through the API
  server's node proxy (`kubectl get --raw /api/v1/nodes/<n>/proxy/...`).
- The schedulers and the controller manager serve /metrics on their
  secure ports with delegated authn/authz (401, 403, 200 by credential).
- A real Prometheus (Debian's package, static targets: it has no
  Kubernetes service discovery) scrapes the API server's /metrics and the
  node's three endpoints through the node proxy with a ServiceAccount
  token, and the three components' secure ports with a token bound to
  system:monitoring, and reports every target up. Skipped when prometheus is not
  installed (`make test` installs it with the test packages).
"""

from __future__ import annotations

import base64
import functools
import json
import shutil
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.agent.kubelet_up import BUSYBOX, Cluster, skiff_up
from tests.harness.images import TestImages
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.slow]

PROMETHEUS = shutil.which("prometheus")
NODE_PAGES = {
    "metrics": {"kubelet_node_name", "kubelet_running_pods", "kubelet_running_containers",
                "kubelet_pleg_relist_duration_seconds", "kubelet_pod_start_duration_seconds",
                "process_cpu_seconds", "process_resident_memory_bytes"},
    "metrics/cadvisor": {"container_cpu_usage_seconds", "container_memory_working_set_bytes"},
    "metrics/resource": {"node_cpu_usage_seconds", "node_memory_working_set_bytes",
                         "container_cpu_usage_seconds", "container_memory_working_set_bytes",
                         "pod_cpu_usage_seconds", "pod_memory_working_set_bytes", "scrape_error"},
    "metrics/probes": {"prober_probe"},
}  # fmt: skip
SCRAPER_RBAC = [
    {"apiVersion": "v1", "kind": "ServiceAccount",
     "metadata": {"name": "prometheus", "namespace": "default"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "prometheus"},
     "rules": [{"apiGroups": [""], "resources": ["nodes", "nodes/proxy", "nodes/metrics"],
                "verbs": ["get", "list"]},
               {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "prometheus"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "prometheus"},
     "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}]},
    # The components' secure ports: Kubernetes' system:monitoring (get /metrics).
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "prometheus-monitoring"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "system:monitoring"},
     "subjects": [{"kind": "ServiceAccount", "name": "monitor", "namespace": "default"}]},
    {"apiVersion": "v1", "kind": "ServiceAccount",
     "metadata": {"name": "monitor", "namespace": "default"}},
]  # fmt: skip
COMPONENT_SERIES = {"scheduler": "scheduler_pending_pods", "volcano": "volcano_schedule_attempts",
                    "controller-manager": "workqueue_depth"}  # fmt: skip


@pytest.fixture(scope="module")
def cluster(images: TestImages) -> Iterator[Cluster]:
    with skiff_up(images) as c:
        probed = {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probed", "namespace": "default"},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": [{
                "name": "app", "image": BUSYBOX, "imagePullPolicy": "Never",
                "command": ["sleep", "3600"],
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}]},
        }  # fmt: skip
        c.kubectl("apply", "-f", "-", input=json.dumps(probed))
        c.wait_ready("probed")
        yield c


def node_name(cluster: Cluster) -> str:
    return str(cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}").stdout)


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_every_endpoint_parses_with_kubernetes_names(cluster: Cluster) -> None:
    api = families(cluster.kubectl("get", "--raw", "/metrics").stdout)
    assert {"apiserver_request", "apiserver_request_duration_seconds",
            "etcd_request_duration_seconds", "process_cpu_seconds"} <= set(api)  # fmt: skip
    node = node_name(cluster)
    for page, names in NODE_PAGES.items():
        text = cluster.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/{page}").stdout
        found = families(text)
        assert names <= set(found), (page, sorted(names - set(found)))
        if page == "metrics":
            (sample,) = found["kubelet_node_name"].samples
            assert sample.labels == {"node": node}
            running = found["kubelet_running_pods"].samples[0].value
            assert running >= 1, running
            starts = [s for s in found["kubelet_pod_start_duration_seconds"].samples
                      if s.name.endswith("_count")]  # fmt: skip
            assert starts[0].value >= 1  # the probed pod
        if page == "metrics/cadvisor":
            mine = [s for s in found["container_memory_working_set_bytes"].samples
                    if s.labels.get("pod") == "probed"]  # fmt: skip
            assert mine and mine[0].labels["container"] == "app", mine
            assert mine[0].labels["namespace"] == "default" and mine[0].value > 0
        if page == "metrics/probes":
            runs = [s for s in found["prober_probe"].samples
                    if s.labels["pod"] == "probed" and s.labels["result"] == "successful"]  # fmt: skip
            assert runs and runs[0].labels["probe_type"] == "Readiness", runs


def test_node_proxy_needs_nodes_proxy(cluster: Cluster) -> None:
    cluster.kubectl("create", "serviceaccount", "nobody")
    token = cluster.kubectl("create", "token", "nobody").stdout.strip()
    node = node_name(cluster)
    refused = cluster.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/metrics",
                              "--token", token, check=False)  # fmt: skip
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower(), refused.stderr


def test_agent_serves_metrics_to_a_token_allowed_nodes_metrics(cluster: Cluster) -> None:
    """Straight to the agent's port, as the kubelet's webhook authorization
    has it: a ServiceAccount granted `get nodes/metrics` reads /metrics and
    /metrics/cadvisor; one without it gets 403."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                          "items": SCRAPER_RBAC}))  # fmt: skip
    allowed = cluster.kubectl("create", "token", "prometheus").stdout.strip()
    cluster.kubectl("create", "serviceaccount", "outsider")
    refused = cluster.kubectl("create", "token", "outsider").stdout.strip()
    base = Path(tempfile.mkdtemp(prefix="skiff-agent-metrics-"))
    try:
        context = ssl.create_default_context(cafile=str(_ca_file(cluster, base)))
        context.check_hostname = False  # the agent's certificate names the node, not 127.0.0.1

        def get(path: str, token: str) -> tuple[int, str]:
            request = urllib.request.Request(f"https://127.0.0.1:{cluster.up.agent_port}{path}",
                                             headers={"Authorization": f"Bearer {token}"})  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=10, context=context) as r:
                    return r.status, r.read().decode()
            except urllib.error.HTTPError as err:
                return err.code, err.read().decode()

        code, body = get("/metrics", allowed)
        assert code == 200 and "kubelet_running_pods" in families(body), body[:300]
        code, body = get("/metrics/cadvisor", allowed)
        assert code == 200 and "container_cpu_usage_seconds" in families(body)
        code, body = get("/metrics", refused)
        assert code == 403 and "subresource=metrics" in body, body
    finally:
        shutil.rmtree(base, ignore_errors=True)


def component_ports(cluster: Cluster) -> dict[str, int]:
    up = cluster.up
    return {"scheduler": up.scheduler_port, "volcano": up.volcano_port,
            "controller-manager": up.controller_manager_port}  # fmt: skip


def _get_secure(port: int, path: str, token: str = "") -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # self-signed, as kube-scheduler's without --tls-cert-file
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_components_serve_metrics_on_their_secure_ports(cluster: Cluster) -> None:
    """kube-scheduler's and kube-controller-manager's delegated authn/authz:
    a token the API server does not know is 401, no credentials are
    system:anonymous (403), a ServiceAccount without the permission 403, one
    bound to system:monitoring 200; the health checks answer anyone."""
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                          "items": SCRAPER_RBAC}))  # fmt: skip
    allowed = cluster.kubectl("create", "token", "monitor").stdout.strip()
    cluster.kubectl("create", "serviceaccount", "stranger")
    refused = cluster.kubectl("create", "token", "stranger").stdout.strip()
    for name, port in component_ports(cluster).items():
        health = functools.partial(_healthy, port)
        assert wait_for(health, timeout=30, message=f"{name} /healthz") == (200, "ok"), name
        code, body = _get_secure(port, "/metrics", "not-a-token")
        assert (code, json.loads(body)["reason"]) == (401, "Unauthorized"), (name, body)
        code, body = _get_secure(port, "/metrics")
        assert code == 403, (name, body)
        assert json.loads(body)["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/metrics"'), body  # fmt: skip
        code, body = _get_secure(port, "/metrics", refused)
        assert code == 403, (name, body)
        assert json.loads(body)["message"] == ('forbidden: User '
            '"system:serviceaccount:default:stranger" cannot get path "/metrics"'), body  # fmt: skip
        code, body = _get_secure(port, "/metrics", allowed)
        assert code == 200 and COMPONENT_SERIES[name] in families(body), (name, body[:300])


def _healthy(port: int) -> tuple[int, str] | None:
    try:
        answer = _get_secure(port, "/healthz")
    except OSError:  # not listening yet
        return None
    return answer if answer[0] == 200 else None


def _ca_file(cluster: Cluster, base: Path) -> Path:
    conf = yaml.safe_load(cluster.kubeconfig.read_text())
    data = conf["clusters"][0]["cluster"]["certificate-authority-data"]
    path = base / "ca.crt"
    path.write_bytes(base64.b64decode(data))
    return path


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (apt-get install "
                    "prometheus; make test installs it with the test packages)")  # fmt: skip
def test_prometheus_scrapes_apiserver_and_node_through_the_proxy(cluster: Cluster) -> None:
    assert PROMETHEUS is not None
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                          "items": SCRAPER_RBAC}))  # fmt: skip
    token = cluster.kubectl("create", "token", "prometheus", "--duration=1h").stdout.strip()
    server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    address = server.removeprefix("https://")
    node = node_name(cluster)
    base = Path(tempfile.mkdtemp(prefix="skiff-prom-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        monitor = cluster.kubectl("create", "token", "monitor", "--duration=1h").stdout.strip()
        (base / "token").write_text(token)
        (base / "monitor-token").write_text(monitor)
        # A 5 s scrape timeout (Prometheus' default is 10 s). With 1 s, at load
        # 20-25 on 2 cores, scrapes took up to 2.2 s (the API server's
        # /metrics) and in 40 s 1 to 4 targets failed one: any such failure
        # between "all 7 up" and the sum(up) query failed the test. The
        # timeout may not exceed the interval.
        common = {"scheme": "https", "scrape_interval": "5s", "scrape_timeout": "5s",
                  "tls_config": {"ca_file": str(_ca_file(cluster, base))},
                  "authorization": {"credentials_file": str(base / "token")},
                  "static_configs": [{"targets": [address]}]}  # fmt: skip
        jobs = [{"job_name": "apiserver", "metrics_path": "/metrics", **common}]
        for job, page in (("kubelet", "metrics"), ("cadvisor", "metrics/cadvisor"),
                          ("resource", "metrics/resource")):  # fmt: skip
            jobs.append({"job_name": job, "metrics_path": f"/api/v1/nodes/{node}/proxy/{page}",
                         **common})  # fmt: skip
        # The components' secure ports: self-signed certificates (as
        # kube-prometheus scrapes kube-scheduler: insecureSkipVerify) and
        # a token bound to system:monitoring.
        for job, port in component_ports(cluster).items():
            jobs.append({**common, "job_name": job,
                         "tls_config": {"insecure_skip_verify": True},
                         "authorization": {"credentials_file": str(base / "monitor-token")},
                         "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]})  # fmt: skip
        (base / "prometheus.yml").write_text(yaml.safe_dump({"scrape_configs": jobs}))
        port = free_port()
        log = (base / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={base / 'prometheus.yml'}",
             f"--storage.tsdb.path={base / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=log,
        )  # fmt: skip
        log.close()

        def targets() -> list[dict[str, Any]]:
            assert proc is not None and proc.poll() is None, (base / "prometheus.log").read_text()
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/v1/targets", timeout=2
                ) as r:
                    found: list[dict[str, Any]] = json.load(r)["data"]["activeTargets"]
            except OSError:
                return []
            return found

        def all_up() -> list[dict[str, Any]]:
            found = targets()
            return found if len(found) == 7 and all(t["health"] == "up" for t in found) else []

        try:
            up = wait_for(all_up, timeout=60, interval=0.5, message="every Prometheus target up")
        except Exception:
            raise AssertionError(json.dumps(targets(), indent=1)) from None
        assert {t["labels"]["job"] for t in up} == {"apiserver", "kubelet", "cadvisor", "resource",
                                                    *component_ports(cluster)}  # fmt: skip

        # A target's health in /targets can be newer than its `up` sample in
        # a query: wait for the query to count every target up.
        def sum_up() -> list[Any] | None:
            url = f"http://127.0.0.1:{port}/api/v1/query?query=sum(up)"
            with urllib.request.urlopen(url, timeout=5) as r:
                found: list[Any] = json.load(r)["data"]["result"]
            return found if found and float(found[0]["value"][1]) == 7.0 else None

        result = wait_for(sum_up, timeout=30, interval=0.5, message="sum(up) == 7")
        assert result is not None
        assert float(result[0]["value"][1]) == 7.0, result
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(base, ignore_errors=True)
