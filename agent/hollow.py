"""Hollow nodes: many simulated nodes in one process, to load the control plane.

Kubemark's idea: a node the control plane cannot tell from a real one at the
API, with no runtime behind it. `HollowNodes` registers N Node objects
(capacity, allocatable, addresses, well-known labels, Ready), renews one
Lease per node in kube-node-lease every `lease_period` seconds (the
renewals spread evenly over the period, as N agents started at random times
would), and runs ONE shared Pod informer for all of them: a pod bound to one
of its nodes is reported Running and Ready with a fake IP from that node's
pod CIDR (or a counter when it has none); a pod marked for deletion is
finished (deleted with grace 0, the agent's last step). No CRI, no
containers, no network: a hollow node costs a few kilobytes and its share
of one thread pool.

The command connects with `lean_watches`: no node reads managedFields.
The Pod informer watches the bound pods only (`spec.nodeName!=`), as each
node's agent watches its own (`spec.nodeName=NODE`): a pod reaches the hollow
nodes when it is bound, not when it is created. The API server tells both
selections' events apart by the pod's last node, without decoding its
previous object.

What this module must never do: touch the machine (namespaces, cgroups,
iptables) or report anything but bound pods on its own nodes.

    python -m agent.hollow --credentials admin.conf --nodes 1000 [--prefix hollow]
                           [--cpu 32] [--memory 128Gi] [--max-pods 110]
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.node_status import AGENT_VERSION, LEASE_DURATION, LEASE_NAMESPACE
from controlplane.api import jsoncodec, quantity, volumes
from controlplane.client import errors
from controlplane.client.apiclient import connect
from controlplane.client.config import load_config
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient, DeleteOptions
from machinery import rfc3339
from machinery.signals import StopSignals

log = logging.getLogger("skiff.agent.hollow")

Object = dict[str, Any]


@dataclass(frozen=True)
class HollowConfig:
    nodes: int = 100
    prefix: str = "hollow"
    cpu: str = "32"
    memory: str = "128Gi"
    max_pods: int = 110
    lease_period: float = 10.0
    workers: int = 8
    # Threads renewing Leases; 0: enough for every renewal of a period to be
    # in flight at half a second each (a loaded API server answers that slowly,
    # and renewals a grace period behind make the node NotReady; with a quarter
    # second, 1,000 nodes and 30,000 pods saw gaps of 30 s against a 40 s grace).
    lease_workers: int = 0
    base_ip: str = "10.128.0.0"  # node i gets base + i (never routed; API only)
    # Non-empty: the nodes say their agent runs the local-path provisioner with
    # this root (label and annotation, as an agent with --local-path-root), so
    # WaitForFirstConsumer claims of the local-path class are provisioned on them.
    local_path_root: str = ""


@dataclass
class HollowStats:
    leases: int = 0
    lease_errors: int = 0
    pods_started: int = 0
    pods_finished: int = 0
    status_errors: int = 0
    max_lease_gap: float = 0.0  # longest time between two renewals of one node
    # Clock time this process's Pod informer last saw a pod bound (added with
    # a node, or updated from none to one): when "every pod bound" happened,
    # not when a poll next looked.
    last_bound_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + n)

    def lease_gap(self, gap: float) -> None:
        with self.lock:
            self.max_lease_gap = max(self.max_lease_gap, gap)

    def reset_lease_gap(self) -> None:
        with self.lock:
            self.max_lease_gap = 0.0


def node_object(cfg: HollowConfig, name: str, ip: str) -> Object:
    now = rfc3339.now()
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "AgentReady",
        "message": "hollow node",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    resources = {"cpu": cfg.cpu, "memory": cfg.memory, "pods": str(cfg.max_pods)}
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "skiff.io/hollow": "true",
    }
    meta: Object = {"name": name, "labels": labels}
    if cfg.local_path_root:
        labels[volumes.LOCAL_PATH_LABEL] = "true"
        meta["annotations"] = {volumes.LOCAL_PATH_ROOT_ANNOTATION: cfg.local_path_root}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [ready],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": _node_info(name),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


def _node_info(name: str) -> Object:
    """Every NodeSystemInfo field, as a real node reports them (ids derived
    from the node's name, so a hollow node keeps them across restarts)."""
    ids = uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.hollow.skiff")
    uname = os.uname()
    return {
        "machineID": ids.hex,
        "systemUUID": str(ids),
        "bootID": str(uuid.uuid5(ids, "boot")),
        "kernelVersion": uname.release,
        "osImage": "skiff hollow node",
        "containerRuntimeVersion": "hollow://0",
        "kubeletVersion": AGENT_VERSION,
        "kubeProxyVersion": AGENT_VERSION,
        "operatingSystem": "linux",
        "architecture": _ARCH.get(uname.machine, uname.machine),
    }


BOUND = "spec.nodeName!="  # the Pod informer's field selector: bound pods only
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def running_status(pod: Object, node_ip: str, pod_ip: str) -> Object:
    """What an agent would write for a pod whose containers all started."""
    now = rfc3339.now()
    containers = (pod.get("spec") or {}).get("containers") or []
    conds = [
        {"type": t, "status": "True", "lastTransitionTime": now}
        for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    ]
    return {
        "phase": "Running",
        "hostIP": node_ip,
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": now,
        "conditions": conds,
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": f"hollow://{pod['metadata'].get('uid', '')}-{c['name']}",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in containers
        ],
    }


