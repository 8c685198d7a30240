"""Workloads on a three-node host-gw cluster with the scheduler and controllers:
a Deployment spread over the nodes, ClusterIP and NodePort services, a
DaemonSet, a Job, rolling update and rollback, the HPA, and a node killed and
brought back. One cluster for the module; the node-kill tests run last.

The controllers run with short node grace and toleration settings so that a
dead node is noticed and its pods evicted within seconds.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.harness import cluster_workloads as h
from tests.harness.cluster import REPO, Cluster
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"
GRACE = 15  # --node-monitor-grace-period (the agent renews its Lease every 10 s)
TOLERATION = 4  # tolerationSeconds for not-ready/unreachable
CONTROLLER_ARGS = [
    "--node-monitor-grace-period",
    str(GRACE),
    "--default-not-ready-toleration-seconds",
    str(TOLERATION),
    "--horizontal-pod-autoscaler-sync-period",
    "2",
]
SPREAD = [
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
]
TOLERATIONS = [
    {
        "key": key,
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": TOLERATION,
    }
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def web_deployment(replicas: int, name: str = "web", **spec: Any) -> dict[str, Any]:
    c = h.container(h.WHOAMI, readinessProbe=h.readiness_http())
    pod_spec = {
        "containers": [c],
        "topologySpreadConstraints": SPREAD if name == "web" else None,
        "tolerations": TOLERATIONS,
    }
    pod_spec = {k: v for k, v in pod_spec.items() if v is not None}
    return h.deployment(name, replicas, h.WHOAMI, pod_spec=pod_spec, **spec)


def service(name: str, selector: dict[str, str], kind: str = "ClusterIP") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": kind,
            "selector": selector,
            "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}],
        },
    }


@pytest.fixture(scope="module")
def web(cluster: Cluster, api: GrpcApiClient) -> Iterator[list[dict[str, Any]]]:
    """The `web` Deployment: six replicas spread two per node."""
    api.create("Deployment", web_deployment(6), "default")
    yield h.wait_ready_pods(api, {"app": "web"}, 6, timeout=120)


@pytest.fixture(scope="module")
def clients(cluster: Cluster, api: GrpcApiClient) -> list[dict[str, Any]]:
    """A client pod bound to each node."""
    names = []
    for n in cluster.nodes:
        name = f"client-{n.name}"
        api.create("Pod", h.pod(name, h.SLEEPER, node=n.name, labels={"role": "client"}), "default")
        names.append(name)
    return [h.wait_pod_running(api, name) for name in names]


@pytest.fixture(scope="module")
def web_svc(api: GrpcApiClient, web: list[dict[str, Any]]) -> dict[str, Any]:
    svc: dict[str, Any] = api.create("Service", service("web", {"app": "web"}), "default")
    return svc


def endpoint_ips(api: GrpcApiClient, name: str) -> set[str]:
    ep = api.get("Endpoints", name, "default")
    return {a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []}


def hits(cluster: Cluster, client: dict[str, Any], url: str, n: int) -> dict[str, int]:
    seen: dict[str, int] = {}
    for _ in range(n):
        name = h.fetch(cluster, client, url)
        seen[name] = seen.get(name, 0) + 1
    return seen


# ---------------------------------------------------------------- scenarios


def test_deployment_spread_over_three_nodes(cluster: Cluster, web: list[dict[str, Any]]) -> None:
    per_node: dict[str, int] = {}
    for p in web:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    assert per_node == {n.name: 2 for n in cluster.nodes}


def test_clusterip_service_from_every_node_balanced(
    cluster: Cluster,
    api: GrpcApiClient,
    web: list[dict[str, Any]],
    web_svc: dict[str, Any],
    clients: list[dict[str, Any]],
) -> None:
    ips = {p["status"]["podIP"] for p in web}
    wait_for(lambda: endpoint_ips(api, "web") == ips, timeout=30, message="web endpoints")
    url = f"http://{web_svc['spec']['clusterIP']}/"
    names = {p["metadata"]["name"] for p in web}
    for client in clients:
        wait_for(functools.partial(h.fetch, cluster, client, url), timeout=20, message=f"{url} up")
        seen = hits(cluster, client, url, 36)
        assert set(seen) <= names
        # Random balancing over six endpoints: every endpoint answers, none
        # takes more than half of 36 requests.
        assert len(seen) >= 4, seen
        assert max(seen.values()) <= 18, seen


def test_cluster_dns_names_the_service(
    cluster: Cluster, web_svc: dict[str, Any], clients: list[dict[str, Any]]
) -> None:
    for client in clients:
        node = cluster.node(client["spec"]["nodeName"])
        out = node.exec(client["metadata"]["name"], ["nslookup", "web.default.svc.cluster.local"])
        assert web_svc["spec"]["clusterIP"] in out, out


def test_nodeport_on_every_node(
    cluster: Cluster, api: GrpcApiClient, web: list[dict[str, Any]]
) -> None:
    svc = api.create("Service", service("web-np", {"app": "web"}, "NodePort"), "default")
    port = svc["spec"]["ports"][0]["nodePort"]
    names = {p["metadata"]["name"] for p in web}
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def get(url: str) -> str:
        with opener.open(url, timeout=3) as resp:
            body: bytes = resp.read()
            return body.decode().strip()

    try:
        for n in cluster.nodes:  # from the test bridge, as an outside client
            url = f"http://{n.ip}:{port}/"
            assert wait_for(functools.partial(get, url), timeout=20, message=url) in names
            seen = {get(url) for _ in range(20)}
            assert len(seen) >= 2, seen  # endpoints on other nodes answer too
    finally:
        h.delete(api, "Service", "web-np")


def test_daemonset_on_every_node(cluster: Cluster, api: GrpcApiClient) -> None:
    ds = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent-ds", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent-ds"}},
            "template": {
                "metadata": {"labels": {"app": "agent-ds"}},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [h.container(h.SLEEPER)],
                },
            },
        },
    }
    api.create("DaemonSet", ds, "default")
    try:
        got = h.wait_ready_pods(api, {"app": "agent-ds"}, 3, timeout=90)
        assert sorted(p["spec"]["nodeName"] for p in got) == sorted(n.name for n in cluster.nodes)
    finally:
        h.delete(api, "DaemonSet", "agent-ds")
        h.wait_gone(api, {"app": "agent-ds"})


def test_job_runs_to_completion(cluster: Cluster, api: GrpcApiClient) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "count", "namespace": "default"},
        "spec": {
            "completions": 3,
            "parallelism": 3,
            "backoffLimit": 2,
            "template": {
                "metadata": {"labels": {"app": "count"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [h.container(["sh", "-c", "echo done; exit 0"])],
                },
            },
        },
    }
    api.create("Job", job, "default")
    try:

        def complete() -> dict[str, Any]:
            st: dict[str, Any] = api.get("Job", "count", "default").get("status") or {}
            conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
            return st if conds.get("Complete") == "True" else {}

        st = wait_for(complete, timeout=90, interval=0.3, message="Job Complete")
        assert st["succeeded"] == 3
        assert all(p["status"]["phase"] == "Succeeded" for p in h.pods(api, {"app": "count"}))
    finally:
        h.delete(api, "Job", "count")


def rollout_done(api: GrpcApiClient, name: str, replicas: int) -> bool:
    d = api.get("Deployment", name, "default")
    st = d.get("status") or {}
    return bool(
        st.get("observedGeneration", 0) >= d["metadata"].get("generation", 0)
        and st.get("updatedReplicas") == replicas
        and st.get("availableReplicas") == replicas
        and st.get("replicas") == replicas
    )


def skiffctl(cluster: Cluster, *args: str) -> str:
    argv = [sys.executable, str(REPO / "skiff.py"), "ctl"]
    argv += ["--config", str(cluster.cp.data_dir / "admin.conf"), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_rolling_update_and_rollback_zero_unavailable(cluster: Cluster, api: GrpcApiClient) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    api.create("Deployment", web_deployment(3, name="roll", strategy=strategy), "default")
    sel = {"app": "roll"}
    stop = threading.Event()
    low: list[int] = []
    worst: list[str] = []
    history: dict[str, list[str]] = {}

    def watch_ready() -> None:
        with cluster.client() as c:
            while not stop.is_set():
                all_pods = h.pods(c, sel)
                n = sum(1 for p in all_pods if h.is_ready(p))
                if not low or n < min(low):
                    worst[:] = [h.brief(p) for p in all_pods]
                for p in all_pods:
                    b = h.brief(p)
                    name = p["metadata"]["name"]
                    if history.get(name, [""])[-1] != b:
                        history.setdefault(name, []).append(b)
                low.append(n)
                stop.wait(0.1)

    try:
        h.wait_ready_pods(api, sel, 3, timeout=90)
        wait_for(lambda: rollout_done(api, "roll", 3), timeout=30, message="roll available")
        watcher = threading.Thread(target=watch_ready, daemon=True)
        watcher.start()
        for version in ("2", "1"):
            if version == "2":
                api.patch(
                    "Deployment",
                    "roll",
                    {"spec": {"template": {"metadata": {"annotations": {"version": "2"}}}}},
                    "default",
                )
            else:
                skiffctl(cluster, "rollout", "undo", "deployment/roll")
            wait_for(lambda: rollout_done(api, "roll", 3), timeout=120, interval=0.3)
            got = h.wait_ready_pods(api, sel, 3, timeout=60)
            annotations = [p["metadata"].get("annotations") or {} for p in got]
            if version == "2":
                assert all(a.get("version") == "2" for a in annotations)
            else:
                assert all("version" not in a for a in annotations)
        stop.set()
        watcher.join(10)
        assert low and min(low) >= 3, (
            f"ready pods fell to {min(low)} during the rollout: {worst} {history}"
        )
    finally:
        stop.set()
        h.delete(api, "Deployment", "roll")


def test_hpa_scales_on_real_cpu_load(cluster: Cluster, api: GrpcApiClient) -> None:
    burn = ["sh", "-c", "while true; do :; done"]
    dep = h.deployment(
        "burn",
        1,
        burn,
        pod_spec={
            "containers": [
                h.container(
                    burn, resources={"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}
                )
            ]
        },
    )
    api.create("Deployment", dep, "default")
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "burn", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "burn"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
    }
    api.create("HorizontalPodAutoscaler", hpa, "default")
    try:
        h.wait_ready_pods(api, {"app": "burn"}, 1, timeout=60)

        last: dict[str, object] = {}

        def scaled() -> bool:
            # Like metrics-server, the agents' stats need a sample or two before
            # the HPA sees usage: until then it reports FailedGetResourceMetric.
            st = api.get("HorizontalPodAutoscaler", "burn", "default").get("status") or {}
            last["status"] = st
            return (st.get("desiredReplicas") or 0) > 1

        wait_for(scaled, timeout=120, interval=0.5, message=f"HPA to scale up (last {last})")
        h.wait_ready_pods(api, {"app": "burn"}, 3, timeout=60)
    finally:
        h.delete(api, "HorizontalPodAutoscaler", "burn")
        h.delete(api, "Deployment", "burn")


def node_ready(api: GrpcApiClient, name: str) -> str:
    n = api.get("Node", name)
    conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
    return str(conds.get("Ready"))


def cordon(api: GrpcApiClient, names: list[str], on: bool) -> None:
    for name in names:
        api.patch("Node", name, {"spec": {"unschedulable": on or None}})


def test_node_killed_pods_recreated_elsewhere(
    cluster: Cluster, api: GrpcApiClient, clients: list[dict[str, Any]]
) -> None:
    """`fo` runs three replicas, all on node-3 (the others cordoned while they
    start); node-3's agent and runtime are killed; the node goes NotReady, its
    pods are evicted after their toleration and recreated on node-1 and
    node-2, and the `fo` service answers from them."""
    victim = cluster.nodes[2]
    others = [n.name for n in cluster.nodes[:2]]
    cordon(api, others, True)
    try:
        api.create("Deployment", web_deployment(3, name="fo"), "default")
        first = h.wait_ready_pods(api, {"app": "fo"}, 3, timeout=90)
    finally:
        cordon(api, others, False)
    assert {p["spec"]["nodeName"] for p in first} == {victim.name}
    svc = api.create("Service", service("fo", {"app": "fo"}), "default")
    url = f"http://{svc['spec']['clusterIP']}/"
    lost = {p["metadata"]["name"] for p in first}
    started = time.monotonic()
    victim.kill()
    wait_for(
        lambda: node_ready(api, victim.name) != "True",
        timeout=GRACE + 20,
        interval=0.3,
        message=f"{victim.name} NotReady",
    )
    not_ready_after = time.monotonic() - started

    def moved() -> list[dict[str, Any]]:
        ready = h.ready_pods(api, {"app": "fo"})
        names = {p["metadata"]["name"] for p in ready}
        return ready if len(ready) == 3 and not (names & lost) else []

    ready = wait_for(moved, timeout=GRACE + TOLERATION + 60, interval=0.3, message="pods moved")
    elapsed = time.monotonic() - started
    assert {p["spec"]["nodeName"] for p in ready} <= set(others)
    ips = {p["status"]["podIP"] for p in ready}
    wait_for(lambda: endpoint_ips(api, "fo") == ips, timeout=30, message="endpoints follow")
    names = {p["metadata"]["name"] for p in ready}
    for client in clients[:2]:
        seen = wait_for(
            functools.partial(hits, cluster, client, url, 9), timeout=20, message="traffic restored"
        )
        assert set(seen) <= names, seen
    sys.stderr.write(
        f"NotReady after {not_ready_after:.1f}s, pods Ready elsewhere after {elapsed:.1f}s\n"
    )
    assert elapsed < GRACE + TOLERATION + 30


def test_killed_node_comes_back_and_rejoins(
    cluster: Cluster, api: GrpcApiClient, clients: list[dict[str, Any]]
) -> None:
    victim = cluster.nodes[2]
    if victim.agent is not None and victim.agent.running():
        pytest.skip("runs after test_node_killed_pods_recreated_elsewhere")
    victim.start_runtime()
    victim.start_agent()
    victim.wait_ready(api)
    # Its taints go; pods evicted while it was away are stopped and removed
    # from its runtime; a new pod runs there and is reachable from the others.
    wait_for(
        lambda: not (api.get("Node", victim.name).get("spec") or {}).get("taints"),
        timeout=30,
        message="taints removed",
    )

    def only_live_pods() -> bool:
        mine = {
            p["metadata"]["uid"]
            for p in api.list("Pod", "default").items
            if p["spec"].get("nodeName") == victim.name
        }
        c = victim.cri()
        try:
            sandboxes = c.list_pod_sandboxes()
        finally:
            c.close()
        uids = {s.metadata.uid for s in sandboxes if s.state == 0}  # SANDBOX_READY
        return uids <= mine

    wait_for(only_live_pods, timeout=60, interval=0.5, message="evicted pods cleaned")
    name = "back-on-node-3"
    api.create("Pod", h.pod(name, h.WHOAMI, node=victim.name), "default")
    try:
        p = h.wait_pod_running(api, name)
        url = f"http://{p['status']['podIP']}/"
        for client in clients[:2]:
            got = wait_for(
                functools.partial(h.fetch, cluster, client, url), timeout=20, message=url
            )
            assert got == name
    finally:
        h.delete(api, "Pod", name)
