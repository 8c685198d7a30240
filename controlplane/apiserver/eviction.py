"""The pods/eviction subresource: a pod deleted only when its disruption
budget allows it, as kube-apiserver's EvictionREST.

A pod that has finished, is pending or is already being deleted goes at
once. Otherwise the PodDisruptionBudget of its namespace whose selector
matches it (more than one is a 500, as Kubernetes) decides:

- its status must have seen its spec (observedGeneration): else 429, `Cannot
  evict pod as it would violate the pod's disruption budget.` with the cause
  `The disruption budget B is still being processed by the server.`;
- a pod that is not Ready goes without spending the budget when the budget
  is healthy (IfHealthyBudget, the default) or always (AlwaysAllow);
- disruptionsAllowed 0 is a 429 with that message and the cause `The
  disruption budget B needs D healthy pods and has C currently`;
- otherwise disruptionsAllowed is decremented and the pod recorded in
  status.disruptedPods (compare-and-swap on the budget, so two evictions
  never spend one disruption), until the disruption controller sees the
  pod go.

Then the pod gets the DisruptionTarget condition (reason
EvictionByEvictionAPI) and is deleted with the Eviction's DeleteOptions.
A dry run checks everything and changes nothing.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.selectors import SelectorError, from_structured
from controlplane.apiserver.auth import SYSTEM, Identity
from controlplane.apiserver.codec import decode, meta_of
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    TooManyRequests,
)
from controlplane.client.interface import DeleteOptions

Object = dict[str, Any]

MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
CAUSE_TYPE = "DisruptionBudget"  # policyv1.DisruptionBudgetCause
MAX_DISRUPTED_PODS = 2000
_ATTEMPTS = 5


def refused(cause: str, retry_after: int) -> TooManyRequests:
    err = TooManyRequests(MESSAGE, retry_after=retry_after)
    err.status_causes = [{"reason": CAUSE_TYPE, "message": cause}]  # type: ignore[attr-defined]
    return err


def _ready(pod: Object) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _budgets(reg: Registry, pod: Object, namespace: str) -> list[tuple[Object, int]]:
    labels = meta_of(pod).get("labels") or {}
    found = []
    for data, rev in reg.list("PodDisruptionBudget", namespace).items:
        pdb = decode(data, rev)
        selector = (pdb.get("spec") or {}).get("selector")
        if selector is None:
            continue  # a null selector selects nothing
        try:
            if from_structured(selector).matches(labels):
                found.append((pdb, rev))
        except SelectorError:
            continue
    return found


def _spend(reg: Registry, pdb: Object, pod_name: str, dry_run: bool) -> None:
    """checkAndDecrement: one disruption of `pdb` for `pod_name`, or 429."""
    meta = pdb.get("metadata") or {}
    status = dict(pdb.get("status") or {})
    name = str(meta.get("name"))
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 1):
        raise refused(f"The disruption budget {name} is still being processed by the server.", 10)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise Forbidden(f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions '
                        "allowed is negative")  # fmt: skip
    disrupted = dict(status.get("disruptedPods") or {})
    if len(disrupted) > MAX_DISRUPTED_PODS:
        raise Forbidden(f'poddisruptionbudgets.policy "{name}" is forbidden: DisruptedPods map '
                        "too big - too many evictions not confirmed by PDB controller")  # fmt: skip
    if allowed == 0:
        raise refused(
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
            f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently",
            0,
        )
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        status["conditions"] = _not_allowed(list(status.get("conditions") or []), reg)
    if dry_run:
        return
    disrupted[pod_name] = reg.timestamp()
    status["disruptedPods"] = disrupted
    body = {**pdb, "status": status}
    reg.update("PodDisruptionBudget", body, "status")  # at pdb's resourceVersion: Conflict


def _not_allowed(conditions: list[Object], reg: Registry) -> list[Object]:
    kept = [c for c in conditions if c.get("type") != "DisruptionAllowed"]
    old = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), None)
    if old is not None and old.get("status") == "False":
        return conditions
    kept.append({"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods",
                 "message": "", "lastTransitionTime": reg.timestamp()})  # fmt: skip
    return kept


def _mark_target(reg: Registry, namespace: str, name: str) -> None:
    """The DisruptionTarget condition, before the pod is deleted."""

    def build(old: Object) -> Object:
        status = dict(old.get("status") or {})
        conditions = [c for c in status.get("conditions") or []
                      if c.get("type") != "DisruptionTarget"]  # fmt: skip
        conditions.append({
            "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
            "lastTransitionTime": reg.timestamp(),
        })  # fmt: skip
        status["conditions"] = conditions
        return {**old, "status": status}

    reg.patch_with("Pod", name, build, namespace, "status", SYSTEM)


def evict(
    reg: Registry,
    namespace: str,
    name: str,
    options: DeleteOptions,
    identity: Identity = SYSTEM,
    dry_run: bool = False,
) -> None:
    """Evict pod namespace/name (see the module docstring); raises API errors."""
    last: ApiError | None = None
    for _ in range(_ATTEMPTS):
        pod = reg.get_object("Pod", name, namespace)
        phase = (pod.get("status") or {}).get("phase")
        gone_anyway = phase in ("Succeeded", "Failed", "Pending") or bool(
            meta_of(pod).get("deletionTimestamp")
        )
        if not gone_anyway:
            budgets = _budgets(reg, pod, namespace)
            if len(budgets) > 1:
                raise InternalError("This pod has more than one PodDisruptionBudget, which the "
                                    "eviction subresource does not support.")  # fmt: skip
            if budgets:
                pdb = budgets[0][0]
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
                st = pdb.get("status") or {}
                healthy_budget = (
                    int(st.get("currentHealthy") or 0) >= int(st.get("desiredHealthy") or 0)
                    and int(st.get("desiredHealthy") or 0) > 0
                )
                skip = not _ready(pod) and (policy == "AlwaysAllow" or healthy_budget)
                if not skip:
                    try:
                        _spend(reg, pdb, name, dry_run)
                    except Conflict as err:
                        last = err
                        continue  # the budget changed: read it again
        if dry_run:
            reg.delete("Pod", name, namespace, options, identity, True)
            return
        if not gone_anyway:
            try:
                _mark_target(reg, namespace, name)
            except NotFound:
                pass
        reg.delete("Pod", name, namespace, options, identity, False)
        return
    raise last or Conflict("the disruption budget kept changing; try again", retry_after=1)
