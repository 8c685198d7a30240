"""The DaemonSet controller: one pod on every eligible node.

A node is eligible when the DaemonSet's nodeSelector and required node
affinity match it and every NoSchedule/NoExecute taint on it is tolerated
(daemon pods tolerate not-ready, unreachable, unschedulable and the
pressure taints, as Kubernetes adds to them). Each new pod is pinned to its
node with required node affinity on `metadata.name` (the scheduler binds
it), and labelled with `controller-revision-hash`: the hash of the
current ControllerRevision, one per distinct template (history.py: the
revision reused and moved to the top number when the template returns to
it, `revisionHistoryLimit` old ones kept that no pod uses; what `kubectl
rollout history|undo ds` reads). Extra pods on a node,
pods on nodes that are no longer eligible and failed pods are deleted.
RollingUpdate replaces out-of-date pods while at most `maxUnavailable`
nodes lack an available daemon pod. Status reports the Kubernetes counts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controlplane.api.taints import tolerates
from controlplane.client.interface import Object
from controlplane.client.selectors import Requirement
from controlplane.controllers import history, node_health, podutil, rollout
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.replicaset import PodOwnerController, pod_from_template

REVISION_LABEL = history.HASH_LABEL

DAEMON_TOLERATIONS: list[Object] = [
    {"key": node_health.NOT_READY, "operator": "Exists", "effect": "NoExecute"},
    {"key": node_health.UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": node_health.UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"},
]


def _term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    labels = podutil.labels_of(node)
    for expr in term.get("matchExpressions") or []:
        op = str(expr.get("operator"))
        if op in ("Gt", "Lt"):
            try:
                value = int(labels.get(str(expr.get("key")), ""))
                bound = int((expr.get("values") or ["0"])[0])
            except ValueError:
                return False
            if (op == "Gt" and not value > bound) or (op == "Lt" and not value < bound):
                return False
            continue
        req = Requirement(
            str(expr.get("key")), ops.get(op, "in"), tuple(str(v) for v in expr.get("values") or ())
        )
        if not req.matches(labels):
            return False
    for field in term.get("matchFields") or []:
        if field.get("key") != "metadata.name":
            return False
        inside = podutil.name_of(node) in (field.get("values") or [])
        if (field.get("operator") == "In") != inside:
            return False
    return True


def node_eligible(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Would a daemon pod with this spec be allowed on this node? (pure)"""
    selector = pod_spec.get("nodeSelector") or {}
    labels = podutil.labels_of(node)
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(_term_matches(t, node) for t in terms):
        return False
    tolerations = [*list(pod_spec.get("tolerations") or []), *DAEMON_TOLERATIONS]
    for taint in podutil.spec(node).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return False
    return True


