"""Benchmark of the API server, per store (SQLite, etcd).

Runs `skiff controlplane` as a real process (TLS, tokens, durable writes) on
127.0.0.1 with a temporary data dir (and a real etcd for the etcd store), then
measures from client processes:

- create and update throughput (objects/s) with 1, 10 and 50 concurrent
  clients (each client one thread issuing requests one after another; the
  clients are spread over a few processes so the client side is not the
  bottleneck of one GIL);
- watch delivery latency p50/p99 with 100 watchers (time from just before the
  write is sent to the event arriving at each watcher);
- a List of 100,000 pods: client-side time (request to decoded dicts) and the
  server's memory (RSS) per stored pod, plus the RSS the List itself costs;
- with --authz: the cost of authorization, the same creates/s (10 clients)
  and watch p99 as the admin (system:masters, no RBAC lookup), as a user
  granted `edit` through a RoleBinding (RBAC evaluated on every request) and
  as the controller manager with its own credential (controller-manager.conf,
  its component ClusterRole), interleaved over a few rounds on one server,
  medians compared, with how far each identity's own rounds spread; and the
  CPU cost of one authorization decision in process (bench/authz_cost.py),
  which bounds what RBAC can cost where the end-to-end rounds are too noisy;
- with --quota: the cost of quota admission, creates/s (10 clients, one
  create per call) into a namespace without a ResourceQuota and into one
  whose ResourceQuota limits pods, requests.cpu, requests.memory and
  count/pods (every create evaluated and charged to status.used),
  interleaved over a few rounds on one server, medians compared (Kubernetes
  charges a quota the same way; issue 29 asks for within 10%), with the
  server's CPU time per create in each (less moved by a busy machine).

Prints a table, then as its last line one JSON object of figure -> number.
With --pod-security LEVEL the control plane enforces, audits and warns that
Pod Security Standards level in every namespace (its admission configuration
file's defaults) and the pods created meet it (for restricted: non-root, no
privilege escalation, capabilities dropped, RuntimeDefault seccomp).

- the cost of /metrics is `python -m bench.metrics_cost`: these creates/s
  (10 clients) against a control plane counting every request and storage
  call for /metrics and one started with --no-metrics, both running, rounds
  interleaved, medians compared (issue 34 asks for within 5%).

Usage: python -m bench.apiserver [--stores sqlite,etcd] [--pods 100000] [--quick] [--authz]
                                 [--quota]
                                 [--pod-security restricted]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psutil

from controlplane.api.quantity import parse_quantity

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.authz_cost import authorize_us  # noqa: E402
from bench.crowd import Crowd, in_threads, ops_per_second, p50_p99_ms, paced, shares  # noqa: E402
from bench.pod_security import (  # noqa: E402
    add_pod_security_flag,
    pod,
    pod_security_args,
    set_pod_security,
)
from bench.stats import report  # noqa: E402
from controlplane.api.kinds import by_kind  # noqa: E402
from controlplane.apiserver.codec import encode, object_key  # noqa: E402
from controlplane.client.apiclient import connect  # noqa: E402
from controlplane.client.config import load_config  # noqa: E402
from controlplane.client.interface import ListOptions  # noqa: E402
from tests.harness.etcd import running_etcd  # noqa: E402
from tests.harness.ports import free_port  # noqa: E402
from tests.harness.registry import stop_process  # noqa: E402
from tests.harness.wait import wait_for  # noqa: E402

BATCH = 10  # objects per CreateMany call in the batched rows


# -- the control plane process --------------------------------------------------------


class Server:
    def __init__(self, data_dir: Path, store_args: list[str]) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        log = (data_dir.parent / "controlplane.log").open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "skiff", "controlplane", "--listen", f"127.0.0.1:{self.port}",
             "--data-dir", str(data_dir), "--log-level", "WARNING",
             # The API server alone: no in-process scheduler or controllers
             # listing and watching the pods under measurement.
             "--disable", "scheduler", "--disable", "volcano-scheduler", "--disable", "controllers", *store_args,
             *pod_security_args(data_dir)],
            cwd=REPO, stdout=log, stderr=log,
        )  # fmt: skip
        log.close()
        try:
            wait_for(self._ready, timeout=60, message="skiff controlplane")
        except BaseException:  # never ready: a caller whose Server() raised has nothing to stop
            stop_process(self.proc, timeout=30)
            raise
        self.ps = psutil.Process(self.proc.pid)

    @property
    def conf(self) -> Path:
        return self.data_dir / "admin.conf"

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError("control plane exited; see controlplane.log")
        if not self.conf.exists():
            return False
        with connect(load_config(self.conf), timeout=2) as c:
            c.whoami()
        return True

    def rss(self) -> int:
        return int(self.ps.memory_info().rss)

    def stop(self) -> None:
        stop_process(self.proc, timeout=30)


# -- client processes ------------------------------------------------------------------


def _client_proc(conf: str, op: str, threads: int, per_client: int, tag: str,
                 ready: Any, go: Any, out: Any, namespace: str = "bench") -> None:  # fmt: skip
    client = connect(load_config(conf), timeout=60)
    client.whoami()
    results: list[tuple[float, float, int]] = []
    lock = threading.Lock()

    def work(t: int) -> None:
        prefix = f"{tag}-{os.getpid()}-{t}"
        objs = []
        if op == "update":
            objs = [client.create("Pod", pod(f"{prefix}-u"), "bench")]
        go.wait()
        start = time.perf_counter()
        n = 0
        for j in range(per_client):
            if op == "create":
                client.create("Pod", pod(f"{prefix}-{j}", j), namespace)
            elif op == "create_batch":
                made = client.create_many(
                    [("Pod", pod(f"{prefix}-{j}-{k}", k), "bench") for k in range(BATCH)]
                )
                bad = [r for r in made if isinstance(r, Exception)]
                assert not bad, bad[0]
                n += BATCH - 1
            else:
                current = objs[0]
                current["metadata"]["labels"]["iteration"] = str(j)
                objs[0] = client.update("Pod", current)
            n += 1
        end = time.perf_counter()
        with lock:
            results.append((start, end, n))

    in_threads(work, threads, ready, results, out)
    client.close()


def throughput(
    conf: Path, op: str, clients: int, per_client: int, namespace: str = "bench"
) -> float:
    tag = uuid.uuid4().hex[:6]
    crowd = Crowd(
        partial(_client_proc, namespace=namespace),
        [(str(conf), op, n, per_client, f"{tag}{i}") for i, n in enumerate(shares(clients))],
    )
    crowd.start(settle=0.2)
    return ops_per_second(crowd.results(600))


def _watch_proc(conf: str, watchers: int, expect: int, ready: Any, _go: Any, out: Any) -> None:
    client = connect(load_config(conf), timeout=60)
    latencies: list[float] = []
    lock = threading.Lock()
    opened = []
    for _ in range(watchers):
        opened.append(client.watch("ConfigMap", "watch", allow_bookmarks=False))

    def read(w: Any) -> None:
        mine: list[float] = []
        for event in w:
            now = time.time()
            sent = float(event.object["metadata"]["annotations"]["sent"])
            mine.append(now - sent)
            if len(mine) >= expect:
                break
        with lock:
            latencies.extend(mine)

    in_threads(lambda i: read(opened[i]), len(opened), ready, latencies, out, join_timeout=300)
    for w in opened:
        w.stop()
    client.close()


def watch_latency(conf: Path, watchers: int = 100, events: int = 200,
                  rate: float = 50.0) -> tuple[float, float]:  # fmt: skip
    crowd = Crowd(_watch_proc, [(str(conf), watchers // 2, events)] * 2)
    crowd.start()
    client = connect(load_config(conf))
    tag = uuid.uuid4().hex[:6]  # several runs on one server

    def send(i: int) -> None:
        client.create("ConfigMap", {"metadata": {"name": f"w-{tag}-{i}",
                                                 "annotations": {"sent": repr(time.time())}}},
                      "watch")  # fmt: skip

    paced(events, rate, send)
    latencies = crowd.results(300)
    client.close()
    return p50_p99_ms(latencies)


# -- big list --------------------------------------------------------------------------------


def preload_pods(store_kind: str, data_dir: Path, etcd: str, prefix: str, n: int) -> None:
    """Write n pods straight into the store, encoded exactly as the API server stores them."""
    from controlplane.api import defaults

    info = by_kind("Pod")
    template = pod("x")
    defaults.apply_defaults("Pod", template)
    template["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    template["spec"]["priority"] = 0
    items: list[tuple[str, bytes]] = []
    for i in range(n):
        obj = json.loads(json.dumps(template))
        name = f"pod-{i:06d}"
        obj["metadata"].update(
            name=name, namespace="big", uid=str(uuid.uuid4()),
            creationTimestamp="2026-01-01T00:00:00Z", generation=1,
        )  # fmt: skip
        obj["metadata"]["labels"]["shard"] = str(i % 16)
        items.append((object_key(info, "big", name), encode(obj)))
    if store_kind == "sqlite":
        from controlplane.storage.sqlite import SqliteStore

        sqlite_store = SqliteStore(data_dir / "state.db")
        for start in range(0, n, 10_000):
            sqlite_store.bulk_create(items[start : start + 10_000])
        sqlite_store.close()
    else:
        from controlplane.storage.etcd import EtcdStore

        etcd_store = EtcdStore([etcd], root=prefix, compact_interval=0)
        etcd_store.bulk_create(items)
        etcd_store.close()


def big_list(server: Server, n: int) -> dict[str, float]:
    client = connect(load_config(server.conf), timeout=300)
    client.whoami()
    rss_before = server.rss()
    peak = [rss_before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], server.rss())

    sampler = threading.Thread(target=sample)
    sampler.start()
    t0 = time.perf_counter()
    result = client.list("Pod", "big")
    elapsed = time.perf_counter() - t0
    stop.set()
    sampler.join()
    assert len(result.items) == n, len(result.items)
    t0 = time.perf_counter()
    page = client.list("Pod", "big", ListOptions(limit=500))
    paged = time.perf_counter() - t0
    assert len(page.items) == 500 and page.continue_token
    client.close()
    return {
        "list_s": elapsed,
        "list_page500_ms": paged * 1000,
        "list_peak_extra_mb": (peak[0] - rss_before) / 2**20,
        "rss_mb": rss_before / 2**20,
    }


def store_writes(store_kind: str, work: Path, etcd: str, writers: int, per: int) -> float:
    """Durable creates/s straight into the store from `writers` threads (no API server):
    what group commit (SQLite) or etcd's own batching gives before any API overhead."""
    value = b"x" * 1000
    if store_kind == "sqlite":
        from controlplane.storage.sqlite import SqliteStore

        store: Any = SqliteStore(work / f"direct-{writers}.db")
    else:
        from controlplane.storage.etcd import EtcdStore

        store = EtcdStore([etcd], root=f"/direct-{uuid.uuid4().hex[:8]}", compact_interval=0)

    def write(i: int) -> None:
        for j in range(per):
            store.create(f"/registry/configmaps/d/{i}-{j}", value)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = writers * per / (time.perf_counter() - t0)
    store.close()
    return rate


