"""HorizontalPodAutoscaler: stored as autoscaling/v2, also served as autoscaling/v1.

- Defaults: minReplicas 1; no metrics means 80% average CPU utilization.
- Validation: scaleTargetRef kind and name, 1 <= minReplicas <= maxReplicas,
  each metric's type, Resource metrics' target type and utilization.
- Columns: NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE.
- autoscaling/v1: targetCPUUtilizationPercentage <-> a cpu Utilization
  metric; the v2-only parts ride in the annotations Kubernetes uses
  (autoscaling.alpha.kubernetes.io/metrics, .../behavior, ...), so a v1
  read-modify-write keeps them.
"""

from __future__ import annotations

import json
from typing import Any

from controlplane.api.checks import Errors, each_object, enum, integer, items, mapping
from controlplane.api.display import NONE, age, name, spec, status
from controlplane.api.jsoncodec import loads_or_none
from controlplane.api.kinds.definition import Conversion, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import declare

Object = dict[str, Any]

METRICS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
BEHAVIOR_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
CURRENT_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"

_PACKAGE = "io.k8s.api.autoscaling.v2"


def defaults(obj: Object) -> None:
    hpa_spec = child(obj, "spec")
    hpa_spec.setdefault("minReplicas", 1)
    if not hpa_spec.get("metrics"):
        hpa_spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    hpa_spec: Any = obj.get("spec")
    if not mapping(e, "spec", hpa_spec, required=True):
        return
    ref: Any = hpa_spec.get("scaleTargetRef")
    if mapping(e, "spec.scaleTargetRef", ref, required=True):
        for field in ("kind", "name"):
            if not ref.get(field):
                e.add(f"spec.scaleTargetRef.{field}", "required")
    max_ok = integer(e, "spec.maxReplicas", hpa_spec.get("maxReplicas"), 1)
    if hpa_spec.get("maxReplicas") is None:
        e.add("spec.maxReplicas", "required")
    min_ok = integer(e, "spec.minReplicas", hpa_spec.get("minReplicas"), 1)
    if max_ok and min_ok and hpa_spec["minReplicas"] > hpa_spec["maxReplicas"]:
        e.add("spec.minReplicas", "must be <= spec.maxReplicas")
    metrics: Any = hpa_spec.get("metrics")
    if items(e, "spec.metrics", metrics):
        for path, m in each_object(e, "spec.metrics", metrics, required=True):
            mtype: Any = m.get("type")
            enum(e, f"{path}.type", mtype,
                 ("Resource", "Pods", "Object", "External", "ContainerResource"))  # fmt: skip
            if mtype == "Resource":
                res: Any = m.get("resource")
                if mapping(e, f"{path}.resource", res, required=True):
                    if not res.get("name"):
                        e.add(f"{path}.resource.name", "required")
                    target: Any = res.get("target")
                    if mapping(e, f"{path}.resource.target", target, required=True):
                        ttype: Any = target.get("type")
                        enum(e, f"{path}.resource.target.type", ttype,
                             ("Utilization", "AverageValue", "Value"))  # fmt: skip
                        if ttype == "Utilization":
                            integer(e, f"{path}.resource.target.averageUtilization",
                                    target.get("averageUtilization"), 1)  # fmt: skip
                            if target.get("averageUtilization") is None:
                                e.add(f"{path}.resource.target.averageUtilization", "required")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    sp, st = spec(obj), status(obj)
    ref = sp.get("scaleTargetRef") or {}
    targets = []
    current = {(m.get("resource") or {}).get("name"): m for m in st.get("currentMetrics") or []}
    for m in sp.get("metrics") or []:
        if m.get("type") == "Resource":
            res = m.get("resource") or {}
            target = res.get("target") or {}
            cur = ((current.get(res.get("name")) or {}).get("resource") or {}).get("current") or {}
            if "averageUtilization" in target:
                have = cur.get("averageUtilization")
                shown = f"{have}%" if have is not None else "<unknown>"
                targets.append(f"{res.get('name')}: {shown}/{target['averageUtilization']}%")
            else:
                have = cur.get("averageValue")
                shown = str(have) if have is not None else "<unknown>"
                targets.append(f"{res.get('name')}: {shown}/{target.get('averageValue')}")
        else:
            targets.append(f"{m.get('type')}")
    return [
        name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        ", ".join(targets) or NONE,
        str(sp.get("minReplicas", 1)),
        str(sp.get("maxReplicas", "")),
        str(st.get("currentReplicas", 0)),
        age(obj, now),
    ]


