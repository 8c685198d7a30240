"""StatefulSet (apps/v1): pods with stable identities and their own claims.

- Validation: the workload's rules (shared/workload.py), pods restart
  Always, the template's volumeMounts may name the volumeClaimTemplates (as
  on Kubernetes); claim templates with unique DNS-label names and a claim's
  spec; the retention policy, podManagementPolicy, updateStrategy.
- Defaults: replicas 1, OrderedReady, revisionHistoryLimit 10, RollingUpdate
  partition 0, the pod template's, the retention policy Retain/Retain and
  the claim templates' volumeMode Filesystem.
- Columns: NAME READY AGE; wide adds CONTAINERS IMAGES.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, each_object, enum, items, mapping
from controlplane.api.display import age, name, spec, status
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import claims, workload
from controlplane.api.kinds.shared.fill import child, listed
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, TEMPLATE, facts
from controlplane.api.kinds.shared.podspec import template_defaults
from controlplane.api.kinds.shared.podspec_schema import TYPES as PODSPEC_TYPES
from controlplane.api.schema import APPS, declare

Object = dict[str, Any]


def _with_claim_volumes(obj: Object) -> Object:
    """A StatefulSet whose template also has a volume per volumeClaimTemplate, so
    the template's volumeMounts may name the templates (as on Kubernetes)."""
    sts_spec: Any = obj.get("spec")
    if not isinstance(sts_spec, dict) or not isinstance(sts_spec.get("volumeClaimTemplates"), list):
        return obj
    template: Any = sts_spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return obj
    names = [
        ((t.get("metadata") or {}).get("name") if isinstance(t, dict) else None)
        for t in sts_spec["volumeClaimTemplates"]
    ]
    pod_spec = dict(template["spec"])
    existing = {v.get("name") for v in pod_spec.get("volumes") or [] if isinstance(v, dict)}
    extra = [
        {"name": n, "persistentVolumeClaim": {"claimName": n}}
        for n in names
        if isinstance(n, str) and n and n not in existing
    ]
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), *extra]
    return {**obj, "spec": {**sts_spec, "template": {**template, "spec": pod_spec}}}


def _claim_templates(e: Errors, sts_spec: Object) -> None:
    templates: Any = sts_spec.get("volumeClaimTemplates")
    if items(e, "spec.volumeClaimTemplates", templates):
        seen: set[str] = set()
        for path, t in each_object(e, "spec.volumeClaimTemplates", templates, required=True):
            claim: Any = (t.get("metadata") or {}).get("name")
            if not isinstance(claim, str) or not is_dns_label(claim):
                e.add(f"{path}.metadata.name", f"{claim!r} must be a DNS-1123 label")
            elif claim in seen:
                e.add(f"{path}.metadata.name", f"duplicate claim template {claim!r}")
            else:
                seen.add(claim)
            claims.validate_spec(e, f"{path}.spec", t.get("spec"))
    policy: Any = sts_spec.get("persistentVolumeClaimRetentionPolicy")
    if mapping(e, "spec.persistentVolumeClaimRetentionPolicy", policy):
        for field in ("whenDeleted", "whenScaled"):
            enum(e, f"spec.persistentVolumeClaimRetentionPolicy.{field}", policy.get(field),
                 ("Retain", "Delete"))  # fmt: skip


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    workload.validate(e, _with_claim_volumes(obj), old, ("Always",))
    sts_spec: Any = obj.get("spec")
    if isinstance(sts_spec, dict):
        _claim_templates(e, sts_spec)
        enum(e, "spec.podManagementPolicy", sts_spec.get("podManagementPolicy"),
             ("OrderedReady", "Parallel"))  # fmt: skip
        strategy: Any = sts_spec.get("updateStrategy")
        if mapping(e, "spec.updateStrategy", strategy):
            enum(e, "spec.updateStrategy.type", strategy.get("type"), ("RollingUpdate", "OnDelete"))


def defaults(obj: Object) -> None:
    sts_spec = child(obj, "spec")
    sts_spec.setdefault("replicas", 1)
    sts_spec.setdefault("podManagementPolicy", "OrderedReady")
    sts_spec.setdefault("revisionHistoryLimit", 10)
    strategy = child(sts_spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        child(strategy, "rollingUpdate").setdefault("partition", 0)
    template_defaults(obj, "spec")
    policy = child(sts_spec, "persistentVolumeClaimRetentionPolicy")
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    for template in listed(sts_spec.get("volumeClaimTemplates")):
        if isinstance(template, dict):
            child(template, "spec").setdefault("volumeMode", "Filesystem")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    cells = [
        name(obj),
        f"{st.get('readyReplicas', 0)}/{spec(obj).get('replicas', 1)}",
        age(obj, now),
    ]
    if wide:
        cells += workload.images(obj)
    return cells


DEFINITION = KindDef(
    KindInfo("StatefulSet", "apps/v1", short_names=("sts",), has_scale=True, categories=("all",)),
    types={
        **PODSPEC_TYPES,
        **declare(
            APPS,
            """
            StatefulSet [apps/v1 StatefulSet]: StatefulSet represents a set of pods with consistent
                                               identities.
                spec    StatefulSetSpec
                status  object
            StatefulSetSpec: A StatefulSetSpec is the specification of a StatefulSet.
                replicas                              integer          The desired number of
                                                                       replicas. Defaults to 1.
                selector!                             LabelSelector    A label query over pods that
                                                                       should match the replica
                                                                       count.
                template!                             PodTemplateSpec  The object that describes the
                                                                       pod created when too few
                                                                       exist.
                volumeClaimTemplates                  []object         Claims that pods are allowed
                                                                       to reference.
                serviceName                           string           The name of the service that
                                                                       governs this StatefulSet.
                podManagementPolicy                   string           OrderedReady or Parallel.
                updateStrategy                        object           The strategy used to update
                                                                       pods.
                revisionHistoryLimit                  integer          The number of revisions kept
                                                                       in history.
                minReadySeconds                       integer          Seconds a new pod must be
                                                                       ready to be available.
                persistentVolumeClaimRetentionPolicy  object           The lifecycle of the claims
                                                                       created.
                ordinals                              object           The ordinal numbers of the
                                                                       replicas.
            """,
        ),
    },
    defaults=defaults,
    initial_status={
        "replicas": 0,
        "availableReplicas": 0,
    },  # the zero status's fields Kubernetes always writes
    validate=validate,
    printer=Printer(columns(("NAME", "READY", "AGE"), ("CONTAINERS", "IMAGES")), row),
    patch_meta=facts(TEMPLATE, CONDITIONS),
)
