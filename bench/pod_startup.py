"""Pod startup latency and daemon memory on one node, as real processes.

Starts a local docker-registry (127.0.0.1), a `skiff controlplane`, and a
node of `skiff runtime` (or a private containerd) plus `skiff agent`, each
with temporary directories, its own cgroups, bridge and pod CIDR (see
tests/harness/nodeprocs.py). The busybox image is pulled once by a warm-up
pod, so every measured pod finds its image present. Then N pods
(`sleep 3600`, bound to the node by spec.nodeName) are created

- paced: one every 1/--qps seconds, as the Kubernetes density test does;
- burst: all at once (what the node does with a queue of N pods);
- sidecar / two: max(10, N/5) pods paced, each with a native sidecar (an
  init container with restartPolicy Always) beside its app, against the
  same pods with the sidecar as a plain second container, two alternating
  rounds each (target: the sidecar pods' p50 within 10% of the others').

Latency is from the Create call returning to a watch event showing the pod
Running with an IP (observed by this process, like the SLO's "watch"
measurement). Memory is each daemon's RSS (VmRSS; for skiff's runtime
with its zygote) at rest before any pod and with N pods running;
containers' monitors (skiff) or shims (containerd) are summed separately
as PSS, since skiff's monitors are forked from one zygote and share most
of their pages. Prints a table and, as the last line, one JSON object of
figure -> number.

`skiff up` itself (issue 27's target: at most 141 MB RSS at rest) is measured
as a user runs it (`--up-only`: only that, about 30 s): RSS and PSS summed over
its process tree (its runtime and, while it runs, the zygote; no containers),
once Ready and again after one pod was run and deleted (the zygote still runs
then: it exits after 60 s unused). RSS counts the shared libraries' mapped
pages, which depend on the page cache: right after `pip install` wrote the
venv, `skiff up` at rest read 142.9 MB against 137.6 once the cache was dropped
(grpc's extension 15.2 against 9.6); compare RSS taken in the same state (PSS
moves far less).

    sudo .venv/bin/python -m bench.pod_startup [--pods 100] [--qps 5] [--no-containerd]
        [--only skiff|containerd] [--up-only] [--profile DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.layout import Layout
from bench.host_usage import (
    comm,
    cpu_percent,
    descendants,
    in_pod_cgroup,
    pss,
    rss,
    settle,
    tree_memory,
)
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.config import load_config
from controlplane.client.interface import DeleteOptions, ListOptions
from tests.harness import containerd as ctrd
from tests.harness.controlplane import ControlPlane
from tests.harness.images import TestImages
from tests.harness.nodeprocs import (
    Node,
    RuntimeKind,
    registries_yaml,
    running_node,
    short_tempdir,
    start_controlplane,
)
from tests.harness.ports import free_port
from tests.harness.registry import Registry, run_registry
from tests.harness.wait import wait_for

IMAGE = "skiff-bench/busybox:1.36"
MiB = 1 << 20


def skiff_monitor_pids(node: Node) -> list[int]:
    """Monitors of this node's skiff runtime, by the pids it recorded."""
    pids = set()
    for meta in (node.base / "rt" / "root").glob("*/*/meta.json"):
        try:
            d = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        pid = int(d.get("monitor_pid") or 0)
        if pid and comm(pid) in ("skiff-monitor", "skiff-sandbox"):
            pids.add(pid)
    return sorted(pids)


@dataclass
class Memory:
    controlplane: int
    agent: int
    runtime: int  # the runtime daemon and its helpers (zygote), RSS
    per_container: int  # skiff monitors / containerd shims, PSS (not the containers)
    daemons_pss: int = 0  # control plane + agent + runtime helpers, PSS

    @property
    def total(self) -> int:
        return self.controlplane + self.agent + self.runtime


def memory(cp: ControlPlane, node: Node) -> Memory:
    assert cp.proc is not None and node.agent is not None and node.agent.proc is not None
    if node.runtime is not None and node.runtime.proc is not None:
        rt_pid = node.runtime.proc.pid
        helpers = [rt_pid] + [
            p
            for p in descendants(rt_pid)
            if not in_pod_cgroup(p, node.spec.cgroup_name)
            and comm(p) not in ("skiff-monitor", "skiff-sandbox")
        ]
        rt = sum(rss(p) for p in helpers)
        rt_pss = sum(pss(p) for p in helpers)
        pc = sum(pss(p) for p in skiff_monitor_pids(node))
    else:
        c = node._containerd
        assert c is not None
        rt, rt_pss = rss(c.pid), pss(c.pid)
        pc = sum(pss(p) for p in c.shim_pids())
    daemons_pss = pss(cp.proc.pid) + pss(node.agent.proc.pid) + rt_pss
    return Memory(rss(cp.proc.pid), rss(node.agent.proc.pid), rt, pc, daemons_pss)


