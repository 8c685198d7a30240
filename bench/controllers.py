"""Controller-manager benchmark against a real `skiff controlplane` (SQLite).

Starts `skiff controlplane` on 127.0.0.1 with a temporary data dir (stopped
by its pid at the end) running its own controller manager (leader-elected,
as deployed) with the deployment, replicaset and garbage collector
controllers and no scheduler, reads per-controller figures from the
manager's /metrics endpoint, and measures:

- create: from creating a Deployment of N replicas (default 1,000) to N Pod
  objects existing (counted from a watch, as a client would see them);
- delete: from deleting that Deployment (background propagation) to every
  Pod and ReplicaSet gone (the garbage collector's cascade);
- reconcile throughput per controller over the run (reconciles / second)
  and mean reconcile latency.

With `--hollow-nodes N` (default 50) the control plane also runs its
scheduler and N hollow nodes (agent/hollow.py: Nodes with Lease heartbeats
that report bound pods Running, no containers) answer for the pods, as in
Kubernetes' density tests; the create figure still counts Pod objects, and
`running_seconds` adds the time until all of them are Running. With 0, no
scheduler or nodes run. Prints a table, then one JSON object of figure ->
number on the last line.

    .venv/bin/python -m bench.controllers [--replicas 1000] [--hollow-nodes 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.hollow import HollowConfig, HollowNodes
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from controlplane.client.interface import DeleteOptions, ListOptions
from tests.harness.ports import free_port
from tests.harness.registry import stop_process

REPO = Path(__file__).resolve().parents[1]


class ControlPlaneProcess:
    def __init__(self, data_dir: Path, scheduler: bool = False) -> None:
        self.data_dir = data_dir
        self.scheduler = scheduler
        self.port = free_port()
        self.metrics_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / "controlplane.log"

    def start(self, timeout: float = 60.0) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "skiff", "controlplane", "--listen", f"127.0.0.1:{self.port}",
                 "--data-dir", str(self.data_dir), "--log-level", "WARNING",
                 *([] if self.scheduler else ["--disable", "scheduler"]),
                 "--controllers", "deployment,replicaset,garbagecollector",
                 "--controller-metrics-listen", f"127.0.0.1:{self.metrics_port}"],
                cwd=REPO, stdout=log, stderr=log,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"control plane exited: {self.log.read_text()[-2000:]}")
            if (self.data_dir / "admin.conf").exists():
                try:
                    with connect(load_config(self.data_dir / "admin.conf"), timeout=2) as c:
                        c.whoami()
                    return
                except Exception:
                    pass
            time.sleep(0.1)  # polling for the server to come up
        raise RuntimeError("control plane did not start")

    def client(self) -> GrpcApiClient:
        return connect(load_config(self.data_dir / "admin.conf"), timeout=30)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, timeout=20)


class RemoteMetrics:
    """The control plane's controller metrics, scraped from its /metrics."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def metrics(self) -> dict[str, dict[str, float]]:
        """Per controller: reconciles, their seconds and failures, from
        client-go's workqueue series (work duration count and sum, retries)."""
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(self.url, timeout=10) as r:
            text = r.read().decode()
        wanted = {"workqueue_work_duration_seconds_count": "reconciles",
                  "workqueue_work_duration_seconds_sum": "latency_seconds_total",
                  "workqueue_retries_total": "errors", "workqueue_depth": "queue_depth"}  # fmt: skip
        out: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                figure = wanted.get(sample.name)
                if figure is not None and "name" in sample.labels:
                    out.setdefault(sample.labels["name"], {})[figure] = float(sample.value)
        for figures in out.values():
            for figure in wanted.values():
                figures.setdefault(figure, 0.0)
        return out

    def wait_running(self, names: set[str], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if names <= set(self.metrics()):
                    return
            except OSError:
                pass
            time.sleep(0.1)  # polling for the leader-elected manager to come up
        raise RuntimeError("controller manager did not start")


class PodCounter:
    """Counts pods of a namespace from one watch: created, deleted, alive."""

    def __init__(self, client: GrpcApiClient, namespace: str) -> None:
        self.watch = client.watch("Pod", namespace)
        self.lock = threading.Condition()
        self.alive: set[str] = set()
        self.created = 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        for ev in self.watch:
            if ev.type == "BOOKMARK":
                continue
            name = ev.object["metadata"]["name"]
            with self.lock:
                if ev.type == "ADDED":
                    self.created += 1
                    self.alive.add(name)
                elif ev.type == "DELETED":
                    self.alive.discard(name)
                self.lock.notify_all()

    def wait(self, predicate: Callable[[PodCounter], bool], timeout: float) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: predicate(self), timeout)


def deployment(namespace: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "density", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "density"}},
            "template": {
                "metadata": {"labels": {"app": "density"}},
                "spec": {"containers": [{"name": "pause", "image": "busybox:1.36"}]},
            },
        },
    }


