"""The node loops: the runtime's version, registration of the Node, Lease
heartbeat and Node status, and the CNI configuration from the Node's
podCIDR and its peers.

`wait_for_runtime` and `register` retry with backoff until they succeed or
the agent stops; `heartbeat` runs every lease period; `on_nodes` runs on
every Node event (the informer's handler).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent import csinode
from agent.cri_client import CRIClient, CRIError
from agent.network import NetworkConfigurator, node_ip, peers
from agent.node_resources import NodeResources
from agent.node_status import NodeConfig, NodeStatusReporter, Readings, node_status
from agent.pleg import Pleg
from controlplane.client import errors
from controlplane.client.informer import SharedInformer
from machinery.clock import Clock

log = logging.getLogger("skiff.agent")
# The heartbeat's runtime calls (Status, ListImages) wait this long at most: a
# wedged runtime must not hold the node status back by the CRI default (30 s).
STATUS_CALL_TIMEOUT = 5.0


@dataclass(eq=False)
class NodeLoops:
    node: NodeConfig
    cri: CRIClient
    reporter: NodeStatusReporter
    nodes: SharedInformer
    network: NetworkConfigurator | None
    clock: Clock
    stop_event: threading.Event
    pleg: Pleg | None = None
    resources: NodeResources | None = None
    runtime_version: str = field(default="", init=False)
    runtime_name: str = field(default="", init=False)

    def _until_done(
        self, attempt: Callable[[], None], fails: type[Exception], what: Callable[[], str]
    ) -> None:
        """`attempt` until it succeeds or the agent stops, backing off from
        0.2 s to 10 s after each `fails` ("<what()> (<err>); retrying in ...")."""
        delay = 0.2
        while not self.stop_event.is_set():
            try:
                attempt()
                return
            except fails as err:
                log.warning("%s (%s); retrying in %.1fs", what(), err, delay)
            self.stop_event.wait(delay)
            delay = min(delay * 2, 10.0)

    def wait_for_runtime(self) -> None:
        def version() -> None:
            v = self.cri.version()
            self.runtime_version = f"{v.runtime_name}://{v.runtime_version}"
            self.runtime_name = v.runtime_name

        self._until_done(version, CRIError, lambda: f"runtime at {self.cri.endpoint} not reachable")

    def register(self) -> None:
        def register_once() -> None:
            node = self.reporter.register(self.node_status(None))
            self.reporter.renew_lease()
            self.write_csinode(node)

        self._until_done(
            register_once,
            errors.ApiError,
            lambda: f"cannot register node {self.node.name} with the control plane",
        )

    def write_csinode(self, node: Mapping[str, Any]) -> None:
        """The node's CSINode, as the kubelet's CSI node-info manager writes
        it at registration (agent/csinode.py); a failure is logged, the node
        runs on (no CSI driver needs it yet)."""
        try:
            csinode.ensure(self.reporter.api, node)
        except errors.ApiError as err:
            log.warning("cannot write the CSINode of node %s: %s", self.node.name, err)

    def runtime_not_ready(self) -> str | None:
        unhealthy = self.pleg.health() if self.pleg is not None else None
        if unhealthy:
            return unhealthy
        try:
            status = self.cri.status(timeout=STATUS_CALL_TIMEOUT)
            conds = {c.type: c for c in status.status.conditions}
        except CRIError as err:
            return f"container runtime is down: {err.message}"
        for kind in ("RuntimeReady", "NetworkReady"):
            c = conds.get(kind)
            if c is None or not c.status:
                return (
                    f"{kind}=false reason:{c.reason if c else ''} message:{c.message if c else ''}"
                )
        return None

    def node_status(self, old: Mapping[str, Any] | None) -> dict[str, Any]:
        # Readiness first: a wedged runtime (PLEG unhealthy) is not asked for
        # its images, whose call would hold the heartbeat (and NotReady) back.
        not_ready = self.runtime_not_ready()
        images: list[dict[str, Any]] = list((old or {}).get("images") or [])
        if not_ready is None:
            try:
                images = [
                    {"names": [*i.repo_tags, *i.repo_digests], "sizeBytes": i.size}
                    for i in self.cri.list_images(timeout=STATUS_CALL_TIMEOUT)
                    if i.repo_tags or i.repo_digests
                ]
            except CRIError:
                pass
        res = self.resources
        return node_status(
            self.node,
            Readings.take(self.node.fs_path),
            self.runtime_version,
            not_ready,
            images,
            old,
            pressures=res.pressures() if res is not None and res.manager is not None else None,
            problems=dict(res.problems) if res is not None else None,
        )

    def heartbeat(self) -> None:
        try:
            self.reporter.renew_lease()
            node = self.nodes.store.get(self.node.name)
            self.reporter.maybe_update(
                self.node_status((node or {}).get("status")), self.clock.now()
            )
        except errors.ApiError as err:
            log.warning("node=%s heartbeat failed: %s", self.node.name, err)

    def on_nodes(self) -> None:
        if self.network is None:
            return
        me = self.nodes.store.get(self.node.name)
        cidr = ((me or {}).get("spec") or {}).get("podCIDR")
        if not me or not cidr:
            return
        changed = self.network.apply(
            cidr,
            node_ip(me) or self.node.address,
            peers(self.nodes.store.list(), self.node.name),
        )
        if changed:
            try:
                self.cri.update_runtime_config(cidr)
            except CRIError as err:
                log.warning("UpdateRuntimeConfig failed: %s", err)
