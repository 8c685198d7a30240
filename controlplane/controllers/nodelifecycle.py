"""The node lifecycle controller: notice dead nodes, taint them, evict their pods.

Nodes heartbeat by renewing their Lease in `kube-node-lease` (and by the
Ready condition's lastHeartbeatTime). We remember when *we* last saw either
change, on our own clock; when that is older than the grace period (40 s)
the node's Ready and pressure conditions become Unknown ("Kubelet stopped
posting node status.") and its pods' Ready condition False. Nodes carry the
taints their Ready condition calls for (`node.kubernetes.io/unreachable`
or `not-ready`, NoSchedule and NoExecute); adding a NoExecute taint is
rate-limited per zone (0.1 nodes/s normally, less or none when a large
share of the zone is down, so a network partition does not empty the
cluster). Pods on a NoExecute-tainted node are deleted once their
toleration runs out (`node_health.eviction_delay`: at once without a
toleration, else the smallest tolerationSeconds, default 300 s), so their
controllers replace them elsewhere. All timing uses the injected clock;
the node key is re-queued for when something next falls due.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.client.store import pod_node_index
from controlplane.controllers import node_health, podutil
from controlplane.controllers.base import Controller, ControllerContext
from machinery import rfc3339

LEASE_NAMESPACE = "kube-node-lease"
ZONE_LABEL = "topology.kubernetes.io/zone"
NODE_INDEX = "node"


class _Bucket:
    """A token bucket on the controller's clock (one per zone)."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def take(self, now: float, qps: float) -> float:
        """0 if a token was taken, else seconds until one is available (inf if qps 0)."""
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now
        self.qps = qps
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        if qps <= 0:
            return float("inf")
        return (1.0 - self.tokens) / qps


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.nodes = self.watch("Node")
        self.leases = self.watch("Lease")
        self.pods = self.watch("Pod", {NODE_INDEX: pod_node_index})
        self.nodes.add_event_handler(
            on_add=self.enqueue, on_update=self._node_updated, on_delete=self._node_deleted
        )
        self.follow(self.leases, self._lease)
        self.follow(self.pods, self._pod)
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[str, float]] = {}  # node -> (heartbeat text, when we saw it)
        self._buckets: dict[str, _Bucket] = {}

    # ---- handlers -------------------------------------------------------------

    def _node_updated(self, old: Object, new: Object) -> None:
        if podutil.meta(old).get("resourceVersion") != podutil.meta(new).get("resourceVersion"):
            self.enqueue(new)

    def _node_deleted(self, node: Object) -> None:
        with self._lock:
            self._seen.pop(podutil.name_of(node), None)

    def _lease(self, lease: Object) -> None:
        if podutil.namespace_of(lease) == LEASE_NAMESPACE:
            self.enqueue_key(podutil.name_of(lease))

    def _pod(self, pod: Object) -> None:
        node = podutil.spec(pod).get("nodeName")
        if node:
            n = self.nodes.store.get(str(node))
            if n is not None and any(
                t.get("effect") == "NoExecute" for t in podutil.spec(n).get("taints") or []
            ):
                self.enqueue_key(str(node))

    # ---- sync -------------------------------------------------------------------

    def observed_heartbeat(self, name: str) -> tuple[str, float] | None:
        """(the heartbeat we last saw for a node, when on our clock), if any."""
        with self._lock:
            return self._seen.get(name)

    def _heartbeat(self, node: Object) -> float:
        name = podutil.name_of(node)
        lease = self.leases.store.get(name, LEASE_NAMESPACE)
        renew = str((podutil.spec(lease).get("renewTime") if lease else "") or "")
        ready = podutil.condition(node, "Ready") or {}
        # Our own writes (conditions to Unknown) change the status, never the
        # heartbeat: only the agent's renewals count.
        text = f"{renew}|{ready.get('lastHeartbeatTime', '')}"
        now = self.clock.now()
        with self._lock:
            seen = self._seen.get(name)
            if seen is None or seen[0] != text:
                self._seen[name] = (text, now)
                return now
            return seen[1]

    def sync(self, key: str) -> float | None:
        node = self.nodes.store.get_by_key(key)
        if node is None:
            return None
        node = copy.deepcopy(node)
        now = self.clock.now()
        grace = self.config.node_monitor_grace_period
        ready = podutil.condition(node, "Ready")
        ready_status = str(ready.get("status")) if ready else None
        health = node_health.node_health(ready_status, self._heartbeat(node), now, grace)
        if health.mark_unknown:
            node = self._mark_unknown(node, now)
            self._mark_pods_not_ready(str(podutil.name_of(node)))
            self.recorder.event(
                node,
                "Normal",
                "NodeNotReady",
                f"Node {podutil.name_of(node)} status is now: NodeNotReady",
            )
        ready_now = health.ready if ready is not None or health.mark_unknown else "Unknown"
        if ready is None and not health.mark_unknown:
            ready_now = "Unknown" if now >= health.next_check else "True"
        next_due = [health.next_check - now]
        delay = self._taint(node, ready_now, now)
        if delay is not None:
            next_due.append(delay)
        evict = self._evict(node, now)
        if evict is not None:
            next_due.append(evict)
        return max(0.5, min(next_due))

    def _mark_unknown(self, node: Object, now: float) -> Object:
        conds = podutil.status(node).get("conditions") or []
        stamp = rfc3339.format_time(now)
        out: list[Object] = []
        seen = set()
        for c in conds:
            c = dict(c)
            if c.get("type") in node_health.STATUS_CONDITIONS:
                seen.add(c["type"])
                if c.get("status") != "Unknown":
                    c["lastTransitionTime"] = stamp
                c.update(
                    {
                        "status": "Unknown",
                        "reason": "NodeStatusUnknown",
                        "message": "Kubelet stopped posting node status.",
                    }
                )
            out.append(c)
        if "Ready" not in seen:
            out.append(
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastTransitionTime": stamp,
                    "lastHeartbeatTime": stamp,
                }
            )
        node.setdefault("status", {})["conditions"] = out
        body = copy.deepcopy(node)
        body["metadata"].pop("resourceVersion", None)
        try:
            return self.client.update_status("Node", body)
        except errors.NotFound:
            return node

    def _mark_pods_not_ready(self, node_name: str) -> None:
        for pod in self.pods.store.by_index(NODE_INDEX, node_name):
            if not podutil.is_ready(pod) or podutil.is_terminated(pod):
                continue
            conditions = podutil.set_condition(
                podutil.status(pod).get("conditions"),
                "Ready",
                "False",
                "NodeNotReady",
                "",
                self.clock.now(),
            )
            self.write_status("Pod", pod, {**podutil.status(pod), "conditions": conditions})

    def _stale(self, name: str, now: float) -> bool:
        """Whether our own observation says the node stopped heartbeating."""
        with self._lock:
            seen = self._seen.get(name)
        return seen is not None and now >= seen[1] + self.config.node_monitor_grace_period

    def _zone_qps(self, zone: str) -> tuple[float, int]:
        ready = not_ready = 0
        now = self.clock.now()
        for n in self.nodes.store.list():
            if str(podutil.labels_of(n).get(ZONE_LABEL, "")) != zone:
                continue
            c = podutil.condition(n, "Ready")
            if (
                c is not None
                and c.get("status") == "True"
                and not self._stale(podutil.name_of(n), now)
            ):
                ready += 1
            else:
                not_ready += 1
        state = node_health.zone_state(ready, not_ready)
        size = ready + not_ready
        if state == "PartialDisruption":
            qps = (
                self.config.secondary_node_eviction_rate
                if size > node_health.LARGE_CLUSTER_THRESHOLD
                else 0.0
            )
        elif state == "FullDisruption":
            qps = 0.0
        else:
            qps = self.config.node_eviction_rate
        return qps, size

    def _taint(self, node: Object, ready: str, now: float) -> float | None:
        spec = podutil.spec(node)
        # Conditions a node no longer reports (Unknown after a lost heartbeat)
        # keep none of their taints, as Kubernetes' TaintNodesByCondition.
        stale = ready == "Unknown"
        wanted = node_health.wanted_taints(
            ready, bool(spec.get("unschedulable")), [] if stale else node_health.pressures(node)
        )
        if node_health.merge_taints(list(spec.get("taints") or []), wanted, "") is None:
            return None  # nothing to change (as far as the cache knows)
        # A change is due: decide on the node as the API server has it now, so
        # a cache behind our own last write never drops a taint we added.
        try:
            fresh = self.client.get("Node", podutil.name_of(node))
        except errors.NotFound:
            return None
        node["spec"] = fresh.get("spec") or {}
        node["metadata"] = fresh.get("metadata") or node.get("metadata") or {}
        current = list(podutil.spec(fresh).get("taints") or [])
        adds_no_execute = any(
            w["effect"] == "NoExecute"
            and not any(
                t.get("key") == w["key"] and t.get("effect") == "NoExecute" for t in current
            )
            for w in wanted
        )
        wait = 0.0
        if adds_no_execute:
            zone = str(podutil.labels_of(node).get(ZONE_LABEL, ""))
            qps, _ = self._zone_qps(zone)
            with self._lock:
                bucket = self._buckets.setdefault(zone, _Bucket(qps, 1, now))
                wait = bucket.take(now, qps)
            if wait > 0:
                # Not yet: the NoSchedule taints now, NoExecute ones already there kept.
                wanted = [
                    w
                    for w in wanted
                    if w["effect"] != "NoExecute"
                    or any(
                        t.get("key") == w["key"] and t.get("effect") == "NoExecute" for t in current
                    )
                ]
        merged = node_health.merge_taints(current, wanted, rfc3339.format_time(now))
        if merged is not None:
            self._write_taints(node, merged)
        if wait > 0:
            return min(wait, self.config.node_monitor_period * 12)
        return None

    def _write_taints(self, node: Object, taints: list[Any]) -> None:
        try:
            updated = self.client.patch(
                "Node", podutil.name_of(node), {"spec": {"taints": taints or None}}
            )
        except errors.NotFound:
            return
        node["spec"] = updated.get("spec") or {}

    def _evict(self, node: Object, now: float) -> float | None:
        taints = [
            t for t in podutil.spec(node).get("taints") or [] if t.get("effect") == "NoExecute"
        ]
        if not taints:
            return None
        added = min((rfc3339.parse_time(t.get("timeAdded")) or now) for t in taints)
        soonest: float | None = None
        for pod in self.pods.store.by_index(NODE_INDEX, podutil.name_of(node)):
            if podutil.is_deleting(pod) or podutil.is_terminated(pod):
                continue
            delay = node_health.eviction_delay(
                podutil.spec(pod).get("tolerations") or [],
                taints,
                self.config.default_toleration_seconds,
            )
            if delay is None:
                continue
            due = added + delay
            if due <= now:
                try:
                    self.delete_pod(pod)
                    self.recorder.event(
                        pod,
                        "Normal",
                        "TaintManagerEviction",
                        f"Marking for deletion Pod {podutil.namespace_of(pod)}/{podutil.name_of(pod)}",
                    )
                except (errors.NotFound, errors.Conflict):
                    pass
            else:
                soonest = due - now if soonest is None else min(soonest, due - now)
        return soonest


def init(ctx: ControllerContext) -> Controller:
    return NodeLifecycleController(ctx)
