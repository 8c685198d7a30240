"""Batch scheduling (Volcano's model) at scale.

In process (the batch scheduler against its cache, binds applied at once,
no API server): 500 nodes (32 cpu) x 1,000 Jobs of 10 tasks (1 cpu): every
pod pending at the start (10,000), sessions run back to back until all are
bound; figures: session length p50/p99 while pods are pending (wall time,
and the session thread's CPU time, which the machine's load does not
stretch), sessions and wall time to bind them all. Then the share test: two queues weighted 1:3
each submitting twice what the cluster holds; the largest error between a
queue's share of the cluster and its weight's share once nothing more binds.

End to end (`--e2e`, default on): `skiff controlplane` in its own process
(SQLite in a temp dir; the batch scheduler and the Volcano controllers as
it starts them), hollow nodes in this process (the clock starts once every
node is registered and untainted), then the Jobs created
through the API: pods bound per second from the first Job created to the
last pod bound, and the time from the last Job created to the last PodGroup
Running; and the CPU seconds per 1,000 pods the control plane spent
meanwhile (and this process: hollow nodes, clients), with the load average
at the start. It runs twice, on a fresh control plane each time: first as
one process (the components as its threads, the peer figure), then with
`--component-processes` (the batch scheduler and the controller manager as
child processes). Run as one process, the control plane's CPU time about
equals the run's wall time: it is busy throughout (one core, its GIL), so
the pipeline waits on it, whichever of its parts does the work.

Figures (JSON keys): `e2e_pods_per_s`, `e2e_last_job_to_last_gang_running_s`,
`e2e_controlplane_cpu_s_per_1k_pods` (summed over the control plane's
processes: the API server's and its children's), `e2e_hollow_cpu_s_per_1k_pods`
and `e2e_load_avg_1m` are the component-processes run's; the same keys with
`_one_process` appended are the one-process run's (before both ran, the
keys without the suffix meant the one-process run). `--e2e-modes` runs one
of the two only.

    .venv/bin/python -m bench.volcano [--nodes 500] [--jobs 1000] [--tasks 10]
                                      [--no-e2e] [--no-in-process]
                                      [--e2e-modes both|processes|one-process]

Prints a table; the last line is one JSON object of figure -> number.
Volcano itself publishes no comparable figure for this workload; the
targets are issue 35's: >= 1,000 pods/s end to end (component processes), session
p99 <= 0.5 s at 10,000 pending pods.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agent.hollow import HollowConfig, HollowNodes
from bench.host_usage import children
from bench.stats import report
from controlplane.api import jsoncodec, volcano
from controlplane.controllers import podutil
from machinery.clock import RealClock
from tests.harness.cluster import ClusterControlPlane
from tests.harness.wait import wait_for
from tests.unit.controlplane.scheduler.batch.harness import Env

Obj = dict[str, Any]


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def cpu_seconds(pid: int, children: bool = False) -> float:
    """User + system CPU time of a process so far (Linux /proc); with
    `children`, its reaped children's too."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU time so far of `pid` (with its reaped children's) and of each live
    child, by "controlplane" and the child's component module."""
    out = {"controlplane": cpu_seconds(pid, children=True)}
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            name = argv[argv.index(b"-m") + 1].decode() if b"-m" in argv else str(child)
            out[name] = out.get(name, 0.0) + cpu_seconds(child, children=True)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile: its time is in the parent's by now
    return out


def own_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def in_process(nodes: int, jobs: int, tasks: int, figures: dict[str, float]) -> None:
    # The collector's thresholds of the batch scheduler's own process
    # (component.run_component; the API server's when it runs as a thread of
    # it): with CPython's default, full collections over the 10,000 pods'
    # objects land in sessions at random (a session's CPU time 2-3x).
    thresholds = gc.get_threshold()
    jsoncodec.tune_gc()
    try:
        _in_process(nodes, jobs, tasks, figures)
    finally:
        gc.set_threshold(*thresholds)


