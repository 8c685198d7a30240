"""Cluster benchmark: three real nodes, then 1,000 hollow nodes.

Real nodes (tests/harness/cluster.py: a control plane and three nodes in
network namespaces with their own runtime and agent, host-gw; needs root):

- deploy: from creating a Deployment of --replicas (100) busybox pods to all
  of them Ready (the image is pulled on every node first by warm-up pods);
- propagation: a Service selects one more pod (its label added while it
  runs): from the Endpoints change (seen on a watch) to the DNAT rule to that
  pod being in the nat table of every node (iptables-save in each node's
  namespace, polled); repeated --propagation-rounds times;
- failover: the agent and runtime of the node with the most of the
  Deployment's pods killed; from the kill to every replica Ready again on
  the other nodes (node grace --grace s, pods tolerate NotReady for
  --toleration s).

Hollow nodes (agent/hollow.py, in this process) against a fresh control
plane (scheduler and controllers in it, SQLite): --hollow-nodes (1,000)
register and heartbeat; --hollow-pods (30,000) pods in Deployments of 1,000
are created, scheduled and reported Running; then the nodes stay Ready for
a steady-state window. Prints the control plane's CPU (seconds and % of one
core) and memory (RSS, peak) over each phase.

Prints a table, then one JSON object of figure -> number as the last line.

    sudo .venv/bin/python -m bench.cluster [--replicas 100] [--hollow-nodes 1000]
        [--hollow-pods 30000] [--skip-real] [--skip-hollow]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.hollow import HollowConfig, HollowNodes
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import DeleteOptions, ListOptions
from tests.harness.cluster import Cluster, ClusterControlPlane, running_cluster
from tests.harness.images import TestImages
from tests.harness.registry import run_registry
from tests.harness.wait import WaitTimeout, wait_for

SLEEPER = ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
IMAGE = "busybox:1.36"
TICKS = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- helpers


def deployment(name: str, replicas: int, tolerate: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": "c", "image": IMAGE, "command": SLEEPER}],
    }
    if tolerate is not None:
        spec["tolerations"] = [
            {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": tolerate}
            for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def ready(p: dict[str, Any]) -> bool:
    st = p.get("status") or {}
    if p["metadata"].get("deletionTimestamp") or st.get("phase") != "Running":
        return False
    return any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or [])


def pod_ready(api: GrpcApiClient, name: str) -> bool:
    return ready(api.get("Pod", name, "default"))


def app_pods(api: GrpcApiClient, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.list(
        "Pod", "default", ListOptions(label_selector=f"app={app}")
    ).items
    return items


class ProcSampler:
    """CPU seconds and RSS of one pid, sampled on demand and every 0.5 s."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def cpu(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.peak_rss = max(self.peak_rss, self.rss())
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._t.join(2)


class Phase:
    """Wall time and control-plane CPU over a `with` block."""

    def __init__(self, sampler: ProcSampler) -> None:
        self.s = sampler
        self.wall = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Phase:
        self._t0, self._c0 = time.monotonic(), self.s.cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self._t0
        self.cpu = self.s.cpu() - self._c0

    @property
    def percent(self) -> float:
        return 100.0 * self.cpu / self.wall if self.wall else 0.0


# ---------------------------------------------------------------- real nodes


def real_nodes(args: argparse.Namespace, figures: dict[str, float]) -> None:
    images = TestImages(Path(tempfile.mkdtemp(prefix="skiff-bench-img-")))
    controller_args = [
        "--node-monitor-grace-period", str(args.grace),
        "--default-not-ready-toleration-seconds", str(args.toleration),
    ]  # fmt: skip
    try:
        with run_registry() as reg:
            reg.push(images.busybox(), repository="library/busybox", tag="1.36")
            with (
                running_cluster(
                    reg.host, 3, "host-gw", controller_args=controller_args, component_threads=False
                ) as cl,
                cl.client(timeout=30) as api,
            ):
                _warm_up(cl, api)
                _deploy(args, api, figures)
                _propagation(args, cl, api, figures)
                _failover(args, cl, api, figures)
    finally:
        shutil.rmtree(images.root, ignore_errors=True)