def settle_memory(cp: ControlPlane, node: Node) -> Memory:
    """Memory once the node has been idle briefly (a steady reading)."""
    return settle(lambda: memory(cp, node))


def bench_pod(name: str, node: Node, run: str, shape: str = "one") -> dict[str, Any]:
    """One `sleep` container; shape "sidecar" adds a native sidecar (an init
    container with restartPolicy Always), "two" the same second container
    as a plain one (what a sidecar was before native sidecars)."""
    app = {"name": "c", "image": IMAGE, "command": ["sleep", "3600"]}
    side = {"name": "side", "image": IMAGE, "command": ["sleep", "3600"]}
    spec: dict[str, Any] = {
        "nodeName": node.spec.name,
        "terminationGracePeriodSeconds": 0,
        "containers": [app],
    }
    if shape == "sidecar":
        spec["initContainers"] = [{**side, "restartPolicy": "Always"}]
    elif shape == "two":
        spec["containers"] = [side, app]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": run}},
        "spec": spec,
    }


PY_SPY = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


@contextmanager
def profiled(pids: dict[str, int], out_dir: Path | None) -> Iterator[None]:
    """py-spy (sampling, --nonblocking) on each daemon while the body runs;
    collapsed stacks land in out_dir/<name>.txt. Stopped by pid (SIGINT)."""
    if out_dir is None or not Path(PY_SPY).exists():
        yield
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    procs = []
    for name, pid in pids.items():
        argv = [PY_SPY, "record", "--nonblocking", "-r", "200", "-f", "raw",
                "-p", str(pid), "-o", str(out_dir / f"{name}.txt")]  # fmt: skip
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()


def profile_summary(path: Path, top: int = 12) -> list[str]:
    """Top functions by inclusive share of samples (a function counted once
    per stack) from py-spy's collapsed output."""
    inclusive: dict[str, int] = {}
    total = 0
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        for frame in set(stack.split(";")):
            inclusive[frame] = inclusive.get(frame, 0) + n
    ranked = sorted(inclusive.items(), key=lambda kv: -kv[1])
    skip = ("<module>", "run (threading.py", "_bootstrap", "worker (concurrent")
    out = []
    for frame, n in ranked:
        if any(s in frame for s in skip):
            continue
        out.append(f"{100 * n / max(total, 1):5.1f}%  {frame}")
        if len(out) >= top:
            break
    return out


@dataclass
class Watcher:
    """Records when each pod of a run is first seen Running with an IP. The
    watch is reopened from a fresh list if it ends (a pod seen Running in
    that list is stamped then: late, never early)."""

    api: GrpcApiClient
    run: str
    running_at: dict[str, float] = field(default_factory=dict)
    _thread: threading.Thread | None = None
    _watch: Any = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _opened: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        """Start watching; returns once the first watch is open."""
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        wait_for(self._opened.is_set, timeout=30, message=f"watch of {self.run} open")

    def _seen(self, obj: dict[str, Any]) -> None:
        st = obj.get("status") or {}
        name = (obj.get("metadata") or {}).get("name")
        if name and st.get("phase") == "Running" and st.get("podIP"):
            self.running_at.setdefault(name, time.monotonic())

    def _loop(self) -> None:
        selector = ListOptions(label_selector=f"bench={self.run}")
        while not self._stop.is_set():
            try:
                listed = self.api.list("Pod", "default", selector)
                for obj in listed.items:
                    self._seen(obj)
                opts = ListOptions(
                    label_selector=selector.label_selector,
                    resource_version=listed.resource_version,
                )
                with self._lock:
                    if self._stop.is_set():
                        return
                    self._watch = self.api.watch("Pod", "default", opts)
                self._opened.set()
                for ev in self._watch:
                    if ev.type != "BOOKMARK":
                        self._seen(ev.object)
            except Exception as exc:  # reopen: the watch expired or the stream broke
                if not self._stop.is_set():
                    print(f"watch of {self.run} reopened after: {exc}", file=sys.stderr)

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            if self._watch is not None:
                self._watch.stop()


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(q / 100 * len(s)) - 1))  # nearest rank
    return s[k]