# -- driver -----------------------------------------------------------------------------------


@contextmanager
def control_plane(
    store_kind: str, work: Path, etcd: str, prefix: str, extra: tuple[str, ...] = ()
) -> Iterator[Server]:
    args = ["--store", store_kind, *extra]
    if store_kind == "etcd":
        args += ["--etcd-endpoints", etcd, "--etcd-prefix", prefix]
    server = Server(work / "cp", args)
    try:
        yield server
    finally:
        server.stop()


def bench_store(store_kind: str, work: Path, etcd: str, pods: int, quick: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    prefix = f"/bench-{uuid.uuid4().hex[:8]}"
    per = {1: 300, 10: 150, 50: 40} if not quick else {1: 50, 10: 20, 50: 4}
    for writers in (10, 50):
        rate = store_writes(
            store_kind, work, etcd, writers, 2000 // writers if quick else 6000 // writers
        )
        figures[f"{store_kind}_store_direct_{writers}w_per_s"] = round(rate, 1)
        print(f"  {store_kind:6} store only (no API server), {writers} writer threads: "
              f"{rate:9.1f} durable writes/s", flush=True)  # fmt: skip
    with control_plane(store_kind, work, etcd, prefix) as server:
        client = connect(load_config(server.conf))
        for ns in ("bench", "watch", "big"):
            client.create("Namespace", {"metadata": {"name": ns}})
        client.close()
        empty_rss = server.rss()
        for op in ("create", "update", "create_batch"):
            for clients in (1, 10, 50):
                calls = per[clients] // 3 if op == "create_batch" else per[clients]
                rate = throughput(server.conf, op, clients, max(calls, 2))
                name = f"create_batch{BATCH}" if op == "create_batch" else op
                figures[f"{store_kind}_{name}_{clients}c_per_s"] = round(rate, 1)
                what = (f"create, {BATCH} per CreateMany call" if op == "create_batch"
                        else f"{op}, one per call")  # fmt: skip
                print(f"  {store_kind:6} {what:33} {clients:3} clients  {rate:9.1f} objects/s",
                      flush=True)  # fmt: skip
        p50, p99 = watch_latency(server.conf, 100, 50 if quick else 200)
        figures[f"{store_kind}_watch_p50_ms"] = round(p50, 2)
        figures[f"{store_kind}_watch_p99_ms"] = round(p99, 2)
        print(f"  {store_kind:6} watch latency, 100 watchers: p50 {p50:.1f} ms  p99 {p99:.1f} ms",
              flush=True)  # fmt: skip
        empty_rss = min(empty_rss, server.rss())
    # The big list: load pods into the (stopped) store, start a fresh server.
    if store_kind == "sqlite":
        preload_pods("sqlite", work / "cp", etcd, prefix, pods)
    else:
        preload_pods("etcd", work / "cp", etcd, prefix, pods)
    with control_plane(store_kind, work, etcd, prefix) as server:
        result = big_list(server, pods)
        per_pod = max(0.0, (result["rss_mb"] * 2**20 - empty_rss)) / pods
        figures[f"{store_kind}_list_{pods}_pods_s"] = round(result["list_s"], 3)
        figures[f"{store_kind}_list_page500_ms"] = round(result["list_page500_ms"], 1)
        figures[f"{store_kind}_server_bytes_per_pod"] = round(per_pod, 1)
        figures[f"{store_kind}_list_peak_extra_mb"] = round(result["list_peak_extra_mb"], 1)
        print(f"  {store_kind:6} List of {pods} pods: {result['list_s']:.2f} s "
              f"(first page of 500: {result['list_page500_ms']:.0f} ms); server RSS "
              f"{result['rss_mb']:.0f} MB = {per_pod:.0f} B/pod over an empty server; "
              f"the List itself peaks at +{result['list_peak_extra_mb']:.0f} MB", flush=True)  # fmt: skip
    return figures


def user_conf(server: Server, name: str) -> Path:
    """A credential for user `name`, bound to ClusterRole edit in bench and watch."""
    from controlplane.usercmd import create

    conf = server.data_dir.parent / f"{name}.conf"
    create(name, ["bench-users"], server.data_dir, "", conf)
    with connect(load_config(server.conf)) as admin:
        for ns in ("bench", "watch"):
            admin.create("RoleBinding", {
                "metadata": {"name": "bench-users-edit"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "edit"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                              "name": "bench-users"}]}, ns)  # fmt: skip
    return conf