def _in_process(nodes: int, jobs: int, tasks: int, figures: dict[str, float]) -> None:
    env = Env(clock=RealClock())
    env.nodes(nodes, cpu="32", memory="128Gi")
    for i in range(jobs):
        env.job(f"j{i:04d}", tasks)
    sessions: list[float] = []
    cpu: list[float] = []
    t0 = time.perf_counter()
    total = jobs * tasks
    while len(env.cluster.pods) < total and len(sessions) < 500:
        st = env.sched.run_session()
        if st.pending:
            sessions.append(st.seconds)
            cpu.append(st.cpu_seconds)
    wall = time.perf_counter() - t0
    figures["session_p50_s"] = round(pct(sessions, 50), 4)
    figures["session_p99_s"] = round(pct(sessions, 99), 4)
    figures["session_cpu_p50_s"] = round(pct(cpu, 50), 4)
    figures["session_cpu_p99_s"] = round(pct(cpu, 99), 4)
    figures["sessions_to_bind_all"] = len(sessions)
    figures["inprocess_pods_per_s"] = round(len(env.cluster.pods) / wall, 1)
    figures["inprocess_bound"] = len(env.cluster.pods)
    print(f"in process: {nodes} nodes x {jobs} jobs of {tasks}: {len(env.cluster.pods)} bound "
          f"in {wall:.2f}s over {len(sessions)} sessions; session p50 "
          f"{figures['session_p50_s']:.3f}s p99 {figures['session_p99_s']:.3f}s (CPU p50 "
          f"{figures['session_cpu_p50_s']:.3f}s p99 {figures['session_cpu_p99_s']:.3f}s; load "
          f"average {os.getloadavg()[0]:.1f})")  # fmt: skip


def shares(nodes: int, figures: dict[str, float]) -> None:
    env = Env()
    env.nodes(nodes, cpu="4", memory="16Gi")
    env.queue("light", weight=1)
    env.queue("heavy", weight=3)
    capacity = nodes * 4
    per_queue = capacity // 2  # each queue asks for the whole cluster: 2 x 2-cpu tasks per job
    for i in range(per_queue):
        env.job(f"l{i:04d}", 2, queue="light")
        env.job(f"h{i:04d}", 2, queue="heavy")
    for _ in range(50):
        if not env.sched.run_session().bound:
            break
    light = len(env.bound("l")) / capacity
    heavy = len(env.bound("h")) / capacity
    err = max(abs(light - 0.25), abs(heavy - 0.75))
    figures["share_light"] = round(light, 4)
    figures["share_heavy"] = round(heavy, 4)
    figures["share_error_max"] = round(err, 4)
    print(f"shares 1:3 on {nodes} nodes: light {light:.3f} heavy {heavy:.3f} "
          f"(largest error {err:.3f})")  # fmt: skip


def vcjob(name: str, tasks: int) -> Obj:
    return {
        "apiVersion": volcano.BATCH_API,
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": tasks,
            "schedulerName": "volcano",
            "tasks": [{
                "name": "t", "replicas": tasks,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{
                    "name": "c", "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}},
            }],
        },
    }  # fmt: skip


def e2e(nodes: int, jobs: int, tasks: int, processes: bool) -> dict[str, float]:
    """One end-to-end run on a fresh control plane; its figures (keys without a suffix)."""
    # The hollow nodes' Pod informer keeps every pod, as `python -m agent.hollow`
    # does: the collector's thresholds of that command (and of the components).
    thresholds = gc.get_threshold()
    jsoncodec.tune_gc()
    try:
        return _e2e(nodes, jobs, tasks, processes)
    finally:
        gc.set_threshold(*thresholds)


