"""The node agent: everything the kubelet does, wired together.

Sources of work, each only enqueueing a pod UID: the pods informer (pods
bound to this node), the static pod source (manifest files, see
agent/static_pods.py; mirror pod events map to their static pod), the PLEG
relist (pleg.py: a container or sandbox changed state in the runtime, or the
runtime holds a pod the API no longer has), probe result flips, backoff
expiries and a periodic resync. The pod workers (pod_workers.py) pop UIDs
from one rate-limited queue and sync each pod. Beside them run the node
loops (node_loops.py): registration, Lease heartbeat, Node status, and the
CNI configuration from the Node's podCIDR and its peers. This module only
builds these parts, connects them and runs their threads. On restart the
agent rebuilds everything from CRI and the API; it never restarts a healthy
container. Workers start before the API server is reached, so static pods
run while it is away.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import serving_tls
from agent.backoff import Backoff
from agent.claims import ClaimVolumes
from agent.cri_client import CRIClient
from agent.ingress.controller import IngressController
from agent.ingress.haproxy import IngressSettings
from agent.local_path import LocalPathAgent
from agent.metrics import AgentMetrics
from agent.netpol import NetpolSettings, NetworkPolicyController
from agent.network import NetworkConfigurator, NetworkSettings
from agent.node_loops import NodeLoops
from agent.node_resources import NodeResources, ResourceSettings
from agent.node_status import NodeConfig, NodeStatusReporter, Readings, allocatable_memory
from agent.object_cache import ObjectCache
from agent.pleg import Pleg
from agent.pod_cgroups import sweep_pod_cgroups
from agent.pod_config import DEFAULT_SECCOMP_ROOT, NodeSettings, secret_data
from agent.pod_events import PodEvents
from agent.pod_sync import PodSyncer, SyncDeps
from agent.pod_workers import MIRROR_INDEX, UID_INDEX, PodWorkers
from agent.probes import ProbeManager, RealProbeRunner
from agent.proxy import (
    DnsServer,
    DnsSettings,
    ProxySettings,
    ServiceProxy,
    ensure_local_address,
    remove_local_address,
    service_env,
)
from agent.qos_cgroups import QOSCgroups
from agent.runtime_view import RuntimeView
from agent.sa_tokens import TokenManager
from agent.server import AgentServicer
from agent.static_pods import MirrorPods, StaticPodSource, mirror_of
from agent.status_manager import StatusManager
from agent.stream_proxy import AgentEndpoint, serve_endpoint
from agent.volume_refresh import VolumeRefresher, running
from agent.volumes import VolumeSources
from agent.webhook_auth import ApiReviewer, WebhookAuth
from controlplane.client.config import ClientConfig
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient, Object
from controlplane.client.workqueue import RateLimitingQueue
from machinery.clock import Clock, RealClock
from proto.agent.v1.agent_pb2 import StatsRequest

log = logging.getLogger("skiff.agent")
POD_CGROUP_SWEEP = 5.0  # seconds between sweeps of leftover pod cgroups
# The sync period: every pod is synced again, and its API-backed volumes
# brought to their sources, this often (the kubelet's --sync-frequency).
RESYNC_PERIOD = 10.0


@dataclass(frozen=True)
class AgentConfig:
    node: NodeConfig
    root: Path = Path("/var/lib/skiff/agent")
    pod_settings: NodeSettings = field(default_factory=NodeSettings)
    network: NetworkSettings | None = field(default_factory=NetworkSettings)
    workers: int = 4
    resync_period: float = RESYNC_PERIOD
    relist_period: float = 1.0
    # No relist completed for this long: NotReady, "PLEG is not healthy" (the kubelet's 3m).
    pleg_threshold: float = 180.0
    lease_period: float = 10.0
    runtime_name: str = ""  # containerID prefix; "" = the runtime's own name
    listen: str = ""  # the agent endpoint (logs, stats), e.g. "0.0.0.0:10250"; "" = none
    # kube-proxy's and the cluster DNS's jobs; None turns each off (tests without root).
    proxy: ProxySettings | None = None
    dns: DnsSettings | None = None
    # NetworkPolicy enforcement (kube-router's job); None turns it off.
    netpol: NetpolSettings | None = None
    # The built-in ingress controller (HAProxy runs while an Ingress of its classes exists).
    ingress: IngressSettings | None = None
    # Static pods (--pod-manifest-path); None = off. The directory is re-read every period.
    pod_manifest_path: Path | None = None
    static_period: float = 5.0
    # Eviction, image GC and container GC (node resource management).
    resources: ResourceSettings = field(default_factory=ResourceSettings)
    # The QoS cgroup tree under the pods' root (--cgroups-per-qos), capped
    # at allocatable with --enforce-node-allocatable=pods.
    qos_cgroups: bool = False
    enforce_node_allocatable: bool = True
    # The local-path provisioner's volumes (agent/local_path.py); None = <root>/local-path.
    local_path_root: Path | None = None
    # Where pods' seccomp localhostProfile paths resolve (the kubelet's <root-dir>/seccomp).
    seccomp_root: Path = DEFAULT_SECCOMP_ROOT


def _uid_index(obj: Object) -> list[str]:
    uid = obj.get("metadata", {}).get("uid")
    return [uid] if uid else []


POD_IP_INDEX = "podIP"


def _pod_ip_index(obj: Object) -> list[str]:
    """A pod's own addresses (not a host-network pod's, which are the node's)."""
    if (obj.get("spec") or {}).get("hostNetwork"):
        return []
    status = obj.get("status") or {}
    ips = {str(p.get("ip")) for p in status.get("podIPs") or [] if p.get("ip")}
    if status.get("podIP"):
        ips.add(str(status["podIP"]))
    return sorted(ips)


