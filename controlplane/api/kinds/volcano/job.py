"""Volcano's Job (batch.volcano.sh/v1alpha1, key Job.batch.volcano.sh): a
gang of tasks, each a pod template with replicas.

Validation and defaults are Volcano's webhooks' (controlplane/api/volcano.py:
tasks, minAvailable, policies, plugins, volumes; each task's pod spec as a
pod's, restartPolicy Always, OnFailure or Never). Admission on create: its
queue exists and is Open. Columns: NAME PHASE MIN REPLICAS RUNNING
SUCCEEDED FAILED RETRIES AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors
from controlplane.api.display import age, name, spec, status
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared import podspec
from controlplane.api.kinds.volcano.queue import check_open
from controlplane.api.quantity import parse_quantity

Object = dict[str, Any]


def _pod_spec(e: volcano.Errors, path: str, pod_spec: Any) -> None:
    assert isinstance(e, Errors)
    podspec.validate(e, path, pod_spec, ("Always", "OnFailure", "Never"))


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    volcano.validate_job(e, obj, old, _pod_spec, is_dns_label, parse_quantity)


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is None:
        job_spec = obj.get("spec") or {}
        check_open(api, "spec.queue", str(job_spec.get("queue") or volcano.DEFAULT_QUEUE))


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    replicas = sum(int(t.get("replicas") or 0) for t in spec(obj).get("tasks") or ())
    return [
        name(obj),
        str((st.get("state") or {}).get("phase") or "Pending"),
        str(spec(obj).get("minAvailable", "")),
        str(replicas),
        *(str(st.get(k) or 0) for k in ("running", "succeeded", "failed", "retryCount")),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo(
        "Job",
        "batch.volcano.sh/v1alpha1",
        "jobs",
        "job",
        ("vcjob", "vj"),
        qualified=True,
    ),
    defaults=volcano.default_job,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(
            ("NAME", "PHASE", "MIN", "REPLICAS", "RUNNING", "SUCCEEDED", "FAILED", "RETRIES", "AGE")
        ),
        row,
    ),
)
