"""Storage: claim-to-running latency with a provisioned local volume, and the scheduler's volume cost.

1. Claim to Running: a `skiff controlplane` process (API server, scheduler,
   controllers) and one agent over the in-memory CRI runtime (so container
   start-up, which bench/pod_startup.py measures, does not hide the storage
   path). N times, paced at --qps: create a claim of the default class
   (local-path, WaitForFirstConsumer) and a pod using it; the latency is
   from the claim's Create returning to a watch event showing the pod
   Running. On the way: the scheduler picks the node and annotates the
   claim, the PV controller provisions and binds a volume pinned there, the
   scheduler binds the pod, and the agent makes the directory and mounts it.
   Target: p99 <= 2 s.

2. SchedulingBasic (bench/scheduler.py's nodes and pods) in-process, three
   ways: the default profile with pods without claims; the same with the
   four volume plugins disabled (what having them costs a pod that uses no
   volume); and every pod with its own WaitForFirstConsumer claim, bound in
   PreBind by an in-memory writer that plays the PV controller.

    .venv/bin/python -m bench.storage [--claims 100] [--qps 5] [--scale 0.1] [--only latency|scheduler]

Prints a table and, as the last line, one JSON object of figure -> number.
No peer figure is measured here: Rancher's local-path provisioner (k3s)
starts a helper pod per volume, so its provisioning takes seconds.
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent.agent import Agent, AgentConfig
from agent.cri_client import CRIClient
from agent.node_status import NodeConfig
from agent.pod_config import NodeSettings
from bench.scheduler import basic_node, basic_pod, pctl
from controlplane.api import volumes as v
from controlplane.client.apiclient import connect, join
from controlplane.client.interface import ListOptions
from controlplane.scheduler import config
from controlplane.scheduler.scheduler import from_config
from controlplane.scheduler.volume_state import InMemoryVolumeWriter
from tests.fakes.fake_runtime import serve_fake_runtime
from tests.fakes.scheduler_cluster import InMemoryCluster
from tests.harness.controlplane import ControlPlane
from tests.harness.wait import wait_for

Obj = dict[str, Any]
VOLUME_PLUGINS = ["VolumeBinding", "VolumeRestrictions", "NodeVolumeLimits", "VolumeZone"]


def claim(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": v.LOCAL_PATH_CLASS,
            "resources": {"requests": {"storage": "16Mi"}},
        },
        "status": {"phase": "Pending"},
    }


def claim_pod(name: str, claim_name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox:1.36",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                }
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
            "terminationGracePeriodSeconds": 0,
        },
    }


# ---------------------------------------------------------------- 1. latency


def claim_to_running(claims: int, qps: float) -> dict[str, float]:
    tmp = Path(tempfile.mkdtemp(prefix="skiff-bench-storage-"))
    sock_dir = Path(tempfile.mkdtemp(prefix="skbs", dir="/tmp"))
    cp = ControlPlane(tmp / "cp", ["--store", "sqlite", "--no-leader-elect"], components=True)
    try:
        cp.start()
        with serve_fake_runtime(sock_dir / "cri.sock"):
            token = (cp.data_dir / "join-token").read_text().strip()
            ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
            creds = join(f"127.0.0.1:{cp.port}", ca, token, "n1")
            node_api = connect(creds)
            runtime = CRIClient(f"unix://{sock_dir}/cri.sock", timeout=5)
            agent = Agent(
                AgentConfig(
                    node=NodeConfig(name="n1", address="127.0.0.1", fs_path=str(tmp)),
                    root=tmp / "agent",
                    pod_settings=NodeSettings(
                        log_root=str(tmp / "logs"), node_name="n1", host_ip="127.0.0.1"
                    ),
                    network=None,
                    relist_period=0.2,
                ),
                node_api,
                runtime,
                api_config=creds,
            )
            agent.start()
            api = cp.client()
            try:
                wait_for(
                    lambda: (
                        v.LOCAL_PATH_ROOT_ANNOTATION
                        in (api.get("Node", "n1")["metadata"].get("annotations") or {})
                    ),
                    timeout=30,
                )
                return _measure(api, claims, qps)
            finally:
                agent.stop()
                runtime.close()
                node_api.close()
    finally:
        cp.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(api: Any, claims: int, qps: float) -> dict[str, float]:
    started: dict[str, float] = {}
    running: dict[str, float] = {}
    done = threading.Event()
    rv = api.list("Pod", "default").resource_version
    watch = api.watch("Pod", "default", ListOptions(resource_version=rv))

    def observe() -> None:
        for ev in watch:
            obj = ev.object
            name = obj["metadata"]["name"]
            if (obj.get("status") or {}).get("phase") == "Running" and name not in running:
                running[name] = time.perf_counter()
                if len(running) >= claims:
                    done.set()
                    return

    threading.Thread(target=observe, daemon=True).start()
    for i in range(claims):
        name = f"b{i}"
        body = claim(name)
        del body["metadata"]["uid"], body["status"]
        api.create("PersistentVolumeClaim", body, "default")
        started[name] = time.perf_counter()
        api.create("Pod", claim_pod(name, name), "default")
        time.sleep(1.0 / qps)  # pacing of the load, not a wait for a condition
    done.wait(60 + claims / qps)
    watch.stop()
    latencies = [running[n] - started[n] for n in started if n in running]
    return {
        "claims": float(claims),
        "running": float(len(latencies)),
        "p50_s": pctl(latencies, 0.5),
        "p99_s": pctl(latencies, 0.99),
        "max_s": max(latencies) if latencies else float("nan"),
    }


# ---------------------------------------------------------------- 2. scheduler


def scheduling_basic(nodes: int, pods: int, with_claims: bool, plugins: bool) -> dict[str, float]:
    cfg: Obj | None = None if plugins else {"profiles": [{"disabled": VOLUME_PLUGINS}]}
    cluster = InMemoryCluster()
    cluster.record_events = False
    sched = from_config(config.parse(cfg), cluster)
    sched.volumes.writer = InMemoryVolumeWriter(sched.volumes)
    sched.on_storage(
        "StorageClass",
        "ADDED",
        {
            "metadata": {"name": v.LOCAL_PATH_CLASS},
            "provisioner": v.LOCAL_PATH_PROVISIONER,
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    )
    for i in range(nodes):
        node = basic_node(i)
        node["metadata"].setdefault("annotations", {})[v.LOCAL_PATH_ROOT_ANNOTATION] = "/srv"
        node["metadata"].setdefault("labels", {})[v.LOCAL_PATH_LABEL] = "true"
        cluster.nodes[node["metadata"]["name"]] = node
        sched.on_node_add(node)
    for i in range(pods):
        pod = basic_pod(i)
        if with_claims:
            c = claim(f"c{i}")
            sched.volumes.on_event("PersistentVolumeClaim", "ADDED", c)
            pod["spec"]["volumes"] = [
                {"name": "data", "persistentVolumeClaim": {"claimName": f"c{i}"}}
            ]
        cluster.pods[f"default/{pod['metadata']['name']}"] = pod
        sched.on_pod_add(pod)
    gc.collect()
    gc.freeze()
    latencies: list[float] = []
    start, cpu_start = time.perf_counter(), time.thread_time()
    while True:
        t0 = time.perf_counter()
        if not sched.schedule_one(block=False):
            break
        latencies.append(time.perf_counter() - t0)
    elapsed, cpu = time.perf_counter() - start, time.thread_time() - cpu_start
    gc.unfreeze()
    scheduled = len(cluster.binds)
    return {
        "scheduled": float(scheduled),
        "pods_per_s": scheduled / elapsed if elapsed else 0.0,
        "cpu_pods_per_s": scheduled / cpu if cpu else 0.0,
        "p50_ms": pctl(latencies, 0.5) * 1000,
        "p99_ms": pctl(latencies, 0.99) * 1000,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.storage")
    parser.add_argument("--claims", type=int, default=100)
    parser.add_argument("--qps", type=float, default=5.0)
    parser.add_argument("--scale", type=float, default=0.1, help="of 5,000 nodes x 10,000 pods")
    parser.add_argument("--only", choices=["latency", "scheduler"], default=None)
    args = parser.parse_args(argv)
    figures: dict[str, float] = {}
    rows: list[tuple[str, ...]] = []
    if args.only in (None, "latency"):
        r = claim_to_running(args.claims, args.qps)
        rows.append(
            (
                f"claim -> pod Running, local-path ({args.claims} claims, {args.qps:g}/s)",
                f"{r['running']:.0f}/{r['claims']:.0f}",
                f"p50 {r['p50_s']:.3f} s",
                f"p99 {r['p99_s']:.3f} s",
                "target p99 <= 2 s",
            )
        )
        figures.update({f"claim_to_running_{k}": round(x, 4) for k, x in r.items()})
    if args.only in (None, "scheduler"):
        nodes, pods = int(5000 * args.scale), int(10000 * args.scale)
        for key, label, claims, plugins in (
            ("basic_no_volume_plugins", "SchedulingBasic, volume plugins off", False, False),
            ("basic", "SchedulingBasic, no claims", False, True),
            ("basic_with_claims", "SchedulingBasic, a WFFC claim per pod", True, True),
        ):
            r = scheduling_basic(nodes, pods, claims, plugins)
            rows.append(
                (
                    f"{label} ({nodes} nodes)",
                    f"{r['scheduled']:.0f}/{pods}",
                    f"{r['pods_per_s']:,.0f} pods/s",
                    f"p50 {r['p50_ms']:.3f} ms",
                    f"p99 {r['p99_ms']:.3f} ms",
                )
            )
            figures.update({f"{key}_{k}": round(x, 4) for k, x in r.items()})
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