class DaemonSetController(PodOwnerController):
    name = "daemonset"
    owner_kind = "DaemonSet"

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.nodes = self.watch("Node")
        self.nodes.add_event_handler(
            on_add=self._node_changed,
            on_update=lambda o, n: (
                self._node_changed(n)
                if podutil.labels_of(o) != podutil.labels_of(n)
                or podutil.spec(o) != podutil.spec(n)
                else None
            ),
            on_delete=self._node_changed,
        )
        self.history = history.watched(self, self.owner_kind)

    def _node_changed(self, node: Object) -> None:
        for ds in self.owners.store.list():
            self.enqueue(ds)

    def _revision(self, ds: Object) -> str:
        collision = podutil.status(ds).get("collisionCount")
        return rollout.template_hash(podutil.spec(ds).get("template") or {}, collision)

    def _construct_history(self, ds: Object) -> tuple[Object, list[Object]]:
        """The current revision (made or renumbered as needed) and the old
        ones (Kubernetes' constructHistory)."""
        data = history.patch_of(ds)
        revisions = self.history.owned(ds)
        current = [r for r in revisions if history.data_equal(r.get("data") or {}, data)]
        old = [r for r in revisions if r not in current]
        top = max((history.number(r) for r in old), default=0)
        if current:
            cur = current[-1]
            self.history.delete(current[:-1])  # duplicates of one template
            if history.number(cur) <= top:
                cur = self.history.renumber(cur, top + 1)
            return cur, old
        hash_ = self._revision(ds)
        name = history.revision_name(podutil.name_of(ds), hash_)
        revision = history.new_revision(ds, data, top + 1, name, hash_, annotations=True)
        try:
            return self.history.create(revision), old
        except history.Collision:
            st = dict(podutil.status(ds))
            st["collisionCount"] = int(st.get("collisionCount") or 0) + 1
            self.write_status("DaemonSet", ds, st)
            raise

    def _cleanup_history(
        self, ds: Object, cur: Object, old: list[Object], pods: list[Object]
    ) -> None:
        """Delete old revisions beyond revisionHistoryLimit that no pod uses."""
        limit = podutil.spec(ds).get("revisionHistoryLimit")
        limit = limit if isinstance(limit, int) else 10
        live_hashes = {podutil.labels_of(p).get(REVISION_LABEL) for p in pods}
        live = {podutil.name_of(cur)} | {
            podutil.name_of(r)
            for r in old
            if podutil.labels_of(r).get(REVISION_LABEL) in live_hashes
        }
        self.history.delete(history.to_prune(old, live, limit))

    def _new_pod(self, ds: Object, node: str, revision: str) -> Object:
        pod = pod_from_template(ds, f"{podutil.name_of(ds)}-")
        pod["metadata"].setdefault("labels", {})[REVISION_LABEL] = revision
        spec = pod["spec"]
        affinity = spec.setdefault("affinity", {})
        affinity["nodeAffinity"] = {
            **(affinity.get("nodeAffinity") or {}),
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        }
        tolerations = list(spec.get("tolerations") or [])
        for t in DAEMON_TOLERATIONS:
            if t not in tolerations:
                tolerations.append(dict(t))
        spec["tolerations"] = tolerations
        return pod

    def _pod_node(self, pod: Mapping[str, Any]) -> str:
        node = podutil.spec(pod).get("nodeName")
        if node:
            return str(node)
        terms = (
            ((podutil.spec(pod).get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms") or []
        for t in terms:
            for f in t.get("matchFields") or []:
                if f.get("key") == "metadata.name" and f.get("values"):
                    return str(f["values"][0])
        return ""

    def sync(self, key: str) -> float | None:
        ds = self.owners.store.get_by_key(key)
        if ds is None:
            self.expectations.delete(key)
            return None
        ds = copy.deepcopy(ds)
        template_spec = (podutil.spec(ds).get("template") or {}).get("spec") or {}
        revision = self._revision(ds)
        cur: Object | None = None
        old: list[Object] = []
        if not podutil.is_deleting(ds):
            cur, old = self._construct_history(ds)
            revision = podutil.labels_of(cur).get(REVISION_LABEL) or revision
        pods = [p for p in self.claim_pods(ds) if not podutil.is_deleting(p)]
        by_node: dict[str, list[Object]] = {}
        for p in pods:
            by_node.setdefault(self._pod_node(p), []).append(p)
        nodes = {podutil.name_of(n): n for n in self.nodes.store.list()}
        eligible = {name for name, n in nodes.items() if node_eligible(template_spec, n)}
        now = self.clock.now()
        mrs = int(podutil.spec(ds).get("minReadySeconds") or 0)
        if self.expectations.satisfied(key) and not podutil.is_deleting(ds):
            create: list[str] = []
            delete: list[Object] = []
            for name in sorted(eligible):
                here = by_node.get(name, [])
                failed = [p for p in here if podutil.phase(p) == "Failed"]
                delete.extend(failed)
                alive = [p for p in here if podutil.phase(p) != "Failed"]
                if not alive:
                    if not failed:
                        create.append(name)
                elif len(alive) > 1:
                    alive.sort(key=lambda p: (podutil.created_at(p), podutil.name_of(p)))
                    delete.extend(alive[1:])
            for name, here in by_node.items():
                if name not in eligible:
                    delete.extend(here)
            if not create and not delete:
                delete = self._rolling(ds, by_node, eligible, revision, now, mrs)
            if delete:
                self.delete_pods(key, ds, delete)
            elif create:
                self.create_pods(
                    key, ds, len(create), lambda i: self._new_pod(ds, create[i], revision)
                )
            if cur is not None:
                self._cleanup_history(ds, cur, old, pods)
        self._status(ds, by_node, eligible, revision, now, mrs)
        return None

    def _rolling(
        self,
        ds: Object,
        by_node: dict[str, list[Object]],
        eligible: set[str],
        revision: str,
        now: float,
        mrs: int,
    ) -> list[Object]:
        strategy = podutil.spec(ds).get("updateStrategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return []
        max_unavailable = rollout.scaled_value(
            (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1), len(eligible), True
        )
        max_unavailable = max(1, max_unavailable)
        unavailable = 0
        old: list[Object] = []
        for name in sorted(eligible):
            here = by_node.get(name, [])
            if not here or not any(podutil.is_available(p, mrs, now) for p in here):
                unavailable += 1
            for p in here:
                if podutil.labels_of(p).get(REVISION_LABEL) != revision:
                    old.append(p)
        budget = max_unavailable - unavailable
        # Replace unavailable old pods first: they cost no availability.
        old.sort(key=lambda p: podutil.is_available(p, mrs, now))
        out = []
        for p in old:
            if not podutil.is_available(p, mrs, now):
                out.append(p)
            elif budget > 0:
                out.append(p)
                budget -= 1
        return out

    def _status(
        self,
        ds: Object,
        by_node: dict[str, list[Object]],
        eligible: set[str],
        revision: str,
        now: float,
        mrs: int,
    ) -> None:
        scheduled = [n for n in eligible if by_node.get(n)]
        ready = [n for n in scheduled if any(podutil.is_ready(p) for p in by_node[n])]
        available = [
            n for n in scheduled if any(podutil.is_available(p, mrs, now) for p in by_node[n])
        ]
        updated = [
            n
            for n in scheduled
            if any(podutil.labels_of(p).get(REVISION_LABEL) == revision for p in by_node[n])
        ]
        st = dict(podutil.status(ds))
        st.update(
            {
                "observedGeneration": podutil.meta(ds).get("generation", 0),
                "desiredNumberScheduled": len(eligible),
                "currentNumberScheduled": len(scheduled),
                "numberMisscheduled": sum(
                    1 for n, ps in by_node.items() if n not in eligible and ps
                ),
                "numberReady": len(ready),
                "numberAvailable": len(available),
                "numberUnavailable": len(eligible) - len(available),
                "updatedNumberScheduled": len(updated),
            }
        )
        self.write_status("DaemonSet", ds, st)


def init(ctx: ControllerContext) -> Controller:
    return DaemonSetController(ctx)