def bench_authz(store_kind: str, work: Path, etcd: str, quick: bool) -> dict[str, float]:
    """Creates/s and watch p99, admin vs an RBAC-authorized user, interleaved."""
    rounds = 3 if quick else 6
    calls = 20 if quick else 100
    events = 50 if quick else 200
    prefix = f"/bench-{uuid.uuid4().hex[:8]}"
    runs: dict[str, list[float]] = {}
    with control_plane(store_kind, work, etcd, prefix) as server:
        with connect(load_config(server.conf)) as client:
            for ns in ("bench", "watch"):
                client.create("Namespace", {"metadata": {"name": ns}})
        confs = {
            "admin": server.conf,
            "rbac": user_conf(server, "bench-user"),
            # A component's own identity (it may create pods and watch everything).
            "kcm": server.data_dir / "controller-manager.conf",
        }
        for i in range(rounds):
            # Rotate who goes first: on a shared machine no identity is slower
            # or faster by its position in a round.
            names = sorted(confs)
            for who in names[i % len(names) :] + names[: i % len(names)]:
                conf = confs[who]
                rate = throughput(conf, "create", 10, calls)
                runs.setdefault(f"{who}_create", []).append(rate)
                _, p99 = watch_latency(conf, 100, events)
                runs.setdefault(f"{who}_watch_p99", []).append(p99)
                print(f"  {store_kind:6} {who:5} create 10 clients {rate:8.1f} objects/s, "
                      f"watch p99 {p99:7.1f} ms", flush=True)  # fmt: skip
    med = {k: statistics.median(v) for k, v in runs.items()}
    figures = {
        f"{store_kind}_authz_admin_create_10c_per_s": round(med["admin_create"], 1),
        f"{store_kind}_authz_rbac_create_10c_per_s": round(med["rbac_create"], 1),
        f"{store_kind}_authz_admin_watch_p99_ms": round(med["admin_watch_p99"], 2),
        f"{store_kind}_authz_rbac_watch_p99_ms": round(med["rbac_watch_p99"], 2),
        f"{store_kind}_authz_create_cost_pct": round(
            100 * (1 - med["rbac_create"] / med["admin_create"]), 1),
        f"{store_kind}_authz_watch_p99_cost_pct": round(
            100 * (med["rbac_watch_p99"] / med["admin_watch_p99"] - 1), 1),
        f"{store_kind}_authz_kcm_create_10c_per_s": round(med["kcm_create"], 1),
        f"{store_kind}_authz_kcm_watch_p99_ms": round(med["kcm_watch_p99"], 2),
        f"{store_kind}_authz_kcm_create_cost_pct": round(
            100 * (1 - med["kcm_create"] / med["admin_create"]), 1),
    }  # fmt: skip
    # The decision itself, in process: the registry asks twice per write, so
    # at the admin's measured rate this share of one core (the API server's
    # GIL) goes to authorizing; the throughput cost cannot exceed it.
    decision = authorize_us()
    for who, us in decision.items():
        figures[f"{store_kind}_authz_decision_{who}_us"] = round(us, 2)
    for who in ("rbac", "kcm"):
        share = 100 * 2 * decision[who] * med["admin_create"] / 1e6
        figures[f"{store_kind}_authz_decision_{who}_share_pct"] = round(share, 2)
    print(f"  {store_kind:6} one authorization decision: admin {decision['admin']:.2f} us, "
          f"RBAC user {decision['rbac']:.2f} us, controller manager {decision['kcm']:.2f} us "
          f"(x2 per create = {figures[f'{store_kind}_authz_decision_rbac_share_pct']:.2f}% of a "
          "core at the admin's rate)", flush=True)  # fmt: skip
    # Honest about a shared machine: how far one identity's own rounds spread
    # (max - min over the median); a difference smaller than that is noise.
    for key, values in sorted(runs.items()):
        spread = 100 * (max(values) - min(values)) / statistics.median(values)
        figures[f"{store_kind}_authz_{key}_spread_pct"] = round(spread, 1)
    worst = max(v for k, v in figures.items() if k.endswith("_create_spread_pct"))
    print(f"  {store_kind:6} RBAC vs admin (medians of {rounds}): creates "
          f"{figures[f'{store_kind}_authz_create_cost_pct']:+.1f}% slower, watch p99 "
          f"{figures[f'{store_kind}_authz_watch_p99_cost_pct']:+.1f}% higher "
          "(target: within 5%); the controller manager's identity: creates "
          f"{figures[f'{store_kind}_authz_kcm_create_cost_pct']:+.1f}% slower; rounds of one "
          f"identity spread up to {worst:.0f}% in creates/s", flush=True)  # fmt: skip
    return figures


