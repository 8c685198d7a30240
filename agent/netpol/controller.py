"""The agent's NetworkPolicy enforcer (kube-router's netpol controller's job).

NetworkPolicies, Pods (every node's: peers are anywhere) and Namespaces
come from shared informers; their handlers only wake one worker thread.
Pods and Namespaces are watched only from the first NetworkPolicy on: a
cluster without policies costs a node no cache of every pod and no stream
of every pod's changes (once started they stay, until the agent restarts).
The worker rebuilds the node's whole table level-triggered from the stores
(`sync()`: parse, `plan.build`, one atomic `nft -f`), at most once per
`min_sync_interval`, skipping the kernel when the text did not change; a
failed sync is retried after `retry_interval`, and every `sync_period` the
table is written again whatever the text, repairing changes behind our
back. Pods keep running through rule changes: a change only swaps the table.

No window of open traffic: nothing is written before the caches are filled
(all three once a policy exists: a policy seen before the pods are is
held back, not planned against no pods; a table left by the previous agent keeps enforcing until the first
sync replaces it in one transaction), and stopping the agent leaves the
table in place (`cleanup()` removes it: `skiff down`, `skiff up`'s Ctrl-C).
A policy the agent cannot parse is skipped and logged (the API server
refuses such policies). This module never polls the API server and never
touches a table but its own.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from dataclasses import dataclass

from agent.netpol import plan as planner
from agent.netpol.nft import CommandNft, Nft
from agent.netpol.policy import Policy, PolicyError, namespace_labels, parse_policy, pod_info
from agent.sync_runner import SyncRunner
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient
from machinery.clock import Clock, RealClock

log = logging.getLogger("skiff.agent.netpol")

BRIDGE_SYSCTL = "/proc/sys/net/bridge/bridge-nf-call-iptables"


@dataclass(frozen=True)
class NetpolSettings:
    table: str = planner.DEFAULT_TABLE
    min_sync_interval: float = 0.1
    sync_period: float = 30.0
    retry_interval: float = 1.0
    # Bridged traffic between pods of one node passes the forward hook only
    # with br_netfilter (k3s and kube-router need it too).
    prepare_bridge: bool = True


class NetworkPolicyController(SyncRunner):
    what = "network policy"  # in the log of a failed sync

    def __init__(
        self,
        api: ApiClient,
        node_name: str,
        settings: NetpolSettings | None = None,
        clock: Clock | None = None,
        informers: SharedInformerFactory | None = None,
        nft: Nft | None = None,
    ) -> None:
        self.node_name = node_name
        self.settings = settings or NetpolSettings()
        self._init_runner(clock or RealClock())
        self._own_factory = informers is None
        self.factory = informers or SharedInformerFactory(api, clock=self.clock)
        self.nft: Nft = nft or CommandNft()
        self.policies: SharedInformer = self.factory.informer_for("NetworkPolicy")
        # Every pod and namespace: only once a policy exists (_watch_peers).
        self.pods: SharedInformer | None = None
        self.namespaces: SharedInformer | None = None
        self._lock = threading.Lock()
        self._applied = ""  # the text of the last applied table
        self.syncs = 0
        self.last_sync_seconds = 0.0
        self.last_plan: planner.Plan | None = None

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._start_runner((self.policies,))
        self.factory.start()
        if self.settings.prepare_bridge:
            prepare_bridge()
        self._run_loop("netpol")

    def stop(self) -> None:
        """Stop syncing; the table stays (see the module docstring)."""
        self._stop_runner()
        if self._own_factory:
            self.factory.shutdown()

    def cleanup(self) -> bool:
        with self._lock:
            self._applied = ""
            return self.nft.delete_table("inet", self.settings.table)

    def has_synced(self) -> bool:
        return self.syncs > 0

    # ---- the work --------------------------------------------------------

    def current_policies(self) -> list[Policy]:
        out: list[Policy] = []
        for obj in self.policies.store.list():
            try:
                out.append(parse_policy(obj))
            except PolicyError as err:
                meta = obj.get("metadata") or {}
                log.warning(
                    "networkpolicy %s/%s not enforced: %s",
                    meta.get("namespace"),
                    meta.get("name"),
                    err,
                )
        return out

    def _watch_peers(self) -> bool:
        """Watch every pod and namespace (from the first policy on); whether
        both caches are filled."""
        if self.pods is None or self.namespaces is None:
            log.info("network policy: the first policy; watching pods and namespaces")
            self.pods = self.factory.informer_for("Pod")
            self.namespaces = self.factory.informer_for("Namespace")
            self._start_runner((self.pods, self.namespaces))
            self.factory.start()
        return self.pods.has_synced() and self.namespaces.has_synced()

    def plan(self) -> planner.Plan:
        if self.pods is None or self.namespaces is None:
            return planner.build([], [], {}, self.node_name, self.settings.table)
        pods = [p for p in (pod_info(o) for o in self.pods.store.list()) if p is not None]
        return planner.build(
            self.current_policies(),
            pods,
            namespace_labels(self.namespaces.store.list()),
            self.node_name,
            self.settings.table,
        )

    def sync(self, full: bool = False) -> None:
        """Rebuild the table from the stores; write it when it changed (or `full`)."""
        with self._lock:
            started = self.clock.monotonic()
            self._last_sync = started
            if self.policies.store.list() and not self._watch_peers():
                self._wake.set()  # back through _ready, which waits for the caches
                return
            plan = self.plan()
            text = plan.text()
            if full or text != self._applied:
                self._applied = ""
                self.nft.apply(text)  # raises: retried, and the next sync writes again
                self._applied = text
            self.last_plan = plan
            self.syncs += 1
            self.last_sync_seconds = self.clock.monotonic() - started

    def _ready(self) -> bool:
        # a table from half-filled caches would open or cut traffic
        if not self.policies.wait_for_sync(0.5):
            return False
        if self.pods is None and not self.policies.store.list():
            return True  # no policy: no peers to know
        self._watch_peers()
        assert self.pods is not None and self.namespaces is not None
        return self.pods.wait_for_sync(0.5) and self.namespaces.wait_for_sync(0.5)

    def _sync_timing(self) -> NetpolSettings:
        return self.settings


def prepare_bridge() -> None:
    """Best effort: load br_netfilter and let bridged IPv4 pass the hooks."""
    if not os.path.exists(BRIDGE_SYSCTL):
        subprocess.run(["modprobe", "br_netfilter"], capture_output=True, check=False)
    try:
        with open(BRIDGE_SYSCTL, "w") as f:
            f.write("1")
    except OSError as err:
        log.warning(
            "%s: %s; policies between pods of one node are not enforced", BRIDGE_SYSCTL, err
        )
