"""The agent's service proxy: kube-proxy's iptables mode.

Services and EndpointSlices come from shared informers; their handlers only mark
the proxy dirty and wake one worker thread. The worker rebuilds every rule
level-triggered from the informer stores (`sync()`: `build_rules`, then one
`iptables-restore --noflush` of the chains that changed since the last
sync; a full sync reads the tables with `iptables-save` and rewrites every
chain of ours), at most once per `min_sync_interval`, so a burst of EndpointSlice
changes costs one restore and a change is in place well within a second.
After each sync, UDP conntrack entries that point at removed endpoints (or
that were made while a port had none) are deleted. A failed sync is retried
after `retry_interval`; every `sync_period` a full
sync repairs anything changed behind our back.
`stop()` (and `cleanup()`) remove every chain and jump of ours.

This module never edits chains that are not ours (rules.py decides which
are), never polls the API server, and never sleeps on the informer thread.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from agent.proxy import rules
from agent.proxy.conntrack import stale_udp_flows
from agent.proxy.healthcheck import HealthCheckServers, health_targets
from agent.proxy.iptables import CommandIptables, Iptables
from agent.proxy.model import EndpointSource, ServicePort, service_ports, slice_source
from agent.sync_runner import SyncRunner
from controlplane.client.endpointslices import group_by_service
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient
from machinery.clock import Clock, RealClock

log = logging.getLogger("skiff.agent.proxy")


@dataclass(frozen=True)
class ProxySettings:
    # Pod network CIDR (e.g. 10.42.0.0/16): cluster-IP traffic from outside it
    # is masqueraded. Empty: only NodePort and hairpin traffic is.
    cluster_cidr: str = ""
    masquerade_all: bool = False
    masquerade_bit: int = 14
    localhost_nodeports: bool = True
    # Cluster IPs this node answers itself (the DNS responder's address).
    local_service_ips: frozenset[str] = field(default_factory=frozenset)
    min_sync_interval: float = 0.1
    sync_period: float = 30.0
    retry_interval: float = 1.0
    cleanup_on_stop: bool = True
    # Our chains are <prefix>-SERVICES, <prefix>-SVC-..., ...: another
    # prefix for a second agent on the same host (rules.Chains).
    chain_prefix: str = rules.DEFAULT_PREFIX
    # Serve kube-proxy's health checks on healthCheckNodePorts (LoadBalancer
    # Services with externalTrafficPolicy Local).
    health_checks: bool = True

    @property
    def chains(self) -> rules.Chains:
        return rules.Chains(self.chain_prefix)

    def rule_config(self, node_name: str) -> rules.RuleConfig:
        return rules.RuleConfig(
            node_name=node_name,
            cluster_cidr=self.cluster_cidr,
            masquerade_all=self.masquerade_all,
            masquerade_bit=self.masquerade_bit,
            localhost_nodeports=self.localhost_nodeports,
            local_service_ips=self.local_service_ips,
            chains=self.chains,
        )


def read_existing(ipt: Iptables, naming: rules.Chains = rules.DEFAULT_CHAINS) -> rules.Existing:
    existing = rules.Existing(naming=naming)
    for table in rules.TABLES:
        rules.parse_save(table, ipt.save(table), existing)
    return existing


def cleanup(ipt: Iptables, naming: rules.Chains = rules.DEFAULT_CHAINS) -> bool:
    """Remove every chain and jump of ours (named by `naming`); True if
    anything was there."""
    text = rules.cleanup_text(read_existing(ipt, naming))
    if text:
        ipt.restore(text)
    return bool(text)


class ServiceProxy(SyncRunner):
    what = "service proxy"  # in the log of a failed sync

    def __init__(
        self,
        api: ApiClient,
        node_name: str,
        settings: ProxySettings | None = None,
        clock: Clock | None = None,
        informers: SharedInformerFactory | None = None,
        iptables: Iptables | None = None,
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.settings = settings or ProxySettings()
        self._init_runner(clock or RealClock())
        self._own_factory = informers is None
        self.factory = informers or SharedInformerFactory(api, clock=self.clock)
        self.iptables: Iptables = iptables or CommandIptables()
        self.services: SharedInformer = self.factory.informer_for("Service")
        # discovery.k8s.io/v1 EndpointSlices, merged per Service (as kube-proxy)
        self.slices: SharedInformer = self.factory.informer_for("EndpointSlice")
        self._lock = threading.Lock()  # one sync at a time
        self._applied: list[ServicePort] = []  # the ports of the last applied sync
        self._applied_rules: rules.Ruleset | None = None  # None: next sync is full
        self.syncs = 0  # successful syncs, for tests and metrics
        self.last_sync_seconds = 0.0  # how long the last successful sync took
        self.last_synced_at = 0.0  # clock.now() when it finished
        self.health = HealthCheckServers() if self.settings.health_checks else None

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._start_runner((self.services, self.slices))
        self.factory.start()
        self._prepare_host()
        self._run_loop("service-proxy")

    def stop(self, cleanup_rules: bool | None = None) -> None:
        self._stop_runner()
        if self._own_factory:
            self.factory.shutdown()
        if self.health is not None:
            self.health.close()
        if self.settings.cleanup_on_stop if cleanup_rules is None else cleanup_rules:
            self.cleanup()

    def cleanup(self) -> bool:
        with self._lock:
            return cleanup(self.iptables, self.settings.chains)

    def has_synced(self) -> bool:
        """True once the stores are filled and one sync has applied them."""
        return self.syncs > 0

    # ---- the work --------------------------------------------------------

    def endpoint_source(self) -> EndpointSource:
        return slice_source(group_by_service(self.slices.store.list()))

    def current_ports(self) -> list[ServicePort]:
        return service_ports(self.services.store.list(), self.endpoint_source())

    def restore_text(self, ports: list[ServicePort] | None = None) -> str:
        """The full transaction a sync would apply now (reads iptables-save)."""
        if ports is None:
            ports = self.current_ports()
        ruleset = rules.build_rules(ports, self.settings.rule_config(self.node_name))
        return rules.restore_text(ruleset, read_existing(self.iptables, ruleset.naming))

    def sync(self, full: bool = False) -> None:
        """Rebuild every rule from the informer stores and apply what changed
        (everything, after reading the tables back, when `full`, on the first
        sync, after a failure and every `sync_period`); then clear the UDP
        conntrack entries the change made stale."""
        with self._lock:
            self._last_sync = self.clock.monotonic()
            source = self.endpoint_source()
            ports = service_ports(self.services.store.list(), source)
            ruleset = rules.build_rules(ports, self.settings.rule_config(self.node_name))
            previous, self._applied_rules = self._applied_rules, None
            if full or previous is None:
                text = rules.restore_text(ruleset, read_existing(self.iptables, ruleset.naming))
            else:
                text = rules.incremental_text(previous, ruleset)
            if text:
                self.iptables.restore(text)  # raises: the next sync is a full one
            self._applied_rules = ruleset
            self.last_sync_seconds = self.clock.monotonic() - self._last_sync
            self.last_synced_at = self.clock.now()
            # After a restart the rules were in place already: nothing is stale.
            stale = stale_udp_flows(self._applied, ports) if self.syncs else []
            self.syncs += 1
            for filters in stale:
                try:
                    self.iptables.delete_conntrack(filters)
                except Exception as err:  # stale flows then expire on their own
                    log.warning("conntrack -D %s failed: %s", " ".join(filters), err)
            self._applied = ports
        if self.health is not None:
            self.health.sync(health_targets(self.services.store.list(), source, self.node_name))

    def _prepare_host(self) -> None:
        if self.settings.localhost_nodeports:
            try:
                self.iptables.sysctl("net/ipv4/conf/all/route_localnet", "1")
            except Exception as err:  # NodePorts on 127.0.0.1 then do not work
                log.warning("cannot enable route_localnet: %s", err)

    def _ready(self) -> bool:
        # Rules from half-filled stores would cut live services off.
        return self.services.wait_for_sync(0.5) and self.slices.wait_for_sync(0.5)

    def _sync_timing(self) -> ProxySettings:
        return self.settings