QUOTA = {"pods": "1000000", "count/pods": "1000000", "requests.cpu": "1000000",
         "requests.memory": "1000Ti"}  # fmt: skip


def bench_quota(store_kind: str, work: Path, etcd: str, quick: bool) -> dict[str, float]:
    """creates/s into a namespace without and with a ResourceQuota, interleaved."""
    rounds = 3 if quick else 6
    per = 20 if quick else 150
    prefix = f"/bench-{uuid.uuid4().hex[:8]}"
    with control_plane(store_kind, work, etcd, prefix) as server:
        client = connect(load_config(server.conf))
        for ns in ("bench", "quota"):
            client.create("Namespace", {"metadata": {"name": ns}})
        made = client.create("ResourceQuota", {"metadata": {"name": "q"},
                                               "spec": {"hard": QUOTA}}, "quota")  # fmt: skip
        # The server runs alone (no controllers, as the other rows): the
        # status the quota controller's first count writes, written here.
        made["status"] = {"hard": QUOTA, "used": dict.fromkeys(QUOTA, "0")}
        client.update_status("ResourceQuota", made)
        client.close()  # idle through the rounds, a connection's keepalive pings get it refused
        runs: dict[str, list[float]] = {"bench": [], "quota": []}
        cpu: dict[str, list[float]] = {"bench": [], "quota": []}  # server CPU ms per create
        for i in range(rounds):
            for ns in ("bench", "quota") if i % 2 == 0 else ("quota", "bench"):
                before = sum(server.ps.cpu_times()[:2])
                rate = throughput(server.conf, "create", 10, per, ns)
                cpu[ns].append(1000 * (sum(server.ps.cpu_times()[:2]) - before) / (10 * per))
                runs[ns].append(rate)
                print(f"  {store_kind:6} round {i + 1}: creates into {ns!r:8} "
                      f"(10 clients) {rate:9.1f}/s, server CPU {cpu[ns][-1]:.2f} ms each",
                      flush=True)  # fmt: skip
        with connect(load_config(server.conf)) as client:
            used = client.get("ResourceQuota", "q", "quota")["status"]["used"]
    created = rounds * per * 10
    # Every create was charged (the count as a quantity: 9000 is written "9k").
    assert parse_quantity(used["pods"]) == created, (used, created)
    without, with_quota = statistics.median(runs["bench"]), statistics.median(runs["quota"])
    ratio = with_quota / without
    cpu_without, cpu_with = statistics.median(cpu["bench"]), statistics.median(cpu["quota"])
    print(f"  {store_kind:6} median creates/s: without a quota {without:.1f}, with one "
          f"{with_quota:.1f} ({ratio:.2f}x); server CPU per create {cpu_without:.2f} vs "
          f"{cpu_with:.2f} ms; status.used pods={used['pods']}", flush=True)  # fmt: skip
    return {
        f"{store_kind}_create_no_quota_server_cpu_ms": round(cpu_without, 3),
        f"{store_kind}_create_quota_server_cpu_ms": round(cpu_with, 3),
        f"{store_kind}_create_10c_no_quota_per_s": round(without, 1),
        f"{store_kind}_create_10c_quota_per_s": round(with_quota, 1),
        f"{store_kind}_quota_ratio": round(ratio, 3),
        f"{store_kind}_quota_spread_pct": round(
            100 * (max(runs["quota"]) - min(runs["quota"])) / with_quota, 1
        ),
    }