@dataclass
class _Node:
    name: str
    ip: str
    cidr: str = ""
    ips: Iterator[ipaddress.IPv4Address] | None = None
    counter: int = 0
    base: int = 0
    renewed: float = 0.0  # clock time of the last successful renewal


class HollowNodes:
    """N hollow nodes over one API client; see the module docstring."""

    def __init__(
        self, api: ApiClient, cfg: HollowConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.api = api
        self.cfg = cfg
        self.clock = clock
        self.stats = HollowStats()
        base = ipaddress.IPv4Address(cfg.base_ip)
        self.nodes: dict[str, _Node] = {}
        for i in range(cfg.nodes):
            name = f"{cfg.prefix}-{i:05d}"
            self.nodes[name] = _Node(name, str(base + i + 1), base=(i % 1024) * 4096)
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(cfg.workers, thread_name_prefix="hollow")
        # Heartbeats have their own threads: a backlog of pod work never
        # delays a Lease (the agent's renewals are a separate loop too).
        lease_workers = cfg.lease_workers or min(
            64, max(2, math.ceil(cfg.nodes / cfg.lease_period / 2))
        )
        self._lease_pool = ThreadPoolExecutor(lease_workers, thread_name_prefix="hollow-lease")
        self._renewing: set[str] = set()
        self._inflight: set[str] = set()
        # A deletion seen while the pod's earlier work was in flight: run
        # after it, never dropped (else a pod deleted while starting stays Running).
        self._deferred: dict[str, Object] = {}
        self._lock = threading.Lock()
        self._factory = SharedInformerFactory(api)
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------ nodes
    def register(self) -> None:
        """Create (or take over) every Node and its Lease, in parallel."""

        def one(node: _Node) -> None:
            obj = node_object(self.cfg, node.name, node.ip)
            try:
                self.api.create("Node", obj)
            except errors.AlreadyExists:
                self.api.patch("Node", node.name, {"status": obj["status"]}, subresource="status")
            self.renew(node.name)

        list(self._pool.map(one, self.nodes.values()))

    def renew(self, name: str) -> None:
        spec = {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION,
            "renewTime": rfc3339.now(micro=True),
        }
        try:
            try:
                self.api.patch("Lease", name, {"spec": spec}, namespace=LEASE_NAMESPACE)
            except errors.NotFound:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
                    "spec": spec,
                }
                self.api.create("Lease", body, namespace=LEASE_NAMESPACE)
            self.stats.add("leases")
            node = self.nodes.get(name)
            if node is not None:
                now = self.clock()
                if node.renewed:
                    self.stats.lease_gap(now - node.renewed)
                node.renewed = now
        except errors.ApiError as exc:
            self.stats.add("lease_errors")
            log.warning("node=%s lease renewal failed: %s", name, exc)

    def _renew_once(self, name: str) -> None:
        try:
            self.renew(name)
        finally:
            with self._lock:
                self._renewing.discard(name)

    def _heartbeats(self) -> None:
        """Renew every Lease once per period, spread evenly over it."""
        names = list(self.nodes)
        step = self.cfg.lease_period / max(1, len(names))
        nxt = self.clock()
        i = 0
        while not self._stop.is_set():
            name = names[i % len(names)]
            i += 1
            with self._lock:
                pending = name in self._renewing
                self._renewing.add(name)
            if not pending:  # a renewal still queued is not queued twice
                self._lease_pool.submit(self._renew_once, name)
            nxt += step
            delay = nxt - self.clock()
            if delay < -self.cfg.lease_period:  # fell a whole period behind: no burst
                nxt, delay = self.clock(), 0.0
            if delay > 0 and self._stop.wait(delay):
                return

    # ------------------------------------------------------------ pods
    def _on_node(self, obj: Object) -> None:
        node = self.nodes.get(obj["metadata"]["name"])
        cidr = (obj.get("spec") or {}).get("podCIDR")
        if node is not None and cidr and node.cidr != cidr:
            with self._lock:
                node.cidr = cidr
                node.ips = ipaddress.IPv4Network(cidr).hosts()
                next(node.ips)  # .1 is the bridge on a real node

    def _pod_ip(self, node: _Node) -> str:
        """The next address of the node's pod CIDR (node IPAM's), else one
        from 100.64.0.0/10 by counter. Addresses are never reused: a hollow
        pod has no network, the IP only has to look plausible."""
        with self._lock:
            if node.ips is not None:
                ip = next(node.ips, None)
                if ip is not None:
                    return str(ip)
                node.ips = None
            node.counter += 1
            return str(ipaddress.IPv4Address("100.64.0.0") + node.base + node.counter % 4096)

    def _on_pod_add(self, pod: Object) -> None:
        # Only bound pods are watched: added is bound (or seen bound at the start).
        self.stats.last_bound_at = self.clock()
        self._on_pod(pod)

    def _on_pod(self, pod: Object) -> None:
        node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        if node is None:
            return
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}/{meta.get('uid')}"
        phase = (pod.get("status") or {}).get("phase")
        if meta.get("deletionTimestamp"):
            work: Callable[[], None] = functools.partial(self._finish, pod)
        elif phase in (None, "", "Pending"):
            work = functools.partial(self._start, pod, node)
        else:
            return
        with self._lock:
            if key in self._inflight:
                if meta.get("deletionTimestamp"):
                    self._deferred[key] = pod
                return
            self._inflight.add(key)

        def run() -> None:
            nxt: Callable[[], None] | None = work
            while nxt is not None:
                try:
                    nxt()
                finally:
                    with self._lock:
                        deferred = self._deferred.pop(key, None)
                        if deferred is None:
                            self._inflight.discard(key)
                    nxt = None if deferred is None else functools.partial(self._finish, deferred)

        self._pool.submit(run)

    def _start(self, pod: Object, node: _Node) -> None:
        meta = pod["metadata"]
        ip = self._pod_ip(node)
        status = running_status(pod, node.ip, ip)
        try:
            self.api.patch(
                "Pod", meta["name"], {"status": status}, meta.get("namespace"), subresource="status"
            )
            self.stats.add("pods_started")
        except errors.NotFound:
            pass
        except errors.ApiError as exc:
            self.stats.add("status_errors")
            log.warning(
                "pod=%s/%s status not written: %s", meta.get("namespace"), meta["name"], exc
            )

    def _finish(self, pod: Object) -> None:
        meta = pod["metadata"]
        try:
            self.api.delete(
                "Pod",
                meta["name"],
                meta.get("namespace"),
                DeleteOptions(grace_period_seconds=0, precondition_uid=meta.get("uid")),
            )
            self.stats.add("pods_finished")
        except errors.ApiError:
            pass

    def _on_node_update(self, old: Object, new: Object) -> None:
        self._on_node(new)

    def _on_pod_update(self, old: Object, new: Object) -> None:
        self._on_pod(new)  # bound already when it was added

    def _pods(self) -> SharedInformer:
        """The shared Pod informer: every bound pod of the cluster."""
        return self._factory.informer_for("Pod", field_selector=BOUND)

    def pod_counts(self) -> tuple[int, int]:
        """(bound, Running) pods as this process's Pod informer sees them:
        progress without listing every pod from the API server again."""
        pods = self._pods().store.list()
        running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        return len(pods), running

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.register()
        nodes = self._factory.informer_for("Node", label_selector="skiff.io/hollow=true")
        nodes.add_event_handler(on_add=self._on_node, on_update=self._on_node_update)
        pods = self._pods()
        pods.add_event_handler(on_add=self._on_pod_add, on_update=self._on_pod_update)
        self._factory.start()
        self._factory.wait_for_cache_sync(60)
        t = threading.Thread(target=self._heartbeats, name="hollow-heartbeats", daemon=True)
        t.start()
        self._threads.append(t)
        log.info("hollow nodes=%d running", len(self.nodes))

    def stop(self) -> None:
        self._stop.set()
        self._factory.shutdown()
        for t in self._threads:
            t.join(5)
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._lease_pool.shutdown(wait=True, cancel_futures=True)