def run_pods(
    api: GrpcApiClient,
    node: Node,
    run: str,
    count: int,
    qps: float,
    timeout: float,
    shape: str = "one",
) -> list[float]:
    """Create `count` pods (paced at `qps`, or all at once if qps <= 0);
    return each one's created -> Running latency in seconds."""
    watcher = Watcher(api, run)
    watcher.start()
    created: dict[str, float] = {}
    start = time.monotonic()
    try:
        for i in range(count):
            if qps > 0:
                due = start + i / qps
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)  # pacing the load, not waiting for an effect
            name = f"{run}-{i}"
            api.create("Pod", bench_pod(name, node, run, shape), "default")
            created[name] = time.monotonic()
        wait_for(
            lambda: len(watcher.running_at) >= count,
            timeout=timeout,
            interval=0.1,
            message=f"{count} pods of {run} Running",
        )
    finally:
        watcher.stop()
    return [watcher.running_at[n] - created[n] for n in created]


def delete_run(api: GrpcApiClient, run: str, node: Node, timeout: float) -> None:
    for p in api.list("Pod", "default", ListOptions(label_selector=f"bench={run}")).items:
        api.delete("Pod", p["metadata"]["name"], "default", DeleteOptions(grace_period_seconds=1))

    def emptied() -> bool:
        left = api.list("Pod", "default", ListOptions(label_selector=f"bench={run}")).items
        if left:
            return False
        cri = node.cri()
        try:
            return not cri.list_pod_sandboxes()
        finally:
            cri.close()

    wait_for(emptied, timeout=timeout, interval=0.2, message=f"pods of {run} removed")


@contextmanager
def cluster(registry: Registry, kind: RuntimeKind) -> Iterator[tuple[ControlPlane, Node]]:
    base = short_tempdir("skbench-cp-")
    cp: ControlPlane | None = None
    try:
        cp = start_controlplane(base, component_threads=False)  # as it runs by default
        with running_node(
            f"127.0.0.1:{cp.port}",
            cp.data_dir,
            kind,
            registry.url,
            agent_args=("--max-pods", "250", "--log-level", "WARNING"),
        ) as node:
            yield cp, node
    finally:
        if cp is not None:
            cp.close()
        shutil.rmtree(base, ignore_errors=True)


def bench_runtime(
    registry: Registry, kind: RuntimeKind, pods: int, qps: float, profile: Path | None = None
) -> dict[str, float]:
    out: dict[str, float] = {}
    with cluster(registry, kind) as (cp, node):
        api = cp.client()
        node.wait_ready(api)
        # Warm-up: pulls the image (and containerd's pause image) once.
        run_pods(api, node, "warm", 1, 0, timeout=120)
        delete_run(api, "warm", node, timeout=60)
        # "At rest": give the daemons a moment after the warm-up's deletion.
        rest = settle_memory(cp, node)
        assert cp.proc is not None and node.agent is not None
        daemons = {"controlplane": cp.proc.pid, "agent": node.agent.pid}
        if node.runtime is not None:
            daemons["runtime"] = node.runtime.pid
        for phase, q in (("paced", qps), ("burst", 0.0)):
            where = profile / f"{kind}-{phase}" if profile is not None else None
            with profiled(daemons, where):
                lat = run_pods(api, node, phase, pods, q, timeout=60 + pods * 3)
            out[f"{kind}_{phase}_p50_s"] = statistics.median(lat)
            out[f"{kind}_{phase}_p99_s"] = percentile(lat, 99)
            out[f"{kind}_{phase}_max_s"] = max(lat)
            if phase == "burst":
                loaded = memory(cp, node)
                out[f"{kind}_agent_cpu_pct_{pods}pods"] = cpu_percent(node.agent.pid, 10.0)
            delete_run(api, phase, node, timeout=120 + pods)
        # A native sidecar against the same container as a plain one,
        # paced, alternating runs so the machine's drift hits both alike.
        side_pods = max(10, pods // 5)
        lats: dict[str, list[float]] = {"sidecar": [], "two": []}
        for rnd in range(2):
            for shape in ("two", "sidecar") if rnd else ("sidecar", "two"):
                run = f"{shape}{rnd}"
                lats[shape] += run_pods(api, node, run, side_pods, qps, 60 + side_pods * 3, shape)
                delete_run(api, run, node, timeout=120 + side_pods)
        for shape, lat in lats.items():
            out[f"{kind}_{shape}_p50_s"] = statistics.median(lat)
            out[f"{kind}_{shape}_p99_s"] = percentile(lat, 99)
        out[f"{kind}_sidecar_vs_two_p50"] = out[f"{kind}_sidecar_p50_s"] / out[f"{kind}_two_p50_s"]
        for label, m in (("rest", rest), (f"{pods}pods", loaded)):
            out[f"{kind}_controlplane_rss_mb_{label}"] = m.controlplane / MiB
            out[f"{kind}_agent_rss_mb_{label}"] = m.agent / MiB
            out[f"{kind}_runtime_rss_mb_{label}"] = m.runtime / MiB
            out[f"{kind}_per_container_rss_mb_{label}"] = m.per_container / MiB
            out[f"{kind}_total_rss_mb_{label}"] = m.total / MiB
            out[f"{kind}_total_pss_mb_{label}"] = m.daemons_pss / MiB
        api.close()
    return out


def up_pod(name: str, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": "up"}},
        "spec": {
            "nodeName": node_name,
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "c", "image": IMAGE, "command": ["sleep", "3600"]}],
        },
    }