def each_store(stores: str, prefix: str) -> Iterator[tuple[str, Path, str]]:
    """(store kind, a fresh work directory, the etcd endpoint or "") for each
    of the comma-separated `stores`, announced with "== <kind>"; one etcd
    serves every etcd run; all is removed at the end."""
    with ExitStack() as stack:
        etcd_endpoint = ""
        for store_kind in stores.split(","):
            work = Path(tempfile.mkdtemp(prefix=f"{prefix}{store_kind}-"))
            stack.callback(shutil.rmtree, work, True)
            if store_kind == "etcd" and not etcd_endpoint:
                etcd_endpoint = stack.enter_context(running_etcd()).endpoint
            print(f"== {store_kind}", flush=True)
            yield store_kind, work, etcd_endpoint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", default="sqlite,etcd")
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="fewer requests (smoke run)")
    parser.add_argument("--authz", action="store_true",
                        help="only the cost of authorization: admin vs an RBAC user")  # fmt: skip
    parser.add_argument("--quota", action="store_true",
                        help="only the cost of quota admission: creates without vs with a quota")  # fmt: skip
    add_pod_security_flag(parser)
    args = parser.parse_args(argv)
    set_pod_security(args.pod_security, args.pod_shape)
    figures: dict[str, float] = {}
    for store_kind, work, etcd_endpoint in each_store(args.stores, "skiff-bench-"):
        if args.quota:
            figures.update(bench_quota(store_kind, work, etcd_endpoint, args.quick))
            continue
        if args.authz:
            figures.update(bench_authz(store_kind, work, etcd_endpoint, args.quick))
            continue
        figures.update(bench_store(store_kind, work, etcd_endpoint, args.pods, args.quick))
    print()
    report(figures, column=12, spec=".2f")
    return 0


if __name__ == "__main__":
    sys.exit(main())