def _quantity(text: str) -> str:
    """A positive resource quantity ("4", "500m", "16Gi"), as given."""
    try:
        value = quantity.parse_quantity(text)
    except (TypeError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"{text!r} is not a quantity: {err}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than zero")
    return text


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, HollowConfig]:
    """The command line and the hollow nodes it asks for (a bad value exits, naming it)."""
    p = argparse.ArgumentParser(prog="python -m agent.hollow", description=__doc__)
    p.add_argument("--credentials", required=True, help="client config (admin.conf)")
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--prefix", default="hollow")
    p.add_argument(
        "--cpu",
        type=_quantity,
        default=HollowConfig.cpu,
        help="each node's cpu capacity and allocatable (default %(default)s)",
    )
    p.add_argument(
        "--memory",
        type=_quantity,
        default=HollowConfig.memory,
        help="each node's memory capacity and allocatable (default %(default)s)",
    )
    p.add_argument("--max-pods", type=int, default=HollowConfig.max_pods,
                   help="pods each node takes (default %(default)s)")  # fmt: skip
    p.add_argument("--lease-period", type=float, default=10.0)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--log-level", default="INFO")
    args = p.parse_args(argv)
    cfg = HollowConfig(
        nodes=args.nodes, prefix=args.prefix, lease_period=args.lease_period, workers=args.workers,
        cpu=args.cpu, memory=args.memory, max_pods=args.max_pods,
    )  # fmt: skip
    return args, cfg


def main(argv: list[str] | None = None) -> int:
    args, cfg = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )
    # The Pod informer keeps every pod of the cluster and each event makes
    # short-lived objects: the collector's thresholds of the components (jsoncodec).
    jsoncodec.tune_gc()
    api = connect(load_config(Path(args.credentials)), timeout=30, lean_watches=True)
    stop = StopSignals()
    hollow = HollowNodes(api, cfg)
    hollow.start()
    stop.wait_in_main()
    hollow.stop()
    api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