def run(replicas: int, timeout: float, hollow_nodes: int = 0) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="skiff-bench-ctrl-"))
    cp = ControlPlaneProcess(tmp / "data", scheduler=hollow_nodes > 0)
    figures: dict[str, float] = {"replicas": replicas, "hollow_nodes": hollow_nodes}
    hollow: HollowNodes | None = None
    try:
        cp.start()
        client = cp.client()
        if hollow_nodes:
            hollow = HollowNodes(cp.client(), HollowConfig(nodes=hollow_nodes))
            hollow.start()
        ns = "bench"
        client.create(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        manager = RemoteMetrics(cp.metrics_port)
        manager.wait_running({"deployment", "replicaset", "garbagecollector"})
        counter = PodCounter(client, ns)
        before = manager.metrics()
        t0 = time.monotonic()
        client.create("Deployment", deployment(ns, replicas), ns)
        ok = counter.wait(lambda c: c.created >= replicas, timeout)
        figures["create_seconds"] = round(time.monotonic() - t0, 3)
        figures["created_pods"] = counter.created
        figures["create_pods_per_second"] = round(
            counter.created / max(1e-9, figures["create_seconds"]), 1
        )
        if not ok:
            figures["create_timed_out"] = 1
        if hollow is not None:
            running = wait_running(client, ns, replicas, timeout)
            figures["running_seconds"] = round(time.monotonic() - t0, 3) if running else -1.0
        mid = manager.metrics()
        t1 = time.monotonic()
        client.delete("Deployment", "density", ns, DeleteOptions(propagation_policy="Background"))
        ok = counter.wait(lambda c: not c.alive, timeout)
        rs_deadline = time.monotonic() + timeout
        while client.list("ReplicaSet", ns).items and time.monotonic() < rs_deadline:
            time.sleep(0.05)  # polling: the ReplicaSet goes right after its pods
        figures["delete_seconds"] = round(time.monotonic() - t1, 3)
        if not ok:
            figures["delete_timed_out"] = 1
        after = manager.metrics()
        for name in after:
            for phase, start, end, seconds in (
                ("create", before, mid, figures["create_seconds"]),
                ("delete", mid, after, figures["delete_seconds"]),
            ):
                n = end[name]["reconciles"] - start[name]["reconciles"]
                lat = end[name]["latency_seconds_total"] - start[name]["latency_seconds_total"]
                figures[f"{name}_{phase}_reconciles"] = n
                figures[f"{name}_{phase}_reconciles_per_second"] = round(n / max(1e-9, seconds), 1)
                figures[f"{name}_{phase}_mean_reconcile_ms"] = (
                    round(1000 * lat / n, 2) if n else 0.0
                )
            figures[f"{name}_errors"] = after[name]["errors"]
        counter.watch.stop()
        many_figures(client, manager, figures, timeout)
        client.close()
    finally:
        if hollow is not None:
            hollow.stop()
        cp.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return figures


def wait_running(client: GrpcApiClient, ns: str, replicas: int, timeout: float) -> bool:
    """Until `replicas` pods of the namespace report Running (hollow nodes)."""
    deadline = time.monotonic() + timeout
    opts = ListOptions(field_selector="status.phase=Running")
    while time.monotonic() < deadline:
        if len(client.list("Pod", ns, opts).items) >= replicas:
            return True
        time.sleep(0.2)  # polling the API, as a user's `get pods` would
    return False


def many_figures(
    client: GrpcApiClient, manager: RemoteMetrics, figures: dict[str, float], timeout: float
) -> None:
    """Many small Deployments (100 x 10 replicas): reconcile throughput when
    every sync is small, then the cascade delete of all of them."""
    ns = "bench-many"
    client.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    counter = PodCounter(client, ns)
    count, replicas = 100, 10
    before = manager.metrics()
    t0 = time.monotonic()
    for i in range(count):
        d = deployment(ns, replicas)
        d["metadata"]["name"] = f"small-{i}"
        d["spec"]["selector"]["matchLabels"]["app"] = f"small-{i}"
        d["spec"]["template"]["metadata"]["labels"]["app"] = f"small-{i}"
        client.create("Deployment", d, ns)
    counter.wait(lambda c: c.created >= count * replicas, timeout)
    seconds = time.monotonic() - t0
    figures["many_deployments"] = count
    figures["many_create_seconds"] = round(seconds, 3)
    mid = manager.metrics()
    t1 = time.monotonic()
    for i in range(count):
        client.delete("Deployment", f"small-{i}", ns)
    counter.wait(lambda c: not c.alive, timeout)
    figures["many_delete_seconds"] = round(time.monotonic() - t1, 3)
    after = manager.metrics()
    for name in after:
        n = mid[name]["reconciles"] - before[name]["reconciles"]
        lat = mid[name]["latency_seconds_total"] - before[name]["latency_seconds_total"]
        figures[f"many_{name}_reconciles"] = n
        figures[f"many_{name}_reconciles_per_second"] = round(n / max(1e-9, seconds), 1)
        figures[f"many_{name}_mean_reconcile_ms"] = round(1000 * lat / n, 2) if n else 0.0
    counter.watch.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--hollow-nodes", type=int, default=50, help="0: no scheduler, no nodes")
    args = parser.parse_args(argv)
    figures = run(args.replicas, args.timeout, args.hollow_nodes)
    print(f"{'figure':<52} {'value':>12}")
    print("-" * 65)
    for k, v in figures.items():
        print(f"{k:<52} {v:>12}")
    target = (
        "met"
        if figures.get("create_seconds", 1e9) < 10 and not figures.get("create_timed_out")
        else "MISSED"
    )
    print(f"target: {args.replicas} pods created in under 10 s: {target}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