def _warm_up(cl: Cluster, api: GrpcApiClient) -> None:
    """One pod per node, so every node has the image before timing."""
    for n in cl.nodes:
        pod = deployment("x", 1)["spec"]["template"]
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"warm-{n.name}", "namespace": "default"},
            "spec": {**pod["spec"], "nodeName": n.name},
        }
        api.create("Pod", body, "default")
    for n in cl.nodes:
        wait_for(
            functools.partial(pod_ready, api, f"warm-{n.name}"), timeout=120, message="warm-up"
        )
        api.delete("Pod", f"warm-{n.name}", "default", DeleteOptions(grace_period_seconds=0))


def _deploy(args: argparse.Namespace, api: GrpcApiClient, figures: dict[str, float]) -> None:
    n = args.replicas
    t0 = time.monotonic()
    api.create("Deployment", deployment("bench", n, tolerate=args.toleration), "default")

    def all_ready() -> bool:
        return bool(sum(1 for p in app_pods(api, "bench") if ready(p)) >= n)

    wait_for(all_ready, timeout=600, interval=0.2, message=f"{n} replicas Ready")
    figures["deploy_ready_s"] = time.monotonic() - t0
    per_node: dict[str, int] = {}
    for p in app_pods(api, "bench"):
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    print(f"deploy: {n} replicas Ready in {figures['deploy_ready_s']:.1f}s  {per_node}")


def _nat_has(cl: Cluster, ip: str) -> Callable[[int], bool]:
    def check(i: int) -> bool:
        out = cl.nodes[i].sh("iptables-save", "-t", "nat").stdout
        return bool(f"--to-destination {ip}:" in out)

    return check


def _propagation_round(cl: Cluster, api: GrpcApiClient, pod: dict[str, Any]) -> float:
    """Label `pod` into the service; seconds from the Endpoints change to its
    DNAT rule on every node."""
    ip = pod["status"]["podIP"]
    seen: dict[str, float] = {}

    def endpoints_have() -> bool:
        ep = api.get("Endpoints", "prop", "default")
        addrs = {a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []}
        if ip in addrs:
            seen.setdefault("t", time.monotonic())
            return True
        return False

    api.patch("Pod", pod["metadata"]["name"], {"metadata": {"labels": {"prop": "yes"}}}, "default")
    done: list[float] = [0.0] * len(cl.nodes)
    check = _nat_has(cl, ip)

    def poll(i: int) -> None:
        wait_for(functools.partial(check, i), timeout=30, interval=0.01, message="rule on node")
        done[i] = time.monotonic()

    threads = [threading.Thread(target=poll, args=(i,)) for i in range(len(cl.nodes))]
    for t in threads:
        t.start()
    wait_for(endpoints_have, timeout=30, interval=0.005, message="endpoint change")
    for t in threads:
        t.join()
    return max(0.0, max(done) - seen["t"])


def _propagation(
    args: argparse.Namespace, cl: Cluster, api: GrpcApiClient, figures: dict[str, float]
) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "prop", "namespace": "default"},
        "spec": {"selector": {"prop": "yes"}, "ports": [{"port": 80, "targetPort": 80}]},
    }
    api.create("Service", svc, "default")
    pods = [p for p in app_pods(api, "bench") if ready(p)][: args.propagation_rounds]
    samples = [_propagation_round(cl, api, p) for p in pods]
    figures["propagation_median_s"] = statistics.median(samples)
    figures["propagation_max_s"] = max(samples)
    print(
        f"propagation: endpoint change -> rule on all 3 nodes: median "
        f"{figures['propagation_median_s'] * 1000:.0f} ms, max "
        f"{figures['propagation_max_s'] * 1000:.0f} ms over {len(samples)} rounds"
    )


