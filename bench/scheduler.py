"""kube-scheduler's scheduler_perf workloads, in skiff's terms.

Workloads (nodes x pods, all pods pending at the start, as scheduler_perf's
"measure pods"):
- SchedulingBasic: 5,000 nodes (4 cpu, 32Gi, 110 pods) x 10,000 pods
  (100m, 500Mi).
- SchedulingPodAntiAffinity: the same nodes; pods labelled color=green with
  required anti-affinity to color=green per hostname (one per node).
- SchedulingTopologySpread: nodes in 10 zones; pods with maxSkew 1 per zone,
  DoNotSchedule.
- SchedulingNodeAffinity: nodes in 10 zones; pods require zone In [z1, z2]
  and prefer z1.

Mode `inprocess` (the default) drives the scheduler against its cache and an
in-memory cluster with inline binds: pods/s over the whole run and p50/p99 of
the per-pod scheduling latency (one scheduling + binding cycle). Placement
quality compares the default sampling (percentageOfNodesToScore adaptive:
10% of 5,000 nodes from a rotating start) with exhaustive scoring of every
node: how evenly LeastAllocated spread the pods (coefficient of variation of
node cpu use, max pods on a node) and how tightly MostAllocated packed them
(nodes used against the ideal).

Mode `e2e` (also run by default for SchedulingBasic; `--mode inprocess` skips it)
starts `skiff controlplane` as a separate process (SQLite in a temporary
directory, scheduler component disabled), creates the nodes and pending pods
through the API, then runs the scheduler component's `SchedulerService`
(informers, scheduling loop, binds on a thread pool) in this process: pods/s
from informer sync until every bind is persisted (the PATCH returned), and
p50/p99 of the bind round trip.

Prints a table; the last line is one JSON object of figure -> number.

    .venv/bin/python -m bench.scheduler [--quick] [--workloads basic,anti,...]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from controlplane.scheduler import config
from controlplane.scheduler.binder import ApiClusterWriter, BindError
from controlplane.scheduler.scheduler import Scheduler, from_config
from tests.fakes.scheduler_cluster import InMemoryCluster
from tests.fakes.scheduler_objects import make_node, make_pod

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"


@dataclass
class Workload:
    key: str
    name: str
    nodes: int
    pods: int
    node: Callable[[int], Obj]
    pod: Callable[[int], Obj]


def basic_node(i: int) -> Obj:
    return make_node(f"node-{i}", cpu="4", memory="32Gi", pods="110")


def zoned_node(i: int) -> Obj:
    return make_node(f"node-{i}", cpu="4", memory="32Gi", pods="110", labels={ZONE: f"z{i % 10}"})


def basic_pod(i: int) -> Obj:
    return make_pod(f"pod-{i}", cpu="100m", memory="500Mi", image="registry.k8s.io/pause:3.9")


def anti_pod(i: int) -> Obj:
    term = {
        "labelSelector": {"matchLabels": {"color": "green"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return make_pod(
        f"anti-{i}",
        cpu="100m",
        memory="500Mi",
        labels={"color": "green"},
        spec={
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        },
    )


def spread_pod(i: int) -> Obj:
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    return make_pod(
        f"spread-{i}",
        cpu="100m",
        memory="500Mi",
        labels={"app": "spread"},
        spec={"topologySpreadConstraints": [constraint]},
    )


def affinity_pod(i: int) -> Obj:
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1", "z2"]}]}
        ]
    }
    preferred = [
        {
            "weight": 1,
            "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z1"]}]},
        }
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }
    }
    return make_pod(f"aff-{i}", cpu="100m", memory="500Mi", spec={"affinity": affinity})


def workloads(scale: float) -> list[Workload]:
    n, p = int(5000 * scale), int(10000 * scale)
    return [
        Workload("basic", "SchedulingBasic", n, p, basic_node, basic_pod),
        Workload(
            "anti_affinity", "SchedulingPodAntiAffinity", n, int(4000 * scale), basic_node, anti_pod
        ),
        Workload(
            "topology_spread",
            "SchedulingTopologySpread",
            n,
            int(5000 * scale),
            zoned_node,
            spread_pod,
        ),
        Workload(
            "node_affinity",
            "SchedulingNodeAffinity",
            n,
            int(5000 * scale),
            zoned_node,
            affinity_pod,
        ),
    ]


@dataclass
class Result:
    cpu_pods_per_s: float  # pods per CPU-second of the scheduling thread (load-independent)
    pods_per_s: float
    p50_ms: float
    p99_ms: float
    scheduled: int
    pods: int
    sched: Scheduler
    cluster: InMemoryCluster


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, 0 when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pctl(values: list[float], q: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def run_inprocess(w: Workload, cfg: Obj | None = None) -> Result:
    cluster = InMemoryCluster()
    cluster.record_events = False  # binds are not fed back: the cache's assumptions stand
    sched = from_config(config.parse(cfg), cluster)
    for i in range(w.nodes):
        node = w.node(i)
        cluster.nodes[node["metadata"]["name"]] = node
        sched.on_node_add(node)
    for i in range(w.pods):
        pod = w.pod(i)
        cluster.pods[f"default/{pod['metadata']['name']}"] = pod
        sched.on_pod_add(pod)
    # The cluster objects live for the whole run: keep the cyclic GC from rescanning them.
    gc.collect()
    gc.freeze()
    latencies: list[float] = []
    clock = time.perf_counter
    start, cpu_start = clock(), time.thread_time()
    while True:
        t0 = clock()
        if not sched.schedule_one(block=False):
            break
        latencies.append(clock() - t0)
    elapsed = clock() - start
    cpu = time.thread_time() - cpu_start
    gc.unfreeze()
    scheduled = len(cluster.binds)
    return Result(
        scheduled / cpu if cpu else 0.0,
        scheduled / elapsed if elapsed else 0.0,
        pctl(latencies, 0.5) * 1000,
        pctl(latencies, 0.99) * 1000,
        scheduled,
        w.pods,
        sched,
        cluster,
    )


@contextmanager
def controlplane_process() -> Iterator[tuple[GrpcApiClient, int]]:
    """`skiff controlplane` in a child process on a free port; an admin client to it, its pid."""
    with tempfile.TemporaryDirectory(prefix="skiff-bench-") as tmp:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        cmd = [
            sys.executable,
            "-c",
            "import sys; from controlplane.main import main; sys.exit(main(sys.argv[1:]))",
            "--listen", f"127.0.0.1:{port}", "--data-dir", tmp, "--log-level", "WARNING",
            "--disable", "scheduler", "--disable", "controllers",
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        )
        try:
            conf = os.path.join(tmp, "admin.conf")
            deadline = time.monotonic() + 60
            while not os.path.exists(conf):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("skiff controlplane did not start")
                time.sleep(0.05)
            client = connect(load_config(conf), timeout=30)
            try:
                yield client, proc.pid
            finally:
                client.close()
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


class TimedWriter(ApiClusterWriter):
    """The API writer, timing each bind round trip."""

    def __init__(self, client: GrpcApiClient) -> None:
        super().__init__(client)
        self.bind_seconds: list[float] = []

    def bind(self, pod: Obj, node: str, annotations: dict[str, str] | None = None) -> None:
        t0 = time.perf_counter()
        super().bind(pod, node, annotations)
        self.bind_seconds.append(time.perf_counter() - t0)

    def bind_many(
        self, items: list[tuple[Obj, str, dict[str, str] | None]], max_batch: int = 256
    ) -> list[BindError | None]:
        t0 = time.perf_counter()
        out = super().bind_many(items, max_batch)
        self.bind_seconds.extend([time.perf_counter() - t0] * len(items))
        return out


def run_e2e(
    w: Workload, bind_workers: int = 16, timeout: float = 600.0, score_annotation: bool = True
) -> dict[str, float]:
    from controlplane.scheduler.run import SchedulerService

    with controlplane_process() as (client, server_pid):
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: client.create("Node", w.node(i)), range(w.nodes)))
            list(pool.map(lambda i: client.create("Pod", w.pod(i), "default"), range(w.pods)))
        cfg = config.parse({"scoreAnnotation": score_annotation})
        service = SchedulerService(client, cfg, bind_workers=bind_workers)
        writer = TimedWriter(client)
        service.scheduler.writer = writer
        service.factory.start()
        service.factory.wait_for_cache_sync(120)
        stop = threading.Event()
        server_cpu0 = proc_cpu(server_pid)
        start, cpu0 = time.perf_counter(), time.process_time()
        loop = threading.Thread(target=service.scheduler.run, args=(stop,), daemon=True)
        loop.start()
        deadline = time.monotonic() + timeout
        while service.scheduler.stats["scheduled"] < w.pods and time.monotonic() < deadline:
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        server_cpu = proc_cpu(server_pid) - server_cpu0
        done = service.scheduler.stats["scheduled"]
        stop.set()
        service.scheduler.queue.close()
        loop.join(10)
        service.factory.shutdown()
        service.scheduler.shutdown_binds()
        service.executor.shutdown()
        return {
            "pods_per_s": done / elapsed if elapsed else 0.0,
            "scheduled": float(done),
            "bind_p50_ms": pctl(writer.bind_seconds, 0.5) * 1000,
            "bind_p99_ms": pctl(writer.bind_seconds, 0.99) * 1000,
            # CPU per pod, which the machine's other load does not change:
            # this process (informers, scheduling, binds) and the API server.
            "scheduler_cpu_ms_per_pod": cpu / done * 1000 if done else 0.0,
            "apiserver_cpu_ms_per_pod": server_cpu / done * 1000 if done else 0.0,
        }


def node_loads(r: Result) -> list[int]:
    counts = {name: 0 for name in r.cluster.nodes}
    for _, node in r.cluster.binds:
        counts[node] += 1
    return list(counts.values())


def spread_quality(r: Result) -> dict[str, float]:
    loads = node_loads(r)
    mean = statistics.fmean(loads)
    return {
        "cv": statistics.pstdev(loads) / mean if mean else 0.0,
        "max_pods_per_node": float(max(loads)),
    }


def pack_quality(r: Result, per_node: int) -> dict[str, float]:
    used = sum(1 for n in node_loads(r) if n)
    ideal = -(-r.scheduled // per_node)
    return {"nodes_used": float(used), "ideal_nodes": float(ideal)}


MOST = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scheduler")
    parser.add_argument("--mode", choices=["inprocess", "e2e", "both"], default="both")
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument(
        "--no-score-annotation",
        action="store_true",
        help="e2e: do not write the scores annotation at bind",
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes (smoke run)")
    parser.add_argument("--workloads", default="basic,anti_affinity,topology_spread,node_affinity")
    parser.add_argument(
        "--no-quality", action="store_true", help="skip the exhaustive-scoring comparison"
    )
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    chosen = set(args.workloads.split(","))
    figures: dict[str, float | None] = {}
    rows: list[tuple[str, ...]] = []
    results: dict[str, Result] = {}
    for w in workloads(scale):
        if w.key not in chosen or args.mode == "e2e":
            continue
        r = run_inprocess(w)
        results[w.key] = r
        rows.append(
            (
                w.name,
                f"{w.nodes}",
                f"{r.scheduled}/{r.pods}",
                f"{r.pods_per_s:,.0f}",
                f"{r.cpu_pods_per_s:,.0f}",
                f"{r.p50_ms:.3f}",
                f"{r.p99_ms:.3f}",
            )
        )
        figures[f"{w.key}_inprocess_pods_per_s"] = round(r.pods_per_s, 1)
        figures[f"{w.key}_inprocess_cpu_pods_per_s"] = round(r.cpu_pods_per_s, 1)
        figures[f"{w.key}_p50_ms"] = round(r.p50_ms, 4)
        figures[f"{w.key}_p99_ms"] = round(r.p99_ms, 4)
        figures[f"{w.key}_scheduled"] = r.scheduled
    figures["basic_e2e_pods_per_s"] = None
    if args.mode in ("e2e", "both") and "basic" in chosen:
        basic = next(w for w in workloads(scale) if w.key == "basic")
        e2e = run_e2e(basic, args.bind_workers, score_annotation=not args.no_score_annotation)
        rows.append(
            (
                "SchedulingBasic e2e (API, bind RTT)",
                f"{basic.nodes}",
                f"{e2e['scheduled']:.0f}/{basic.pods}",
                f"{e2e['pods_per_s']:,.0f}",
                "-",
                f"{e2e['bind_p50_ms']:.3f}",
                f"{e2e['bind_p99_ms']:.3f}",
            )
        )
        figures["basic_e2e_pods_per_s"] = round(e2e["pods_per_s"], 1)
        figures["basic_e2e_bind_p50_ms"] = round(e2e["bind_p50_ms"], 3)
        figures["basic_e2e_bind_p99_ms"] = round(e2e["bind_p99_ms"], 3)
        figures["basic_e2e_scheduled"] = e2e["scheduled"]
        figures["basic_e2e_scheduler_cpu_ms_per_pod"] = round(e2e["scheduler_cpu_ms_per_pod"], 3)
        figures["basic_e2e_apiserver_cpu_ms_per_pod"] = round(e2e["apiserver_cpu_ms_per_pod"], 3)
    header = ("workload", "nodes", "scheduled", "pods/s", "pods/cpu-s", "p50 ms", "p99 ms")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        print("  ".join(str(c).ljust(wd) for c, wd in zip(row, widths, strict=True)))

    if not args.no_quality and "basic" in chosen and "basic" in results:
        basic = next(w for w in workloads(scale) if w.key == "basic")
        sampled_least = results["basic"]
        full_least = run_inprocess(basic, {"percentageOfNodesToScore": 100})
        sampled_most = run_inprocess(basic, {"profiles": [{"pluginConfig": MOST}]})
        full_most = run_inprocess(
            basic, {"percentageOfNodesToScore": 100, "profiles": [{"pluginConfig": MOST}]}
        )
        sl, fl = spread_quality(sampled_least), spread_quality(full_least)
        per_node = 40  # 4 cpu / 100m
        sm, fm = pack_quality(sampled_most, per_node), pack_quality(full_most, per_node)
        print()
        print("placement quality (SchedulingBasic)     sampled (adaptive %)   exhaustive (100%)")
        print(f"LeastAllocated  cv of pods per node     {sl['cv']:<22.4f} {fl['cv']:.4f}")
        print(
            f"LeastAllocated  max pods on a node      {sl['max_pods_per_node']:<22.0f} {fl['max_pods_per_node']:.0f}"
        )
        print(
            f"MostAllocated   nodes used (ideal {sm['ideal_nodes']:.0f})  {sm['nodes_used']:<22.0f} {fm['nodes_used']:.0f}"
        )
        print(
            f"pods/s LeastAllocated                   {sampled_least.pods_per_s:<22,.0f} {full_least.pods_per_s:,.0f}"
        )
        print(
            f"pods/s MostAllocated                    {sampled_most.pods_per_s:<22,.0f} {full_most.pods_per_s:,.0f}"
        )
        figures.update(
            {
                "least_allocated_cv_sampled": round(sl["cv"], 4),
                "least_allocated_cv_exhaustive": round(fl["cv"], 4),
                "least_allocated_max_pods_sampled": sl["max_pods_per_node"],
                "least_allocated_max_pods_exhaustive": fl["max_pods_per_node"],
                "most_allocated_nodes_used_sampled": sm["nodes_used"],
                "most_allocated_nodes_used_exhaustive": fm["nodes_used"],
                "most_allocated_nodes_ideal": sm["ideal_nodes"],
                "basic_exhaustive_pods_per_s": round(full_least.pods_per_s, 1),
            }
        )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
