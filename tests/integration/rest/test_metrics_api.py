"""The built-in metrics API (metrics.k8s.io/v1beta1) against a real control
plane, through kubectl 1.33: `kubectl top nodes|pods`, NodeMetrics and
PodMetrics (get, list, label selectors, timestamp, window, usage), the
local APIService v1beta1.metrics.k8s.io, and the HPA's metrics source
reading it; and an out-of-tree metrics server taking the group over, with
an APIService and Service of our own (tests/fakes/manifests) and with
metrics-server v0.7.0's own components.yaml, built at run time from its git
mirror (tests/harness/upstream.py; skipped without it). The agents' Stats
are stood in for by a function of the real clock (a quarter of a core and
64 MiB per node, 100m and 32 MiB per pod), so the rates over whatever window
the scrapes span are known."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.controllers.metrics_api import MetricsApiSource
from proto.agent.v1 import agent_pb2 as pb
from tests.harness import upstream
from tests.harness.kubectl import NEWEST
from tests.harness.wait import wait_for
from tests.integration.rest.conftest import Cluster

KUBECTL = NEWEST
pytestmark = [pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl 1.33 is not installed")]

START = time.time_ns() // 1000 * 1000  # whole microseconds: the rates come out exact
_clock = [START]  # the agents' clock: 10 s further at each read


def _tick() -> int:
    _clock[0] += 10 * 10**9
    return _clock[0]


MI = 1 << 20


def kubectl(cluster: Cluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
    done = subprocess.run([str(KUBECTL), *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env=cluster.env())  # fmt: skip
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {done.returncode}\n{done.stderr}")
    return done


def _usage(now: int, millicores: int, memory: int) -> pb.Usage:
    cpu = (now - START) * millicores // 1000
    return pb.Usage(timestamp_nanos=now, cpu_usage_core_nano_seconds=cpu,
                    memory_working_set_bytes=memory)  # fmt: skip


def fake_stats(node: dict[str, Any]) -> pb.StatsResponse:
    name = node["metadata"]["name"]
    if not name.startswith("mnode"):
        raise OSError("no agent")
    now = _tick()
    pods = []
    if name == "mnode-1":
        for pod in ("busy", "idle"):
            cores = 100 if pod == "busy" else 0
            container = pb.ContainerStats(name="main", usage=_usage(now, cores, 32 * MI))
            pods.append(pb.PodStats(namespace="default", pod=pod, usage=_usage(now, cores, 32 * MI),
                                    containers=[container]))  # fmt: skip
    node_stats = pb.NodeStats(node_name=name, usage=_usage(now, 250, 64 * MI))
    return pb.StatsResponse(node=node_stats, pods=pods)


def _node(name: str, zone: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"zone": zone}},
            "status": {"capacity": {"cpu": "2", "memory": "1Gi", "pods": "10"},
                       "allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"},
                       "addresses": [{"type": "InternalIP", "address": "192.0.2.1"}]}}  # fmt: skip


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"nodeName": "mnode-1",
                     "containers": [{"name": "main", "image": "busybox"}]}}  # fmt: skip


@pytest.fixture(scope="module")
def metrics(cluster: Cluster) -> Iterator[None]:
    collector = cluster.running.server.metrics_api
    collector._fetch = fake_stats  # the agents' answers, as a function of the clock
    items = [_node("mnode-1", "a"), _node("mnode-2", "b"), _pod("busy"), _pod("idle")]
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    kubectl(cluster, "create", "-f", "-", stdin=doc)
    collector.scrape()
    collector.scrape()  # two reads of each counter: a rate
    try:
        yield
    finally:
        kubectl(cluster, "delete", "-f", "-", "--ignore-not-found", "--wait=false", stdin=doc,
                check=False)  # fmt: skip


def test_metrics_group_is_a_local_available_apiservice(cluster: Cluster) -> None:
    row = wait_for(
        lambda: kubectl(cluster, "get", "apiservice", "v1beta1.metrics.k8s.io", check=False).stdout,
        timeout=30,
    )  # fmt: skip
    assert row.splitlines()[1].split()[1:3] == ["Local", "True"]
    listed = kubectl(cluster, "api-resources", "--api-group", "metrics.k8s.io").stdout
    assert "NodeMetrics" in listed and "PodMetrics" in listed


def test_kubectl_top_nodes(cluster: Cluster, metrics: None) -> None:
    out = kubectl(cluster, "top", "nodes").stdout.splitlines()
    assert out[0].split()[:3] == ["NAME", "CPU(cores)", "CPU(%)"] or out[0].split()[:2] == [
        "NAME", "CPU(cores)"]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert set(rows) >= {"mnode-1", "mnode-2"}
    assert rows["mnode-1"][1] == "250m" and rows["mnode-1"][2] == "12%"
    assert rows["mnode-1"][3] == "64Mi" and rows["mnode-1"][4] == "6%"
    only_b = kubectl(cluster, "top", "nodes", "-l", "zone=b").stdout
    assert "mnode-2" in only_b and "mnode-1" not in only_b


def test_kubectl_top_pods(cluster: Cluster, metrics: None) -> None:
    out = kubectl(cluster, "top", "pods", "-n", "default").stdout.splitlines()
    assert out[0].split() == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    rows = {line.split()[0]: line.split()[1:] for line in out[1:]}
    assert rows["busy"] == ["100m", "32Mi"] and rows["idle"] == ["0m", "32Mi"]
    containers = kubectl(cluster, "top", "pods", "busy", "--containers").stdout
    assert "main" in containers and "100m" in containers
    selected = kubectl(cluster, "top", "pods", "-l", "app=idle").stdout
    assert "idle" in selected and "busy" not in selected


def test_node_and_pod_metrics_objects(cluster: Cluster, metrics: None) -> None:
    raw = kubectl(cluster, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/mnode-1").stdout
    node = json.loads(raw)
    assert node["kind"] == "NodeMetrics" and node["metadata"]["labels"] == {"zone": "a"}
    assert node["usage"] == {"cpu": "250000000n", "memory": "64Mi"}
    # The window: the time between the two reads (whole ticks of the agents' clock).
    assert re.fullmatch(r"[1-9][0-9]*0s", node["window"]), node["window"]
    assert node["timestamp"].endswith("Z")
    pod = json.loads(kubectl(cluster, "get", "--raw",
                             "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/busy").stdout)  # fmt: skip
    assert pod["containers"] == [{"name": "main", "usage": {"cpu": "100000000n", "memory": "32Mi"}}]
    missing = kubectl(cluster, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/nope",
                      check=False)  # fmt: skip
    assert missing.returncode != 0 and "NotFound" in missing.stderr
    table = kubectl(cluster, "get", "podmetrics", "-n", "default").stdout.splitlines()
    assert table[0].split() == ["NAME", "CPU", "MEMORY", "WINDOW"]


def test_hpa_metrics_source_reads_the_metrics_api(cluster: Cluster, metrics: None) -> None:
    source = MetricsApiSource(cluster.running.admin)
    cpu = source.pod_metrics("default", "cpu")
    assert cpu["busy"].value == pytest.approx(0.1) and cpu["idle"].value == 0
    assert cpu["busy"].window > 0 and cpu["busy"].window % 10 == 0
    memory = source.pod_metrics("default", "memory")
    assert memory["busy"].value == 32 * MI


OUR_APISERVICE = Path(__file__).parents[2] / "fakes" / "manifests" / "metrics-apiservice.yaml"
# metrics-server's release components.yaml is `kustomize build` of this, at its tag.
METRICS_SERVER = ("kubernetes-sigs/metrics-server", "v0.7.0", "manifests/overlays/release")


def _manifest(source: str, tmp_path: Path) -> Path:
    """Our own APIService and Service, or metrics-server's components.yaml built
    from its git mirror (skips without it, naming SKIFF_UPSTREAM_MIRRORS)."""
    if source == "ours":
        return OUR_APISERVICE
    repo, tag, overlay = METRICS_SERVER
    upstream.tree(repo, tag, "manifests", tmp_path)
    built = kubectl_plain("kustomize", str(tmp_path / overlay))
    path = tmp_path / "components.yaml"
    path.write_text(built)
    return path


def kubectl_plain(*args: str) -> str:
    done = subprocess.run([str(KUBECTL), *args], capture_output=True, text=True, timeout=60,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("source", ["ours", "upstream"])
@pytest.mark.parametrize("server_side", [False, True], ids=["client-side", "server-side"])
def test_metrics_server_manifest_applies_unchanged_and_takes_the_group_over(
    cluster: Cluster, metrics: None, server_side: bool, source: str, tmp_path: Path
) -> None:
    manifest = _manifest(source, tmp_path)
    apply = ["apply", "-f", str(manifest)] + (["--server-side"] if server_side else [])
    try:
        kubectl(cluster, *apply)
        # Its APIService names its Service now: whose pods cannot run here (no node
        # runs them), so it is unavailable with the reason, and skiff's built-in
        # metrics API no longer answers for the group.
        cond = wait_for(lambda: _apiservice_condition(cluster, "False"), timeout=30,
                        message="v1beta1.metrics.k8s.io unavailable")  # fmt: skip
        assert cond is not None
        assert cond["reason"] in ("MissingEndpoints", "FailedDiscoveryCheck"), cond
        row = kubectl(cluster, "get", "apiservice", "v1beta1.metrics.k8s.io").stdout
        assert row.splitlines()[1].split()[1] == "kube-system/metrics-server"
        top = kubectl(cluster, "top", "nodes", check=False)
        assert top.returncode != 0, top.stdout
        raw = kubectl(cluster, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes", check=False)
        assert "the server is currently unable to handle the request" in raw.stderr
        kubectl(cluster, "get", "nodes")  # the core group is untouched
    finally:
        kubectl(cluster, "delete", "-f", str(manifest), "--ignore-not-found",
                "--wait=false", check=False)  # fmt: skip
    # Without it, the built-in metrics API is registered and answers again.
    wait_for(lambda: _apiservice_condition(cluster, "True"), timeout=30,
             message="the local v1beta1.metrics.k8s.io back")  # fmt: skip
    assert "mnode-1" in kubectl(cluster, "top", "nodes").stdout


def _apiservice_condition(cluster: Cluster, status: str) -> dict[str, Any] | None:
    done = kubectl(cluster, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json",
                   check=False)  # fmt: skip
    if done.returncode != 0:
        return None
    conds = (json.loads(done.stdout).get("status") or {}).get("conditions") or []
    cond = next((c for c in conds if c["type"] == "Available"), None)
    return cond if cond is not None and cond["status"] == status else None
