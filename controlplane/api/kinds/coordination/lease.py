"""Lease (coordination.k8s.io/v1): leader election and node heartbeats.

Validation: leaseDurationSeconds >= 1, leaseTransitions >= 0. Columns:
NAME HOLDER AGE.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, integer, mapping
from controlplane.api.display import NONE, age, name, spec
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare

Object = dict[str, Any]

_PACKAGE = "io.k8s.api.coordination.v1"


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    lease_spec: Any = obj.get("spec")
    if mapping(e, "spec", lease_spec):
        integer(e, "spec.leaseDurationSeconds", lease_spec.get("leaseDurationSeconds"), 1)
        integer(e, "spec.leaseTransitions", lease_spec.get("leaseTransitions"), 0)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(spec(obj).get("holderIdentity") or NONE), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("Lease", "coordination.k8s.io/v1", has_status=False),
    types={
        **declare(
            _PACKAGE,
            """
            Lease [coordination.k8s.io/v1 Lease]: Lease defines a lease concept.
                spec  LeaseSpec
            LeaseSpec: LeaseSpec is a specification of a Lease.
                holderIdentity        string   The identity of the holder of the current lease.
                leaseDurationSeconds  integer  Seconds candidates wait to force acquire the lease.
                acquireTime           string   When the current lease was acquired (microseconds).
                renewTime             string   When the current holder last updated the lease
                                               (microseconds).
                leaseTransitions      integer  The number of transitions of a lease between holders.
                strategy              string   The strategy for picking the leader.
                preferredHolder       string   The holder the lease should move to.
            """,
        ),
    },
    validate=validate,
    printer=Printer(columns(("NAME", "HOLDER", "AGE")), row),
    patch_meta=facts(),
)