def _failover(
    args: argparse.Namespace, cl: Cluster, api: GrpcApiClient, figures: dict[str, float]
) -> None:
    counts: dict[str, int] = {}
    for p in app_pods(api, "bench"):
        counts[p["spec"]["nodeName"]] = counts.get(p["spec"]["nodeName"], 0) + 1
    victim = cl.node(max(counts, key=lambda k: counts[k]))
    lost = {p["metadata"]["name"] for p in app_pods(api, "bench")
            if p["spec"]["nodeName"] == victim.name}  # fmt: skip
    t0 = time.monotonic()
    victim.kill()

    def not_ready() -> bool:
        n = api.get("Node", victim.name)
        conds = {c["type"]: c["status"] for c in n["status"].get("conditions") or []}
        return bool(conds.get("Ready") != "True")

    wait_for(not_ready, timeout=args.grace + 60, interval=0.2, message="NotReady")
    figures["failover_not_ready_s"] = time.monotonic() - t0

    def recovered() -> bool:
        ok = [
            p for p in app_pods(api, "bench") if ready(p) and p["spec"]["nodeName"] != victim.name
        ]
        names = {p["metadata"]["name"] for p in ok}
        return len(ok) >= args.replicas and not (names & lost)

    wait_for(recovered, timeout=args.grace + args.toleration + 300, interval=0.2, message="moved")
    figures["failover_s"] = time.monotonic() - t0
    figures["failover_budget_s"] = args.grace + args.toleration + 10
    print(
        f"failover: {len(lost)} pods of {victim.name}: NotReady after "
        f"{figures['failover_not_ready_s']:.1f}s, all Running elsewhere after "
        f"{figures['failover_s']:.1f}s (budget grace {args.grace} + toleration "
        f"{args.toleration} + 10 = {figures['failover_budget_s']:.0f}s)"
    )


# ---------------------------------------------------------------- hollow nodes


def hollow(args: argparse.Namespace, figures: dict[str, float]) -> None:
    base = Path(tempfile.mkdtemp(prefix="skiff-bench-hollow-", dir="/tmp"))
    cp = ClusterControlPlane(base / "cp", "127.0.0.1", ["--max-workers", "4096"],
                             component_threads=False)  # fmt: skip
    try:
        cp.start()
        assert cp.daemon is not None
        sampler = ProcSampler(cp.daemon.pid)
        print(f"hollow: control plane pid {cp.daemon.pid}, log {base / 'cp'}", flush=True)
        # Lean watches, as `python -m agent.hollow` connects: no node reads managedFields.
        with cp.client(timeout=60, lean_watches=True) as api:
            _hollow_run(args, api, cp, sampler, figures)
        sampler.close()
    finally:
        cp.stop()
        shutil.rmtree(base, ignore_errors=True)