# ---- autoscaling/v1 -------------------------------------------------------------------


def _is_cpu_utilization(metric: Any) -> bool:
    resource = (metric or {}).get("resource") or {}
    target = resource.get("target") or {}
    return bool(
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and target.get("type") == "Utilization"
    )


def to_v1(obj: Object) -> Object:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v1"
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    hpa_spec = dict(obj.get("spec") or {})
    metrics = hpa_spec.pop("metrics", None) or []
    behavior = hpa_spec.pop("behavior", None)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    others = [m for m in metrics if m is not cpu]
    if cpu is not None:
        hpa_spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"].get(
            "averageUtilization"
        )
    if others:
        annotations[METRICS_ANNOTATION] = json.dumps(others, separators=(",", ":"))
    if behavior is not None:
        annotations[BEHAVIOR_ANNOTATION] = json.dumps(behavior, separators=(",", ":"))
    out["spec"] = hpa_spec
    hpa_status = dict(obj.get("status") or {})
    current = hpa_status.pop("currentMetrics", None) or []
    conditions = hpa_status.pop("conditions", None)
    for metric in current:
        resource = (metric or {}).get("resource") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu":
            utilization = (resource.get("current") or {}).get("averageUtilization")
            if utilization is not None:
                hpa_status["currentCPUUtilizationPercentage"] = utilization
    if current:
        annotations[CURRENT_ANNOTATION] = json.dumps(current, separators=(",", ":"))
    if conditions:
        annotations[CONDITIONS_ANNOTATION] = json.dumps(conditions, separators=(",", ":"))
    if "status" in obj:
        # v1's currentReplicas and desiredReplicas have no omitempty: a zero is written.
        out["status"] = {"currentReplicas": 0, "desiredReplicas": 0, **hpa_status}
    if annotations:
        meta["annotations"] = annotations
    out["metadata"] = meta
    return out


def _annotation_json(annotations: dict[str, Any], key: str) -> Any:
    return loads_or_none(annotations.pop(key, None))


def to_v2(obj: Object) -> Object:
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    hpa_spec = dict(obj.get("spec") or {})
    metrics = _annotation_json(annotations, METRICS_ANNOTATION) or []
    behavior = _annotation_json(annotations, BEHAVIOR_ANNOTATION)
    target = hpa_spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        cpu = {"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}  # fmt: skip
        metrics = [cpu, *[m for m in metrics if not _is_cpu_utilization(m)]]
    if metrics:
        hpa_spec["metrics"] = metrics
    if behavior is not None:
        hpa_spec["behavior"] = behavior
    out["spec"] = hpa_spec
    current = _annotation_json(annotations, CURRENT_ANNOTATION)
    conditions = _annotation_json(annotations, CONDITIONS_ANNOTATION)
    if "status" in obj:
        hpa_status = dict(obj.get("status") or {})
        hpa_status.pop("currentCPUUtilizationPercentage", None)
        if current:
            hpa_status["currentMetrics"] = current
        if conditions:
            hpa_status["conditions"] = conditions
        out["status"] = hpa_status
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


DEFINITION = KindDef(
    KindInfo(
        "HorizontalPodAutoscaler", "autoscaling/v2", short_names=("hpa",), categories=("all",)
    ),
    types={
        **declare(
            _PACKAGE,
            """
            HorizontalPodAutoscaler [autoscaling/v2 HorizontalPodAutoscaler]: HorizontalPodAutoscaler
                    automatically manages the replica count of a scalable resource.
                spec    HorizontalPodAutoscalerSpec
                status  object
            HorizontalPodAutoscalerSpec: HorizontalPodAutoscalerSpec describes the desired
                                         functionality of the autoscaler.
                scaleTargetRef!  object    The scaled resource (kind, name, apiVersion).
                minReplicas      integer   The lower limit for the number of replicas.
                maxReplicas!     integer   The upper limit for the number of replicas.
                metrics          []object  The metrics used to calculate the desired replica count.
                behavior         object    The scaling behavior in the up and down directions.
            """,
        ),
    },
    defaults=defaults,
    initial_status={"desiredReplicas": 0},  # the zero status's fields Kubernetes always writes
    validate=validate,
    printer=Printer(
        columns(("NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE")), row
    ),
    patch_meta=facts(status=CONDITIONS),
    conversions={"autoscaling/v1": Conversion(to_v2, to_v1)},
)