def _e2e(nodes: int, jobs: int, tasks: int, processes: bool) -> dict[str, float]:
    mode = "component processes" if processes else "one process"
    figures: dict[str, float] = {}
    base = Path(tempfile.mkdtemp(prefix="skiff-bench-volcano-"))
    # The control plane in its own process (API server, controllers, batch
    # scheduler: threads of it, or its children with --component-processes),
    # the hollow nodes and the submitting clients in this one.
    extra = ["--max-workers", "4096", "--disable", "scheduler"]
    cp = ClusterControlPlane(
        base / "cp", "127.0.0.1", [*extra, "--component-processes" if processes else "--no-component-processes"],
        # nodelifecycle: a new Node carries the not-ready taint until it lifts it.
        ["--controllers", "volcano-job,volcano-podgroup,garbagecollector,nodelifecycle"],
    )  # fmt: skip
    cp.start()
    # Lean watches, as `python -m agent.hollow` connects: no node reads managedFields.
    api = cp.client(timeout=120, lean_watches=True)
    hollow = HollowNodes(api, HollowConfig(nodes=nodes, cpu="32", memory="128Gi", workers=8))
    try:
        hollow.start()

        def schedulable() -> bool:
            # Registered, and rid of the not-ready taint a new Node carries
            # until the node lifecycle controller sees it Ready: the clock
            # starts on a cluster whose nodes take pods, not one half tainted.
            found = api.list("Node").items
            return len(found) >= nodes and not any(podutil.spec(n).get("taints") for n in found)

        wait_for(schedulable, timeout=300, interval=1, message="every node schedulable")
        total = jobs * tasks
        assert cp.daemon is not None
        pid = cp.daemon.pid
        if processes:
            wait_for(lambda: len(tree_cpu_seconds(pid)) >= 3, timeout=60,
                     message="the component processes")  # fmt: skip
        cp_cpu0, own_cpu0 = tree_cpu_seconds(pid), own_cpu_seconds()
        figures["e2e_load_avg_1m"] = round(os.getloadavg()[0], 1)
        t0 = time.monotonic()
        # Submitted by 8 clients at once, as many users (or a workflow engine) would.
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda i: api.create(volcano.JOB_KEY, vcjob(f"b{i:04d}", tasks), "default"),
                    range(jobs),
                )
            )
        t_created = time.monotonic()
        print(f"e2e ({mode}): {jobs} jobs created in {t_created - t0:.1f}s", flush=True)

        last = [0.0]

        def all_bound() -> bool:
            bound, running = hollow.pod_counts()
            if time.monotonic() - last[0] >= 5:
                last[0] = time.monotonic()
                print(f"  {last[0] - t0:6.1f}s pods bound {bound} running {running}",
                      flush=True)  # fmt: skip
            return bool(bound >= total)

        wait_for(all_bound, timeout=1800, interval=1, message="every pod bound")
        # When the hollow nodes' informer saw the last bind, not when the
        # once-a-second poll above noticed it (up to a second later).
        t_bound = hollow.stats.last_bound_at

        def all_running() -> bool:
            groups = api.list("PodGroup", "default").items
            return len(groups) >= jobs and all(
                (g.get("status") or {}).get("phase") == "Running" for g in groups
            )

        wait_for(all_running, timeout=600, interval=1, message="every PodGroup Running")
        t_running = time.monotonic()
        cp_cpu1 = tree_cpu_seconds(pid)
        parts = {k: v - cp_cpu0.get(k, 0.0) for k, v in cp_cpu1.items()}
        cp_cpu = sum(parts.values())
        own_cpu = own_cpu_seconds() - own_cpu0
        figures["e2e_pods_per_s"] = round(total / (t_bound - t0), 1)
        figures["e2e_last_job_to_last_gang_running_s"] = round(t_running - t_created, 2)
        # What the control plane (and this process: hollow nodes, clients)
        # spent per 1,000 pods; near the wall time when the control plane is the limit.
        figures["e2e_controlplane_cpu_s_per_1k_pods"] = round(cp_cpu * 1000 / total, 2)
        figures["e2e_hollow_cpu_s_per_1k_pods"] = round(own_cpu * 1000 / total, 2)
        split = ", ".join(f"{k} {v:.1f}s" for k, v in parts.items())
        print(f"e2e ({mode}): CPU control plane {cp_cpu:.1f}s ({split}) over "
              f"{t_bound - t0:.1f}s, hollow nodes and clients {own_cpu:.1f}s "
              f"(load average {figures['e2e_load_avg_1m']} at the start)")  # fmt: skip
        print(f"e2e ({mode}): {total} pods bound in {t_bound - t0:.1f}s "
              f"({figures['e2e_pods_per_s']:.0f} pods/s); last job created -> last gang Running "
              f"{t_running - t_created:.1f}s", flush=True)  # fmt: skip
    finally:
        hollow.stop()
        api.close()
        cp.stop()
        shutil.rmtree(base, ignore_errors=True)
    return figures


def e2e_table(one: dict[str, float], procs: dict[str, float]) -> None:
    """Both end-to-end runs side by side, the one-process run as the peer."""
    print()
    print(f"{'end to end':40} {'one process':>12} {'component processes':>20}")
    for key in one or procs:
        a = f"{one[key]}" if key in one else "-"
        b = f"{procs[key]}" if key in procs else "-"
        print(f"{key:40} {a:>12} {b:>20}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.volcano")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--e2e", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--in-process", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--e2e-modes", choices=("both", "processes", "one-process"), default="both",
                   help="the end-to-end run as one process, with --component-processes, or both")  # fmt: skip
    args = p.parse_args(argv)
    figures: dict[str, float] = {}
    if args.in_process:
        in_process(args.nodes, args.jobs, args.tasks, figures)
        shares(min(args.nodes, 100), figures)
    if args.e2e:
        one: dict[str, float] = {}
        procs: dict[str, float] = {}
        if args.e2e_modes in ("both", "one-process"):
            one = e2e(args.nodes, args.jobs, args.tasks, processes=False)
        if args.e2e_modes in ("both", "processes"):
            procs = e2e(args.nodes, args.jobs, args.tasks, processes=True)
        e2e_table(one, procs)
        figures.update(procs)
        figures.update({f"{k}_one_process": v for k, v in one.items()})
    print()
    targets = {"session_p99_s": "<= 0.5", "e2e_pods_per_s": ">= 1000", "share_error_max": "<= 0.05",
               "e2e_pods_per_s_one_process": ">= 500"}  # fmt: skip
    report(figures, width=50, targets=targets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