def _mirror_index(obj: Object) -> list[str]:
    uid = mirror_of(obj)
    return [uid] if uid else []


class Agent:
    def __init__(
        self,
        cfg: AgentConfig,
        api: ApiClient,
        runtime: CRIClient,
        clock: Clock | None = None,
        api_config: ClientConfig | None = None,
    ) -> None:
        self.cfg = cfg
        self.api = api
        self.cri = runtime
        self.clock: Clock = clock or RealClock()
        self.tokens = TokenManager(api, self.clock.now)
        self.events = PodEvents(api, cfg.node.name)
        # The Secrets and ConfigMaps the node's pods use, each watched; a
        # change queues the pods using it for a volume refresh.
        self.objects = ObjectCache(api, self.clock, self._object_changed)
        self._stop_event = threading.Event()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(clock=self.clock)
        self.view = RuntimeView(runtime)
        self.status = StatusManager(api)
        self.reporter = NodeStatusReporter(api, cfg.node)
        self.network = NetworkConfigurator(cfg.network) if cfg.network else None
        self.factory = SharedInformerFactory(api, clock=self.clock)
        self.pods = self.factory.informer_for(
            "Pod", field_selector=f"spec.nodeName={cfg.node.name}"
        )
        self.pods.add_indexers({UID_INDEX: _uid_index, POD_IP_INDEX: _pod_ip_index})
        self.nodes = self.factory.informer_for("Node")
        self.services = self.factory.informer_for("Service")
        self.proxy = (
            ServiceProxy(api, cfg.node.name, cfg.proxy, clock=self.clock, informers=self.factory)
            if cfg.proxy is not None
            else None
        )
        self.netpol = (
            NetworkPolicyController(
                api, cfg.node.name, cfg.netpol, clock=self.clock, informers=self.factory
            )
            if cfg.netpol is not None
            else None
        )
        self.ingress = (
            IngressController(
                api, cfg.node.name, cfg.ingress, clock=self.clock, informers=self.factory
            )
            if cfg.ingress is not None
            else None
        )
        self.dns = (
            DnsServer(api, cfg.dns, informers=self.factory, pod_namespace=self._pod_namespace)
            if cfg.dns is not None
            else None
        )
        self._probe_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="probe")
        self.probes = ProbeManager(
            RealProbeRunner(runtime), self.clock, self._probe_pool, self.queue.add
        )
        self._memory = Readings.take(cfg.node.fs_path).memory_total
        local_root = cfg.local_path_root or cfg.root / "local-path"
        self.local_path = LocalPathAgent(api, cfg.node.name, local_root, self.factory)
        self.claims = ClaimVolumes(api, cfg.node.name, self.local_path.volumes)
        self.syncer = PodSyncer(
            SyncDeps(
                runtime=runtime,
                node=cfg.pod_settings,
                root=cfg.root,
                memory_capacity=self._memory,
                now=self.clock.now,
                volumes=VolumeSources(
                    configmaps=self._get_configmap,
                    secrets=self._get_secret,
                    node=cfg.pod_settings,
                    claims=self.claims.path,
                    tokens=self.tokens.get,
                ),
                config_data=lambda ns, n: (self._get_configmap(ns, n) or {}).get("data"),
                secret_data=lambda ns, n: (lambda s: secret_data(s) if s else None)(
                    self._get_secret(ns, n)
                ),
                backoff=Backoff(self.clock.now),
                image_backoff=Backoff(self.clock.now),
                service_env=self._service_env,
                seccomp_root=cfg.seccomp_root,
            )
        )
        self._threads: list[threading.Thread] = []
        self._api_config = api_config
        self._endpoint: AgentEndpoint | None = None
        self.endpoint_port = 0
        # static pods: their own source of pods, feeding the same queue and sync_pod
        self.static: StaticPodSource | None = None
        self.mirrors: MirrorPods | None = None
        if cfg.pod_manifest_path is not None:
            self.static = StaticPodSource(
                cfg.pod_manifest_path, cfg.node.name, self.clock, cfg.static_period
            )
            self.mirrors = MirrorPods(
                api,
                cfg.node.name,
                lambda ns, name: self.pods.store.get(name, ns),
                lambda: self.nodes.store.get(cfg.node.name),
            )
            self.pods.add_indexers({MIRROR_INDEX: _mirror_index})
        self.pleg = Pleg(self.view, self.queue.add, threshold=cfg.pleg_threshold)
        self.refresher = VolumeRefresher(
            cfg.root, self.syncer.d.volumes, self.events, self._active_pod, self.queue.add
        )
        self.workers = PodWorkers(
            queue=self.queue,
            pods=self.pods,
            view=self.view,
            pleg=self.pleg,
            syncer=self.syncer,
            probes=self.probes,
            status=self.status,
            clock=self.clock,
            root=cfg.root,
            cgroup_root=cfg.pod_settings.cgroup_root,
            node_address=cfg.node.address,
            runtime_name=lambda: self.runtime_name,
            static=self.static,
            mirrors=self.mirrors,
            node=lambda: self.nodes.store.get(cfg.node.name),
            events=self.events,
        )
        self.resources = NodeResources(
            cfg.resources,
            runtime,
            self.workers,
            cfg.node.fs_path,
            cfg.pod_settings.cgroup_root,
            cfg.pod_settings.log_root,
            lambda: allocatable_memory(cfg.node, self._memory),
            volume_root=cfg.root,
        )
        self.qos = (
            QOSCgroups(cfg.pod_settings.cgroup_root, cfg.enforce_node_allocatable)
            if cfg.qos_cgroups
            else None
        )
        self.loops = NodeLoops(
            cfg.node,
            runtime,
            self.reporter,
            self.nodes,
            self.network,
            self.clock,
            self._stop_event,
            self.pleg,
            self.resources,
        )

    @property
    def stop_event(self) -> threading.Event:
        return self._stop_event

    @stop_event.setter
    def stop_event(self, event: threading.Event) -> None:
        """Embedders (skiff up) hand the agent their own stop event."""
        self._stop_event = event
        self.loops.stop_event = event

    @property
    def runtime_name(self) -> str:
        """The containerID prefix: the flag, else the runtime's own name."""
        return self.cfg.runtime_name or self.loops.runtime_name

    def _service_env(self, pod: Mapping[str, Any]) -> Mapping[str, str]:
        links = (pod.get("spec") or {}).get("enableServiceLinks", True)
        return service_env(
            self.services.store.list(),
            pod["metadata"].get("namespace", "default"),
            enable_service_links=links is not False,
        )

    # API lookups for env and volumes
    def _pod_namespace(self, ip: str) -> str | None:
        """The namespace of this node's pod at `ip` (for the DNS search list)."""
        for pod in self.pods.store.by_index(POD_IP_INDEX, ip):
            return str(pod["metadata"].get("namespace") or "default")
        return None

    def _get_configmap(self, ns: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get("ConfigMap", ns, name)

    def _get_secret(self, ns: str, name: str) -> Mapping[str, Any] | None:
        return self.objects.get("Secret", ns, name)

    def _object_changed(self, kind: str, ns: str, name: str) -> None:
        self.refresher.changed(self.objects.users(kind, ns, name))

    def _active_pod(self, uid: str) -> Object | None:
        found = [p for p in self.pods.store.by_index(UID_INDEX, uid) if not mirror_of(p)]
        return found[0] if found else None

    def _track_objects(self, pod: Object) -> None:
        """Watch what an active pod uses; stop once it has finished."""
        if mirror_of(pod):
            return
        if running(pod):
            self.objects.register(pod)
        else:
            self.objects.unregister(str(pod["metadata"].get("uid") or ""))

    # lifecycle
    def start(self) -> None:
        self.loops.wait_for_runtime()
        self._sync_qos()
        # Workers start before the API is reached, so static pods run without it.
        for i in range(self.cfg.workers):
            self._spawn(f"pod-worker-{i}", self.workers.run)
        if self.static is not None:
            self.workers.poll_static()
            self._spawn(
                "static-pods",
                self._every(min(1.0, self.cfg.static_period), self.workers.poll_static),
            )
        self.loops.register()
        self.pods.add_event_handler(
            on_add=self.workers.on_pod,
            on_update=lambda old, new: self.workers.on_pod(new),
            on_delete=self.workers.on_pod_delete,
        )
        self.pods.add_event_handler(
            on_add=self._track_objects,
            on_update=lambda old, new: self._track_objects(new),
            on_delete=lambda pod: self.objects.unregister(str(pod["metadata"].get("uid") or "")),
        )
        self._spawn("volume-refresh", self.refresher.run)
        self.nodes.add_event_handler(
            on_add=lambda n: self.loops.on_nodes(),
            on_update=lambda o, n: self.loops.on_nodes(),
            on_delete=lambda n: self.loops.on_nodes(),
        )
        if self.dns is not None:
            ensure_local_address(self.dns.settings.listen_host, self.dns.settings.interface)
            self.dns.start()
        if self.proxy is not None:
            self.proxy.start()
        if self.netpol is not None:
            self.netpol.start()
        if self.ingress is not None:
            self.ingress.start()
        self.factory.start()
        while not self.factory.wait_for_cache_sync(timeout=5) and not self.stop_event.is_set():
            log.info("waiting for the pod and node caches to sync")
        self.local_path.start()
        self._spawn("pleg", self._every(self.cfg.relist_period, self.pleg.relist))
        self._spawn("resync", self._every(self.cfg.resync_period, self._resync))
        self._spawn("pod-cgroups", self._every(POD_CGROUP_SWEEP, self._sweep_pod_cgroups))
        self._spawn("node-status", self._every(self.cfg.lease_period, self.loops.heartbeat))
        res = self.cfg.resources
        if res.eviction is not None:
            self._spawn("eviction", lambda: self.resources.run_eviction(self.stop_event))
        self._spawn(
            "container-gc", self._every(res.container_gc_period, self.resources.container_gc)
        )
        self._spawn("image-gc", self._every(res.image_gc_period, self.resources.image_gc))
        self.loops.on_nodes()
        if self.cfg.listen:
            self._serve_endpoint()
        log.info("node=%s agent running", self.cfg.node.name)

    def _serve_endpoint(self) -> None:
        """The agent endpoint, TLS only (agent/serving_tls.py); plain text
        only without an API credential (tests that embed the agent)."""
        tls, callers = None, None
        if self._api_config is not None:
            # Callers other than the API server: checked as the kubelet's webhook authn/authz.
            callers = WebhookAuth(ApiReviewer(self.api), self.cfg.node.name)
            try:
                tls = serving_tls.server_context(self.cfg.root, self._api_config.ca_pem, True)
            except (serving_tls.NoServingCertificate, OSError, ssl.SSLError) as err:
                log.error("node=%s agent endpoint not served: %s", self.cfg.node.name, err)
                return
        servicer = AgentServicer(
            self.cfg.node.name, self._endpoint_pod, self.cri, Path(self.cfg.pod_settings.log_root)
        )
        self.cfg.root.mkdir(parents=True, exist_ok=True)
        pages = self._metrics(servicer).pages()
        self._endpoint = serve_endpoint(
            servicer, self.cfg.listen, self._endpoint_pod, self.cri, tls,
            str(self.cfg.root / "agent-grpc.sock"), callers, pages,
        )  # fmt: skip
        self.endpoint_port = self._endpoint.port

    def _metrics(self, servicer: AgentServicer) -> AgentMetrics:
        """The endpoint's metrics (agent/metrics.py), fed by PLEG, probes and statuses."""
        found = AgentMetrics(self.cfg.node.name, self.cri.list_pod_sandboxes,
                             self.cri.list_containers,
                             lambda: servicer.collect_stats(StatsRequest()), self._pod_of,
                             (self.cfg.root / serving_tls.CERT_FILE).read_bytes)  # fmt: skip
        self.pleg.on_relist = found.relisted
        self.probes.observed = found.probes.observe
        self.status.started = found.pod_start.observe
        return found

    def _pod_of(self, uid: str) -> tuple[str, str] | None:
        pod = self._active_pod(uid)
        md = (pod or {}).get("metadata") or {}
        return (str(md.get("namespace", "")), str(md["name"])) if pod else None

    def stop(self) -> None:
        self.stop_event.set()
        self.resources.stop()
        if self._endpoint is not None:
            self._endpoint.stop(grace=1)
        if self.dns is not None:
            self.dns.stop()
            remove_local_address(self.dns.settings.listen_host, self.dns.settings.interface)
        if self.proxy is not None:
            self.proxy.stop()
        if self.netpol is not None:
            self.netpol.stop()  # its table stays: no window of open traffic
        if self.ingress is not None:
            self.ingress.stop()
        self.queue.shut_down()
        self.refresher.stop()
        self.objects.stop()
        self.local_path.stop()
        self.factory.shutdown()
        for t in self._threads:
            t.join(timeout=10)
        self._probe_pool.shutdown(wait=False, cancel_futures=True)

    def _spawn(self, name: str, target: Any) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _every(self, period: float, fn: Any) -> Any:
        def loop() -> None:
            while not self.stop_event.is_set():
                try:
                    fn()
                except Exception:
                    log.exception("%s failed", getattr(fn, "__name__", "loop"))
                self.stop_event.wait(period)

        return loop

    def relist(self) -> None:
        """One PLEG relist (the pleg thread runs it every relist period)."""
        self.pleg.relist()

    def sync_pod(self, uid: str) -> None:
        self.workers.sync_pod(uid)

    def _endpoint_pod(self, namespace: str, name: str) -> Object | None:
        """The pod the agent endpoint serves: a static pod rather than its mirror."""
        pod = self.pods.store.get(name, namespace)
        if self.static is None or (pod is not None and not mirror_of(pod)):
            return pod
        for static in self.static.list():
            if (static["metadata"]["namespace"], static["metadata"]["name"]) == (namespace, name):
                return static
        return pod

    def _resync(self) -> None:
        self.workers.resync()
        self._refresh_volumes()

    def _refresh_volumes(self) -> None:
        """Each sync period, as the kubelet's volume manager: bring the
        API-backed volumes of running pods to their sources (a watched
        change does so at once, agent/volume_refresh.py); ServiceAccount
        tokens are asked for anew past 80% of their life."""
        pods = self.pods.store.list()
        self.tokens.forget({p["metadata"]["uid"] for p in pods if running(p)})
        self.refresher.refresh_all(pods)

    def _sweep_pod_cgroups(self) -> None:
        keep = {p["metadata"]["uid"] for p in self.pods.store.list()} | self.pleg.known()
        if self.static is not None:
            keep |= {p["metadata"]["uid"] for p in self.static.list()}
        sweep_pod_cgroups(self.cfg.pod_settings.cgroup_root, keep)
        self._sync_qos()

    def _sync_qos(self) -> None:
        """The QoS cgroup tree for the pods admitted now."""
        if self.qos is None:
            return
        node = self.cfg.node
        cpu = max(0, (os.cpu_count() or 1) * 1000 - node.reserved_cpu_milli)
        memory = max(0, self._memory - node.reserved_memory)
        self.qos.sync(cpu, memory, self.workers.admitted_pods())


def run_forever(agent: Agent) -> None:
    agent.start()
    try:
        while not agent.stop_event.wait(3600):
            pass
    finally:
        agent.stop()


__all__ = ["Agent", "AgentConfig", "run_forever"]