def _hollow_run(
    args: argparse.Namespace,
    api: GrpcApiClient,
    cp: ClusterControlPlane,
    sampler: ProcSampler,
    figures: dict[str, float],
) -> None:
    n_nodes, n_pods = args.hollow_nodes, args.hollow_pods
    figures["hollow_cp_rss_idle_mib"] = sampler.rss() / 2**20
    nodes = HollowNodes(api, HollowConfig(nodes=n_nodes, workers=args.hollow_workers))
    with Phase(sampler) as reg:
        nodes.start()

        def registered() -> bool:
            return bool(len(api.list("Node").items) >= n_nodes)

        wait_for(registered, timeout=300, interval=1, message="hollow nodes registered")
    print(f"hollow: {n_nodes} nodes registered in {reg.wall:.1f}s (cp {reg.percent:.0f}% cpu)")
    per = min(1000, n_pods)
    deployments = [
        (f"h{i:03d}", min(per, n_pods - i * per)) for i in range((n_pods + per - 1) // per)
    ]
    nodes.stats.reset_lease_gap()
    with Phase(sampler) as load:
        for name, replicas in deployments:
            api.create("Deployment", deployment(name, replicas), "default")

        def progress() -> tuple[int, int]:
            # Counted from the hollow nodes' own Pod informer: listing 30,000
            # pods every few seconds would load the API server being measured.
            bound, running = nodes.pod_counts()
            print(
                f"  {time.monotonic() - load._t0:6.1f}s bound {bound} running {running}",
                flush=True,
            )
            return bound, running

        last = [0, 0]

        def all_running() -> bool:
            last[:] = progress()
            return bool(last[1] >= n_pods)

        try:
            wait_for(all_running, timeout=args.hollow_timeout, interval=3, message="Running")
        except WaitTimeout:
            print(f"hollow: NOT all pods Running within {args.hollow_timeout:.0f}s")
    figures["hollow_pods_bound"] = last[0]
    figures["hollow_pods_running"] = last[1]
    figures["hollow_pods_running_s"] = load.wall
    figures["hollow_pods_per_s"] = last[1] / load.wall
    figures["hollow_load_cp_cpu_percent"] = load.percent
    figures["hollow_load_max_lease_gap_s"] = nodes.stats.max_lease_gap
    print(
        f"hollow: {last[1]}/{n_pods} pods in {len(deployments)} Deployments created, scheduled "
        f"and Running in {load.wall:.1f}s ({last[1] / load.wall:.0f} pods/s; cp {load.cpu:.0f} "
        f"cpu-s, {load.percent:.0f}% of one core; longest gap between two renewals of one "
        f"Lease {figures['hollow_load_max_lease_gap_s']:.1f}s)"
    )
    leases0 = nodes.stats.leases
    nodes.stats.reset_lease_gap()
    with Phase(sampler) as steady:
        ready_ok = [0]

        def window() -> bool:
            return bool(time.monotonic() - steady._t0 >= args.steady_seconds)

        wait_for(window, timeout=args.steady_seconds + 5, interval=1)
        for n in api.list("Node").items:
            conds = {c["type"]: c["status"] for c in n["status"].get("conditions") or []}
            ready_ok[0] += conds.get("Ready") == "True"
    figures["hollow_nodes_ready"] = ready_ok[0]
    figures["hollow_lease_renewals_per_s"] = (nodes.stats.leases - leases0) / steady.wall
    figures["hollow_steady_cp_cpu_percent"] = steady.percent
    figures["hollow_steady_max_lease_gap_s"] = nodes.stats.max_lease_gap
    figures["hollow_cp_rss_mib"] = sampler.rss() / 2**20
    figures["hollow_cp_peak_rss_mib"] = sampler.peak_rss / 2**20
    figures["hollow_lease_errors"] = nodes.stats.lease_errors
    figures["hollow_status_errors"] = nodes.stats.status_errors
    print(
        f"hollow: steady {steady.wall:.0f}s: {ready_ok[0]}/{n_nodes} nodes Ready, "
        f"{figures['hollow_lease_renewals_per_s']:.0f} lease renewals/s, cp "
        f"{steady.percent:.0f}% cpu, RSS {figures['hollow_cp_rss_mib']:.0f} MiB "
        f"(peak {figures['hollow_cp_peak_rss_mib']:.0f} MiB)"
    )
    nodes.stop()


# ---------------------------------------------------------------- main


def table(figures: dict[str, float]) -> str:
    width = max(len(k) for k in figures)
    return "\n".join(f"{k:<{width}}  {v:>12.3f}" for k, v in figures.items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    p.add_argument("--replicas", type=int, default=100)
    p.add_argument("--propagation-rounds", type=int, default=5)
    p.add_argument("--grace", type=int, default=15, help="node monitor grace period (s)")
    p.add_argument("--toleration", type=int, default=4, help="NotReady toleration (s)")
    p.add_argument("--hollow-nodes", type=int, default=1000)
    p.add_argument("--hollow-pods", type=int, default=30000)
    p.add_argument("--hollow-workers", type=int, default=16)
    p.add_argument("--hollow-timeout", type=float, default=1800)
    p.add_argument("--steady-seconds", type=float, default=30)
    p.add_argument("--skip-real", action="store_true")
    p.add_argument("--skip-hollow", action="store_true")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    figures: dict[str, float] = {}
    if not args.skip_real:
        if os.geteuid() != 0:
            print("real nodes need root; skipped", file=sys.stderr)
        else:
            real_nodes(args, figures)
    if not args.skip_hollow:
        hollow(args, figures)
    print()
    print(table(figures))
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
