"""The node agent: everything the kubelet does, wired together.

Sources of work, each only enqueueing a pod UID: the pods informer (pods
bound to this node), the static pod source (manifest files, see
agent/static_pods.py; mirror pod events map to their static pod), the PLEG
relist (a container or sandbox changed state in the runtime, or the runtime
holds a pod the API no longer has), probe result flips, backoff expiries and
a periodic resync. Workers pop UIDs from one rate-limited queue (a UID is
handled by one worker at a time) and run `sync_pod(uid)`: terminate and
clean up pods that are deleted or gone, otherwise carry out SyncPod and write
the status. Beside them run the node loops: Lease heartbeat, Node status,
and the CNI configuration from the Node's podCIDR and its peers. On restart
the agent rebuilds everything from CRI and the API; it never restarts a
healthy container. Workers start before the API server is reached, so static
pods run while it is away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.backoff import Backoff
from agent.claims import ClaimVolumes
from agent.cri_client import CRIClient, CRIError
from agent.local_path import LocalPathAgent
from agent.network import NetworkConfigurator, NetworkSettings, node_ip, peers
from agent.node_status import NodeConfig, NodeStatusReporter, Readings, node_status
from agent.pod_cgroups import remove_pod_cgroup, sweep_pod_cgroups
from agent.pod_config import ConfigError, NodeSettings, secret_data
from agent.pod_status import PodObservation, compute_pod_status
from agent.pod_sync import PodSyncer, SyncDeps
from agent.probes import ProbeManager, ProbeTarget, RealProbeRunner
from agent.proxy import (
    DnsServer,
    DnsSettings,
    ProxySettings,
    ServiceProxy,
    ensure_local_address,
    remove_local_address,
    service_env,
)
from agent.runtime_view import PodRecord, RuntimeView
from agent.sa_tokens import TokenManager
from agent.server import AgentServicer, TokenChecker
from agent.static_pods import MirrorPods, StaticPodSource, is_static, mirror_of
from agent.status_manager import StatusManager
from agent.stream_proxy import AgentEndpoint, serve_endpoint
from agent.volumes import VolumeSources, refresh_token_volumes, teardown_volumes
from controlplane.client import errors
from controlplane.client.clock import Clock, RealClock
from controlplane.client.config import ClientConfig
from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import ApiClient, Object
from controlplane.client.workqueue import RateLimitingQueue, ShutDown
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent")
POD_CGROUP_SWEEP = 5.0  # seconds between sweeps of leftover pod cgroups

UID_INDEX = "uid"
MIRROR_INDEX = "mirror"  # static pod UID -> its mirror pods in the API


@dataclass(frozen=True)
class AgentConfig:
    node: NodeConfig
    root: Path = Path("/var/lib/skiff/agent")
    pod_settings: NodeSettings = field(default_factory=NodeSettings)
    network: NetworkSettings | None = field(default_factory=NetworkSettings)
    workers: int = 4
    resync_period: float = 10.0
    relist_period: float = 1.0
    lease_period: float = 10.0
    runtime_name: str = ""  # containerID prefix; "" = the runtime's own name
    listen: str = ""  # the agent endpoint (logs, stats), e.g. "0.0.0.0:10250"; "" = none
    # kube-proxy's and the cluster DNS's jobs; None turns each off (tests without root).
    proxy: ProxySettings | None = None
    dns: DnsSettings | None = None
    # Static pods (--pod-manifest-path); None = off. The directory is re-read every period.
    pod_manifest_path: Path | None = None
    static_period: float = 5.0
    # The local-path provisioner's volumes (agent/local_path.py); None = <root>/local-path.
    local_path_root: Path | None = None


def _uid_index(obj: Object) -> list[str]:
    uid = obj.get("metadata", {}).get("uid")
    return [uid] if uid else []


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
        self.stop_event = threading.Event()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(clock=self.clock)
        self.view = RuntimeView(runtime)
        self.status = StatusManager(api)
        self.reporter = NodeStatusReporter(api, cfg.node)
        self.network = NetworkConfigurator(cfg.network) if cfg.network else None
        self.factory = SharedInformerFactory(api, clock=self.clock)
        self.pods = self.factory.informer_for(
            "Pod", field_selector=f"spec.nodeName={cfg.node.name}"
        )
        self.pods.add_indexers({UID_INDEX: _uid_index})
        self.nodes = self.factory.informer_for("Node")
        self.services = self.factory.informer_for("Service")
        self.proxy = (
            ServiceProxy(api, cfg.node.name, cfg.proxy, clock=self.clock, informers=self.factory)
            if cfg.proxy is not None
            else None
        )
        self.dns = DnsServer(api, cfg.dns, informers=self.factory) if cfg.dns is not None else None
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
            )
        )
        self._last_seen: dict[str, Object] = {}  # uid -> last pod object, for deleted pods
        self._fingerprints: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._runtime_version = ""
        self.runtime_name = cfg.runtime_name
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

    def _service_env(self, pod: Mapping[str, Any]) -> Mapping[str, str]:
        links = (pod.get("spec") or {}).get("enableServiceLinks", True)
        return service_env(
            self.services.store.list(),
            pod["metadata"].get("namespace", "default"),
            enable_service_links=links is not False,
        )

    # API lookups for env and volumes
    def _get_configmap(self, ns: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.api.get("ConfigMap", name, ns)
        except errors.NotFound:
            return None

    def _get_secret(self, ns: str, name: str) -> Mapping[str, Any] | None:
        try:
            return self.api.get("Secret", name, ns)
        except errors.NotFound:
            return None

    # lifecycle
    def start(self) -> None:
        self._wait_for_runtime()
        # Workers start before the API is reached, so static pods run without it.
        for i in range(self.cfg.workers):
            self._spawn(f"pod-worker-{i}", self._worker)
        if self.static is not None:
            self._poll_static()
            self._spawn(
                "static-pods", self._every(min(1.0, self.cfg.static_period), self._poll_static)
            )
        self._register()
        self.pods.add_event_handler(
            on_add=self._on_pod,
            on_update=lambda old, new: self._on_pod(new),
            on_delete=self._on_pod_delete,
        )
        self.nodes.add_event_handler(
            on_add=lambda n: self._on_nodes(),
            on_update=lambda o, n: self._on_nodes(),
            on_delete=lambda n: self._on_nodes(),
        )
        if self.dns is not None:
            ensure_local_address(self.dns.settings.listen_host, self.dns.settings.interface)
            self.dns.start()
        if self.proxy is not None:
            self.proxy.start()
        self.factory.start()
        while not self.factory.wait_for_cache_sync(timeout=5) and not self.stop_event.is_set():
            log.info("waiting for the pod and node caches to sync")
        self.local_path.start()
        self._spawn("pleg", self._every(self.cfg.relist_period, self.relist))
        self._spawn("resync", self._every(self.cfg.resync_period, self._resync))
        self._spawn("pod-cgroups", self._every(POD_CGROUP_SWEEP, self._sweep_pod_cgroups))
        self._spawn("node-status", self._every(self.cfg.lease_period, self._heartbeat))
        self._on_nodes()
        if self.cfg.listen:
            tokens = TokenChecker(self._api_config) if self._api_config else None
            servicer = AgentServicer(
                self.cfg.node.name,
                self._endpoint_pod,
                self.cri,
                Path(self.cfg.pod_settings.log_root),
                tokens,
            )
            self._endpoint = serve_endpoint(
                servicer,
                self.cfg.listen,
                self._endpoint_pod,
                self.cri,
                tokens,
            )
            self.endpoint_port = self._endpoint.port
        log.info("node=%s agent running", self.cfg.node.name)

    def stop(self) -> None:
        self.stop_event.set()
        if self._endpoint is not None:
            self._endpoint.stop(grace=1)
        if self.dns is not None:
            self.dns.stop()
            remove_local_address(self.dns.settings.listen_host, self.dns.settings.interface)
        if self.proxy is not None:
            self.proxy.stop()
        self.queue.shut_down()
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

    def _wait_for_runtime(self) -> None:
        delay = 0.2
        while not self.stop_event.is_set():
            try:
                v = self.cri.version()
                self._runtime_version = f"{v.runtime_name}://{v.runtime_version}"
                self.runtime_name = self.runtime_name or v.runtime_name
                return
            except CRIError as err:
                log.warning(
                    "runtime at %s not reachable (%s); retrying in %.1fs",
                    self.cri.endpoint,
                    err,
                    delay,
                )
            self.stop_event.wait(delay)
            delay = min(delay * 2, 10.0)

    def _register(self) -> None:
        delay = 0.2
        while not self.stop_event.is_set():
            try:
                self.reporter.register(self._node_status(None))
                self.reporter.renew_lease()
                return
            except errors.ApiError as err:
                log.warning(
                    "cannot register node %s with the control plane (%s); retrying in %.1fs",
                    self.cfg.node.name,
                    err,
                    delay,
                )
            self.stop_event.wait(delay)
            delay = min(delay * 2, 10.0)

    # node
    def _runtime_not_ready(self) -> str | None:
        try:
            conds = {c.type: c for c in self.cri.status().status.conditions}
        except CRIError as err:
            return f"container runtime is down: {err.message}"
        for kind in ("RuntimeReady", "NetworkReady"):
            c = conds.get(kind)
            if c is None or not c.status:
                return (
                    f"{kind}=false reason:{c.reason if c else ''} message:{c.message if c else ''}"
                )
        return None

    def _node_status(self, old: Mapping[str, Any] | None) -> dict[str, Any]:
        try:
            images = [
                {"names": [*i.repo_tags, *i.repo_digests], "sizeBytes": i.size}
                for i in self.cri.list_images()
                if i.repo_tags or i.repo_digests
            ]
        except CRIError:
            images = []
        return node_status(
            self.cfg.node,
            Readings.take(self.cfg.node.fs_path),
            self._runtime_version,
            self._runtime_not_ready(),
            images,
            old,
        )

    def _heartbeat(self) -> None:
        try:
            self.reporter.renew_lease()
            node = self.nodes.store.get(self.cfg.node.name)
            self.reporter.maybe_update(
                self._node_status((node or {}).get("status")), self.clock.now()
            )
        except errors.ApiError as err:
            log.warning("node=%s heartbeat failed: %s", self.cfg.node.name, err)

    def _on_nodes(self) -> None:
        if self.network is None:
            return
        me = self.nodes.store.get(self.cfg.node.name)
        cidr = ((me or {}).get("spec") or {}).get("podCIDR")
        if not me or not cidr:
            return
        changed = self.network.apply(
            cidr,
            node_ip(me) or self.cfg.node.address,
            peers(self.nodes.store.list(), self.cfg.node.name),
        )
        if changed:
            try:
                self.cri.update_runtime_config(cidr)
            except CRIError as err:
                log.warning("UpdateRuntimeConfig failed: %s", err)

    # static pods
    def _poll_static(self) -> None:
        """Re-read the manifest directory when due; enqueue every static pod (their resync)."""
        assert self.static is not None
        changes = self.static.poll()
        if changes is None:
            return
        for pod in changes.removed:
            self._last_seen[pod["metadata"]["uid"]] = pod
        for pod in [*changes.removed, *self.static.list()]:
            self.queue.add(pod["metadata"]["uid"])

    def _sync_mirror(self, pod: Object) -> bool:
        """Keep the static pod's mirror in the API; True if its status may go there
        (by name). Retried by the static resync, not sooner, while the API is away."""
        assert self.mirrors is not None
        try:
            state = self.mirrors.ensure(pod)
        except errors.ApiError as err:
            log.warning("pod=%s/%s mirror pod not synced: %s",
                        pod["metadata"]["namespace"], pod["metadata"]["name"], err)  # fmt: skip
            return False
        if state == "created":
            self.status.forget(pod["metadata"]["uid"])
        return state != "blocked"

    def _endpoint_pod(self, namespace: str, name: str) -> Object | None:
        """The pod the agent endpoint serves: a static pod rather than its mirror."""
        pod = self.pods.store.get(name, namespace)
        if self.static is None or (pod is not None and not mirror_of(pod)):
            return pod
        for static in self.static.list():
            if (static["metadata"]["namespace"], static["metadata"]["name"]) == (namespace, name):
                return static
        return pod

    def _drop_mirrors(self, uid: str) -> None:
        """Static pod `uid` is gone: so are its mirrors."""
        if self.mirrors is None:
            return
        try:
            self.mirrors.delete_orphans(uid, self.pods.store.by_index(MIRROR_INDEX, uid))
        except errors.ApiError as err:
            log.warning("uid=%s orphaned mirror pod not deleted: %s", uid, err)

    # pod events
    def _on_pod(self, pod: Object) -> None:
        if mirror_of(pod):  # a mirror stands for its static pod
            self.queue.add(mirror_of(pod))
            return
        uid = pod["metadata"].get("uid")
        if uid:
            self._last_seen[uid] = pod
            self.queue.add(uid)

    def _on_pod_delete(self, pod: Object) -> None:
        if mirror_of(pod):
            self.queue.add(mirror_of(pod))
            return
        uid = pod["metadata"].get("uid")
        if uid:
            self._last_seen[uid] = pod
            self.queue.add(uid)

    def relist(self) -> None:
        """PLEG: enqueue pods whose runtime state changed, and orphans."""
        records = self.view.relist()
        seen = set()
        for uid, rec in records.items():
            seen.add(uid)
            fp = (
                tuple((s.id, s.state) for s in rec.sandboxes),
                tuple((c.id, c.state) for c in rec.containers),
            )
            if self._fingerprints.get(uid) != fp:
                self._fingerprints[uid] = fp
                self.queue.add(uid)
        for uid in set(self._fingerprints) - seen:
            del self._fingerprints[uid]

    def _sweep_pod_cgroups(self) -> None:
        keep = {p["metadata"]["uid"] for p in self.pods.store.list()} | set(self._fingerprints)
        if self.static is not None:
            keep |= {p["metadata"]["uid"] for p in self.static.list()}
        sweep_pod_cgroups(self.cfg.pod_settings.cgroup_root, keep)

    def _resync(self) -> None:
        for pod in self.pods.store.list():
            self.queue.add(mirror_of(pod) or pod["metadata"]["uid"])
        self._refresh_tokens()

    def _refresh_tokens(self) -> None:
        """Renew the ServiceAccount tokens projected into running pods (each is
        asked for anew past 80% of its life) and forget those of gone pods."""
        pods = self.pods.store.list()
        self.tokens.forget({p["metadata"]["uid"] for p in pods})
        for pod in pods:
            try:
                refresh_token_volumes(self.cfg.root, pod, self.syncer.d.volumes)
            except (OSError, ConfigError) as err:
                log.warning("pod=%s token refresh failed: %s", pod["metadata"].get("name"), err)

    # workers
    def _worker(self) -> None:
        while True:
            try:
                uid = self.queue.get()
            except ShutDown:
                return
            try:
                self.sync_pod(uid)
                self.queue.forget(uid)
            except Exception:
                log.exception("uid=%s sync failed; will retry", uid)
                self.queue.add_rate_limited(uid)
            finally:
                self.queue.done(uid)

    def _pod(self, uid: str) -> Object | None:
        static = self.static.get(uid) if self.static is not None else None
        if static is not None:
            return static
        found = [p for p in self.pods.store.by_index(UID_INDEX, uid) if not mirror_of(p)]
        return found[0] if found else None

    def sync_pod(self, uid: str) -> None:
        pod = self._pod(uid)
        rec = self.view.relist(uid).get(uid)
        if pod is None:
            gone = self._last_seen.pop(uid, None)
            if gone is not None and rec is not None and is_static(gone):  # graceful, as kubelet
                grace = (gone.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
                self.syncer.kill_pod(gone, rec, int(grace))
                rec = self.view.relist(uid).get(uid)
            self._cleanup(uid, gone, rec)
            self._drop_mirrors(uid)
            return
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            self._terminate(pod, rec)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and (
            rec is None or not any(c.state == "running" for c in rec.containers)
        ):
            return
        _, _, liveness_failed = self.probes.results(uid, self._running_specs(pod, rec))
        result = self.syncer.sync(pod, rec, liveness_failed)
        a = result.actions
        acted = a is None or bool(
            a.kill_pod
            or a.create_sandbox
            or a.containers_to_start
            or a.containers_to_kill
            or a.next_init_container is not None
        )
        if acted or rec is None:  # the runtime changed: look again before reporting
            rec = self.view.relist(uid).get(uid) or PodRecord(uid)
        self._sync_probes(pod, rec, result.pod_ips)
        running = self._running_specs(pod, rec)
        ready, started, _ = self.probes.results(uid, running)
        unready = {c["name"] for c in running} - ready
        probe_messages = {
            n: m for n in unready if (m := self.probes.message(uid, n, "readinessProbe"))
        }
        sb = rec.current_sandbox()
        obs = PodObservation(
            sandbox_ready=sb is not None and sb.state == cri.SANDBOX_READY,
            pod_ips=result.pod_ips,
            containers=tuple(rec.containers),
            waiting=result.waiting,
            ready=ready,
            started=started,
            runtime_name=self.runtime_name,
            probe_messages=probe_messages,
        )
        status = compute_pod_status(
            pod, obs, self.clock.now(), self.cfg.node.address, result.init_failed
        )
        if self.mirrors is not None and self.static is not None and self.static.get(uid):
            if self._sync_mirror(pod):
                self.status.set_status(pod, status)
        else:
            self.status.set_status(pod, status)
        for w in result.waiting.values():
            if w.reason in (
                "CrashLoopBackOff",
                "ImagePullBackOff",
                "ErrImagePull",
                "ContainerCreating",
            ):
                self.queue.add_after(uid, 1.0)
                break

    def _running_specs(
        self, pod: Mapping[str, Any], rec: PodRecord | None
    ) -> list[Mapping[str, Any]]:
        running = {c.name for c in (rec.containers if rec else []) if c.state == "running"}
        return [c for c in (pod.get("spec") or {}).get("containers") or [] if c["name"] in running]

    def _sync_probes(
        self, pod: Mapping[str, Any], rec: PodRecord, pod_ips: tuple[str, ...]
    ) -> None:
        uid = pod["metadata"]["uid"]
        latest: dict[str, Any] = {}
        for c in rec.containers:
            latest.setdefault(c.name, c)
        for spec in (pod.get("spec") or {}).get("containers") or []:
            info = latest.get(spec["name"])
            if info is None or info.state != "running":
                self.probes.remove_container(uid, spec["name"])
                continue
            named = {
                p["name"]: int(p["containerPort"]) for p in spec.get("ports") or [] if p.get("name")
            }
            ip = pod_ips[0] if pod_ips else ""
            self.probes.sync_container(uid, spec, ProbeTarget(info.id, ip, named), info.started_at)

    def _terminate(self, pod: Object, rec: PodRecord | None) -> None:
        md = pod["metadata"]
        grace = md.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        if rec is not None:
            self.syncer.kill_pod(pod, rec, int(grace))
            rec = self.view.relist(md["uid"]).get(md["uid"])
            obs = PodObservation(
                containers=tuple(rec.containers) if rec else (), runtime_name=self.runtime_name
            )
            self.status.set_status(
                pod, compute_pod_status(pod, obs, self.clock.now(), self.cfg.node.address)
            )
        self._cleanup(md["uid"], pod, rec)
        self.status.delete_terminated(pod)

    def _cleanup(self, uid: str, pod: Object | None, rec: PodRecord | None) -> None:
        """The pod is gone from the API (or finishing): nothing of it may stay."""
        if rec is not None:
            if pod is not None:
                self.syncer.kill_pod(pod, rec, 0)
            else:
                stub = {"metadata": {"name": uid, "uid": uid}, "spec": {}}
                self.syncer.kill_pod(stub, rec, 0)
            fresh = self.view.relist(uid).get(uid)
            if fresh is not None:
                self.syncer.remove_pod(fresh)
        # The pod's own cgroup (its sandboxes' parent), as the kubelet removes it.
        remove_pod_cgroup(self.cfg.pod_settings.cgroup_root, uid)
        self.probes.remove_pod(uid)
        self.status.forget(uid)
        teardown_volumes(self.cfg.root, uid)
        self._fingerprints.pop(uid, None)


def run_forever(agent: Agent) -> None:
    agent.start()
    try:
        while not agent.stop_event.wait(3600):
            pass
    finally:
        agent.stop()


__all__ = ["Agent", "AgentConfig", "run_forever"]