def bench_up(registry: Registry) -> tuple[dict[str, float], list[str]]:
    """`skiff up` at rest, as a user runs it: its whole process tree, once
    Ready and again after one pod was run and deleted. Stopped by SIGINT,
    as Ctrl-C does, which must remove the pods and exit 0."""
    base = short_tempdir("skbench-up-")
    node_name = "skiff-up-bench"
    regs = registries_yaml(base / "registries.yaml", registry.url, ("docker.io",))
    argv = [sys.executable, "-m", "skiff", "up", "--data-dir", str(base / "d"),
            "--api-port", str(free_port()), "--node-name", node_name,
            # The ingress is on (its HAProxy would count, but starts only with
            # an Ingress, and there is none at rest), on ports no one else holds.
            "--ingress-http-port", str(free_port()), "--ingress-https-port", str(free_port()),
            "--registry-config", str(regs), "--disable-default-registry-endpoint",
            "--log-level", "warning"]  # fmt: skip
    repo = Path(__file__).resolve().parents[1]
    out: dict[str, float] = {}
    lines: list[str] = []
    with open(base / "up.log", "wb") as log:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, cwd=repo)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().decode()
        if "Ready" not in first:
            raise RuntimeError(f"skiff up did not come up: {first!r}\n"
                               + (base / "up.log").read_text()[-3000:])  # fmt: skip
        for label in ("rest", "rest_after_pod"):
            if label == "rest_after_pod":
                with connect(load_config(base / "d" / "admin.conf")) as api:
                    api.create("Pod", up_pod("warm", node_name), "default")

                    def running() -> bool:
                        st = api.get("Pod", "warm", "default").get("status") or {}
                        return st.get("phase") == "Running"

                    wait_for(running, timeout=120, interval=0.2, message="warm pod Running")
                    api.delete("Pod", "warm", "default", DeleteOptions(grace_period_seconds=1))

                    def gone() -> bool:
                        left = api.list("Pod", "default").items
                        return not left and not [p for p in descendants(proc.pid)
                                                 if comm(p) == "skiff-sandbox"]  # fmt: skip

                    wait_for(gone, timeout=60, interval=0.2, message="warm pod removed")
            m = settle(lambda: tree_memory(proc.pid))
            out[f"up_total_rss_mb_{label}"] = m.rss / MiB
            out[f"up_total_pss_mb_{label}"] = m.pss / MiB
            out[f"up_processes_{label}"] = len(m.rows)
            lines.append(f"skiff up, {label.replace('_', ' ')}:")
            for pid, what, r, p in m.rows:
                lines.append(f"  {r / MiB:7.1f} {p / MiB:7.1f}  pid {pid:<7} {what}")
            lines.append(
                f"  {m.rss / MiB:7.1f} {m.pss / MiB:7.1f}  total over {len(m.rows)} processes"
            )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        if rc != 0:
            print(f"skiff up exited {rc} on SIGINT:\n" + (base / "up.log").read_text()[-3000:],
                  file=sys.stderr)  # fmt: skip
        # skiff up leaves its CNI bridge (as k3s leaves cni0); the bench does not
        bridge = Layout.under(base / "d").cni_bridge
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)
        shutil.rmtree(base, ignore_errors=True)
    return out, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.pod_startup")
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--qps", type=float, default=5.0, help="paced creation rate")
    parser.add_argument("--no-containerd", action="store_true")
    parser.add_argument("--only", choices=("skiff", "containerd"), help="one runtime only")
    parser.add_argument(
        "--up-only", action="store_true", help="only `skiff up`'s memory at rest (no pod startup)"
    )
    parser.add_argument(
        "--profile", type=Path, default=None, help="py-spy the daemons; stacks and a summary here"
    )
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench.pod_startup: run as root (namespaces, cgroups, CNI)", file=sys.stderr)
        return 2
    kinds: list[RuntimeKind] = ["skiff"]
    if not args.no_containerd and ctrd.available():
        kinds.append("containerd")
    if args.only:
        kinds = [k for k in kinds if k == args.only]
    if args.up_only:
        kinds = []
    figures: dict[str, float] = {}
    up_lines: list[str] = []
    build = short_tempdir("skbench-img-")
    try:
        images = TestImages(build)
        with run_registry() as registry:
            registry.push(images.busybox(), repository="skiff-bench/busybox", tag="1.36")
            registry.push(ctrd.pause_image(images), repository="pause", tag="3.9")
            for kind in kinds:
                figures.update(bench_runtime(registry, kind, args.pods, args.qps, args.profile))
            if args.up_only or "skiff" in kinds:
                up_figures, up_lines = bench_up(registry)
                figures.update(up_figures)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    if args.up_only:
        print("`skiff up` memory, MB: RSS, PSS per process")
        print("\n".join(up_lines))
        print(
            "target: skiff up at rest (control plane + agent + runtime, all processes) <= 141 MB RSS"
        )
        print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
        return 0

    print(f"pod startup, created -> Running (image present), {args.pods} pods on one node")
    print(f"{'runtime':<11} {'mode':<16} {'p50 s':>7} {'p99 s':>7} {'max s':>7}")
    for kind in kinds:
        for phase, label in (("paced", f"paced {args.qps:g}/s"), ("burst", "burst")):
            p = f"{kind}_{phase}"
            print(
                f"{kind:<11} {label:<16} {figures[p + '_p50_s']:>7.2f}"
                f" {figures[p + '_p99_s']:>7.2f} {figures[p + '_max_s']:>7.2f}"
            )
    for kind in kinds:
        for shape, label in (("two", "2 containers"), ("sidecar", "native sidecar")):
            p = f"{kind}_{shape}"
            print(
                f"{kind:<11} {label:<16} {figures[p + '_p50_s']:>7.2f} {figures[p + '_p99_s']:>7.2f}"
            )
        ratio = figures[f"{kind}_sidecar_vs_two_p50"]
        print(f"{kind}: a pod with a native sidecar starts in {ratio:.2f}x the time (p50) of the"
              " same pod with its sidecar as a plain container (target <= 1.10)")  # fmt: skip
    print()
    print("RSS MB (runtime: daemon and helpers; per-container: monitors or shims)")
    print(
        f"{'runtime':<11} {'state':<9} {'ctlplane':>9} {'agent':>7} {'runtime':>8}"
        f" {'total':>7} {'tot PSS':>8} {'per-ctr':>8}"
    )
    for kind in kinds:
        for label in ("rest", f"{args.pods}pods"):
            f = {k: figures[f"{kind}_{k}_rss_mb_{label}"] for k in
                 ("controlplane", "agent", "runtime", "total", "per_container")}  # fmt: skip
            total_pss = figures[f"{kind}_total_pss_mb_{label}"]
            print(
                f"{kind:<11} {label:<9} {f['controlplane']:>9.1f} {f['agent']:>7.1f}"
                f" {f['runtime']:>8.1f} {f['total']:>7.1f} {total_pss:>8.1f}"
                f" {f['per_container']:>8.1f}"
            )
    print()
    for kind in kinds:
        cpu = figures[f"{kind}_agent_cpu_pct_{args.pods}pods"]
        print(f"agent CPU at rest with {args.pods} pods running ({kind}): {cpu:.1f}% of one core")
    if up_lines:
        print()
        print("`skiff up` memory, MB: RSS, PSS per process")
        print("\n".join(up_lines))
    if args.profile is not None:
        for stacks in sorted(args.profile.glob("*/*.txt")):
            print(f"\nprofile {stacks.parent.name} {stacks.stem} (inclusive share of samples):")
            for line in profile_summary(stacks):
                print("  " + line)
    print("targets: p99 < 1.5 s; skiff up at rest (control plane + agent + runtime) <= 141 MB RSS")
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
