"""Controllers against a real `skiff controlplane` process (SQLite).

The issue's scenario: the nginx Deployment applied with skiffctl (3
replicas); a rolling update to a new image with maxUnavailable 0 never drops
below 3 ready pods; a rollback restores the old ReplicaSet; an HPA made as
`skiffctl autoscale deployment nginx --cpu-percent=30 --min=7 --max=8` would
make it drives replicas to 7..8 as usage changes. Pod readiness is reported
the way the agent reports it (status updates); nothing sleeps.
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controlplane.cli.main import main as skiffctl
from controlplane.client.interface import DeleteOptions
from controlplane.controllers import rollout
from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.manager import ControllerManager

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[4]


def apply(c, manifest: dict[str, Any]) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = skiffctl(
        ["--config", str(c.cp.data_dir / "admin.conf"), "-n", c.namespace, "apply", "-f", "-"],
        stdout=out,
        stderr=err,
        stdin=io.StringIO(yaml.safe_dump(manifest)),
    )
    assert code == 0, err.getvalue()


def nginx_manifest() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / "nginx-deployment.yaml").read_text())
    doc["metadata"]["name"] = "nginx"
    doc["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    doc["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
    return doc


def ready_count(pods: dict[str, Any]) -> int:
    return sum(
        1
        for p in pods.values()
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
    )


class ReadyWatcher:
    """Follows pod events from the API server; the lowest ready count once armed."""

    def __init__(self, c):
        self.pods = {p["metadata"]["name"]: p for p in c.pods(alive=False)}
        self.min_ready: int | None = None
        self.armed = False
        self.log: list[tuple[str, str, str | None, int]] = []
        self.watch = c.client.watch("Pod", c.namespace)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        for ev in self.watch:
            if ev.type == "BOOKMARK":
                continue
            name = ev.object["metadata"]["name"]
            if ev.type == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = ev.object
            if self.armed:
                n = ready_count(self.pods)
                self.min_ready = n if self.min_ready is None else min(self.min_ready, n)
                labels = ev.object["metadata"].get("labels") or {}
                self.log.append((ev.type, name, labels.get("pod-template-hash"), n))


def rss(c, name="nginx"):
    return [
        r
        for r in c.client.list("ReplicaSet", c.namespace).items
        if r["metadata"]["name"].startswith(f"{name}-")
    ]


def rollout_done(c: Any, image: str, replicas: int = 3, timeout: float = 60.0) -> dict[str, Any]:
    """Report pods ready as an agent would until the rollout to `image` is complete."""

    def done() -> dict[str, Any] | None:
        c.make_ready()
        d: dict[str, Any] = c.client.get("Deployment", "nginx", c.namespace)
        st = d.get("status") or {}
        pods = c.pods()
        if (
            st.get("updatedReplicas") == replicas
            and st.get("availableReplicas") == replicas
            and st.get("replicas") == replicas
            and len(pods) == replicas
            and all(p["spec"]["containers"][0]["image"] == image for p in pods)
        ):
            return d
        return None

    result: dict[str, Any] = c.wait(done, timeout=timeout, message=f"rollout to {image}")
    return result


def test_nginx_rolling_update_rollback_and_autoscale(cluster):
    c = cluster(fake_clock=True)
    c.start("deployment,replicaset,horizontalpodautoscaling,garbagecollector")
    apply(c, nginx_manifest())
    rollout_done(c, "nginx:1.14.2")
    [old_rs] = rss(c)
    watcher = ReadyWatcher(c)
    c.wait(lambda: ready_count(watcher.pods) == 3)
    watcher.armed = True
    updated = nginx_manifest()
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.16.1"
    apply(c, updated)
    rollout_done(c, "nginx:1.16.1")
    assert watcher.min_ready is not None and watcher.min_ready >= 3, watcher.log
    assert len(rss(c)) == 2
    # skiffctl rollout undo: back to the previous revision
    c.client.patch(
        "Deployment",
        "nginx",
        {"metadata": {"annotations": {rollout.ROLLBACK_TO: "0"}}},
        c.namespace,
    )
    rollout_done(c, "nginx:1.14.2")
    assert watcher.min_ready >= 3, watcher.log
    restored = {r["metadata"]["name"]: r for r in rss(c)}[old_rs["metadata"]["name"]]
    assert restored["spec"]["replicas"] == 3
    assert restored["metadata"]["annotations"][rollout.REVISION] == "3"
    watcher.watch.stop()

    # skiffctl autoscale deployment nginx --cpu-percent=30 --min=7 --max=8
    c.client.create(
        "HorizontalPodAutoscaler",
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "nginx", "namespace": c.namespace},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
                "minReplicas": 7,
                "maxReplicas": 8,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 30},
                        },
                    }
                ],
            },
        },
        c.namespace,
    )
    c.wait(lambda: c.client.get("Deployment", "nginx", c.namespace)["spec"]["replicas"] == 7)
    rollout_done(c, "nginx:1.14.2", replicas=7)
    c.step(61)  # past the first metric window after readiness
    for p in c.pods():
        c.metrics.set(c.namespace, p["metadata"]["name"], "cpu", 0.09, timestamp=c.clock.now())
    c.settle(
        lambda: c.client.get("Deployment", "nginx", c.namespace)["spec"]["replicas"] == 8, step=5.0
    )
    rollout_done(c, "nginx:1.14.2", replicas=8)
    c.step(61)
    for p in c.pods():
        c.metrics.set(c.namespace, p["metadata"]["name"], "cpu", 0.001, timestamp=c.clock.now())
    c.step(15)

    def reason(type_: str) -> str:
        for x in (
            c.client.get("HorizontalPodAutoscaler", "nginx", c.namespace)
            .get("status", {})
            .get("conditions", [])
        ):
            if x["type"] == type_:
                return str(x["reason"])
        return ""

    c.settle(lambda: reason("AbleToScale") == "ScaleDownStabilized", step=1.0)
    assert c.client.get("Deployment", "nginx", c.namespace)["spec"]["replicas"] == 8  # window holds
    c.step(300)
    c.settle(
        lambda: c.client.get("Deployment", "nginx", c.namespace)["spec"]["replicas"] == 7, step=5.0
    )
    hpa = c.client.get("HorizontalPodAutoscaler", "nginx", c.namespace)
    conds = {x["type"]: x for x in hpa["status"]["conditions"]}
    assert conds["ScalingActive"]["status"] == "True"

    # deleting the Deployment cascades through the garbage collector
    c.client.delete(
        "Deployment", "nginx", c.namespace, DeleteOptions(propagation_policy="Background")
    )
    # (settle: a retry after a Conflict waits on the manager's fake clock)
    c.settle(lambda: not c.pods(alive=False) and not rss(c), step=0.1)


def test_job_and_cronjob(cluster):
    c = cluster(fake_clock=True)
    c.start("job,cronjob")
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": c.namespace},
        "spec": {
            "completions": 2,
            "parallelism": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            },
        },
    }
    c.client.create("Job", job, c.namespace)
    c.wait(lambda: len(c.pods()) == 2)
    for p in c.pods():
        c.set_pod_status(p, phase="Succeeded", ready=False)
    c.wait(
        lambda: any(
            x["type"] == "Complete"
            for x in (c.client.get("Job", "once", c.namespace).get("status") or {}).get(
                "conditions", []
            )
        )
    )
    cj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": c.namespace},
        "spec": {
            "schedule": "* * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    }
    c.client.create("CronJob", cj, c.namespace)
    c.step(61)
    c.wait(
        lambda: any(
            j["metadata"]["name"].startswith("tick-")
            for j in c.client.list("Job", c.namespace).items
        )
    )


def test_endpoints_and_node_ipam(cluster):
    c = cluster()
    c.start("endpoint,replicaset,nodeipam", cluster_cidr="10.200.0.0/16")
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": c.namespace},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "x",
                            "ports": [{"name": "http", "containerPort": 8080}],
                        }
                    ]
                },
            },
        },
    }
    c.client.create("ReplicaSet", rs, c.namespace)
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": c.namespace},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }
    c.client.create("Service", svc, c.namespace)
    c.wait(lambda: len(c.pods()) == 2)
    # The pods run on a node whose pod CIDR holds their IPs (10.244.1.x): the
    # Endpoints controller publishes no IP the pod's node could not have given.
    host = f"{c.namespace}-host"
    c.client.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": host},
                             "spec": {"podCIDR": "10.244.1.0/24"}}, None)  # fmt: skip
    for pod in c.pods():
        c.client.patch("Pod", pod["metadata"]["name"], {"spec": {"nodeName": host}}, c.namespace)
    c.make_ready()

    def ready_ips():
        try:
            ep = c.client.get("Endpoints", "web", c.namespace)
        except Exception:
            return []
        return [a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []]

    def both_ready() -> bool:
        c.make_ready()  # as an agent reporting status again would
        return len(ready_ips()) == 2

    c.wait(both_ready)
    ep = c.client.get("Endpoints", "web", c.namespace)
    assert ep["subsets"][0]["ports"][0]["port"] == 8080
    name = f"{c.namespace}-node"
    c.client.create(
        "Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}, None
    )
    c.wait(
        lambda: (
            (c.client.get("Node", name).get("spec") or {}).get("podCIDR", "").startswith("10.200.")
        )
    )
    c.client.delete("Node", name)
    c.client.delete("Node", host)


def test_node_lifecycle_with_fake_clock(cluster):
    c = cluster(fake_clock=True)
    c.start("nodelifecycle")
    silent, healthy = f"{c.namespace}-silent", f"{c.namespace}-healthy"

    def stamp() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c.clock.now())) + f"#{c.clock.now()}"

    for name in (silent, healthy):
        c.client.create(
            "Node",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}},
            None,
        )
        node = c.client.get("Node", name)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        node["status"] = {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ]
        }
        node["metadata"].pop("resourceVersion", None)
        c.client.update_status("Node", node)
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": healthy, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": healthy, "leaseDurationSeconds": 40, "renewTime": stamp()},
    }
    try:
        c.client.create(
            "Namespace",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}},
        )
    except Exception:
        pass  # made by an earlier test or the API server
    c.client.create("Lease", lease, "kube-node-lease")

    def heartbeat() -> None:
        """The healthy node's agent renews its lease as time passes."""
        current = c.client.get("Lease", healthy, "kube-node-lease")
        current["spec"]["renewTime"] = stamp()
        c.client.update("Lease", current)

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "victim", "namespace": c.namespace},
        "spec": {"nodeName": silent, "containers": [{"name": "c", "image": "x"}]},
    }
    c.set_pod_status(c.client.create("Pod", pod, c.namespace))

    def tainted() -> bool:
        heartbeat()
        taints = (c.client.get("Node", silent).get("spec") or {}).get("taints") or []
        return any(
            t["key"] == "node.kubernetes.io/unreachable" and t["effect"] == "NoExecute"
            for t in taints
        )

    ctrl = c.managers[0].controllers["nodelifecycle"]
    c.wait(lambda: ctrl.observed_heartbeat(silent) and ctrl.observed_heartbeat(healthy))

    def advance(seconds: float) -> None:
        """Move time in 5 s steps, the healthy node heartbeating (and seen) each time."""
        for _ in range(int(seconds // 5)):
            heartbeat()
            renewed = c.client.get("Lease", healthy, "kube-node-lease")["spec"]["renewTime"]
            c.wait(lambda r=renewed: (ctrl.observed_heartbeat(healthy) or ("",))[0].startswith(r))
            c.step(5)

    advance(40)
    c.settle(tainted)
    assert not (c.client.get("Node", healthy).get("spec") or {}).get("taints")

    def evicted() -> bool:
        heartbeat()
        return not c.pods()

    advance(290)
    c.settle(evicted)
    for name in (silent, healthy):
        c.client.delete("Node", name)


def test_leader_election_on_the_api_server(cluster):
    c = cluster()
    cfg = {
        "controllers": ("replicaset",),
        "leader_elect": True,
        "leader_elect_name": f"cm-{c.namespace}",
        "lease_duration": 3.0,
        "renew_deadline": 2.0,
        "retry_period": 0.2,
    }
    a = ControllerManager(c.cp.client(), ManagerConfig(leader_elect_identity="a", **cfg))  # type: ignore[arg-type]
    b = ControllerManager(c.cp.client(), ManagerConfig(leader_elect_identity="b", **cfg))  # type: ignore[arg-type]
    a.start()
    try:
        c.wait(lambda: a.is_leader() and a.controllers)
        b.start()
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "le", "namespace": c.namespace},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "le"}},
                "template": {
                    "metadata": {"labels": {"app": "le"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
        c.client.create("ReplicaSet", rs, c.namespace)
        c.wait(lambda: len(c.pods()) == 2)
        assert not b.is_leader() and not b.controllers
        holder = c.client.get("Lease", f"cm-{c.namespace}", "kube-system")["spec"]["holderIdentity"]
        assert holder == "a"
        a.stop()
        c.wait(lambda: b.is_leader() and b.controllers)
        c.client.patch("ReplicaSet", "le", {"spec": {"replicas": 3}}, c.namespace)
        c.wait(lambda: len(c.pods()) == 3)
    finally:
        a.stop()
        b.stop()
