"""PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io/v1, cluster-scoped):
a priority level of API priority and fairness.

As Kubernetes has it:
- Validation: spec.type Exempt or Limited, and `exempt` exactly the
  object named exempt; `limited` required for Limited and forbidden
  otherwise (`exempt` forbidden for Limited); shares and percentages not
  negative, lendablePercent at most 100; limitResponse.type Queue or
  Reject, `queuing` only (and then) for Queue: queues, handSize and
  queueLengthLimit positive, handSize not above queues.
- Defaults (v1): Limited nominalConcurrencyShares 30, lendablePercent 0,
  queuing queues 64, handSize 8, queueLengthLimit 50; Exempt
  nominalConcurrencyShares 0, lendablePercent 0.
- Columns: NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE
  QUEUELENGTHLIMIT AGE (`<none>` where the level has no such setting).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, mapping
from controlplane.api.display import NONE, age, name, spec
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import declare

Object = dict[str, Any]

PACKAGE = "io.k8s.api.flowcontrol.v1"
EXEMPT = "exempt"


def _int(e: Errors, path: str, value: Any, minimum: int, maximum: int | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        e.invalid(path, value, "must be an integer")
    elif value < minimum:
        e.invalid(
            path, value, "must be a non-negative integer" if minimum == 0 else "must be positive"
        )
    elif maximum is not None and value > maximum:
        e.invalid(path, value, f"must be between 0 and {maximum}, inclusive")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    plc_spec: Any = obj.get("spec")
    if not mapping(e, "spec", plc_spec, required=True):
        return
    level = str((obj.get("metadata") or {}).get("name") or "")
    kind_: Any = plc_spec.get("type")
    if kind_ not in ("Exempt", "Limited"):
        if kind_ in (None, ""):
            e.required("spec.type", "must not be empty")
        else:
            e.not_supported("spec.type", kind_, ("Exempt", "Limited"))
        return
    if (level == EXEMPT) != (kind_ == "Exempt"):
        e.invalid("spec.type", kind_, "type must be 'Exempt' if and only if name is 'exempt'")
    limited: Any = plc_spec.get("limited")
    exempt: Any = plc_spec.get("exempt")
    if kind_ == "Exempt":
        if limited is not None:
            e.forbidden("spec.limited", "must be nil if the type is not Limited")
        if mapping(e, "spec.exempt", exempt):
            _int(
                e, "spec.exempt.nominalConcurrencyShares", exempt.get("nominalConcurrencyShares"), 0
            )
            _int(e, "spec.exempt.lendablePercent", exempt.get("lendablePercent"), 0, 100)
        return
    if exempt is not None:
        e.forbidden("spec.exempt", "must be nil if the type is Limited")
    if limited is None:
        e.required("spec.limited", "must not be empty when type is Limited")
        return
    if not mapping(e, "spec.limited", limited):
        return
    _int(e, "spec.limited.nominalConcurrencyShares", limited.get("nominalConcurrencyShares"), 0)
    _int(e, "spec.limited.lendablePercent", limited.get("lendablePercent"), 0, 100)
    _int(e, "spec.limited.borrowingLimitPercent", limited.get("borrowingLimitPercent"), 0)
    _limit_response(e, limited.get("limitResponse"))


def _limit_response(e: Errors, response: Any) -> None:
    path = "spec.limited.limitResponse"
    if not mapping(e, path, response):
        return
    kind_ = response.get("type")
    queuing: Any = response.get("queuing")
    if kind_ not in ("Queue", "Reject"):
        e.not_supported(f"{path}.type", kind_, ("Queue", "Reject"))
        return
    if kind_ == "Reject":
        if queuing is not None:
            e.forbidden(
                f"{path}.queuing", "must be nil if limited.limitResponse.type is not Limited"
            )
        return
    if queuing is None:
        e.required(f"{path}.queuing", "must not be empty if limited.limitResponse.type is Queue")
        return
    if not mapping(e, f"{path}.queuing", queuing):
        return
    q = f"{path}.queuing"
    for field in ("queues", "handSize", "queueLengthLimit"):
        _int(e, f"{q}.{field}", queuing.get(field), 1)
    queues, hand = queuing.get("queues"), queuing.get("handSize")
    if isinstance(queues, int) and isinstance(hand, int) and hand > queues > 0:
        e.invalid(f"{q}.handSize", hand, f"should not be greater than queues ({queues})")


def defaults(obj: Object) -> None:
    plc_spec = child(obj, "spec")
    if plc_spec.get("type") == "Limited":
        limited = child(plc_spec, "limited")
        limited.setdefault("nominalConcurrencyShares", 30)
        limited.setdefault("lendablePercent", 0)
        response = child(limited, "limitResponse")
        if response.get("type") == "Queue":
            queuing = child(response, "queuing")
            queuing.setdefault("queues", 64)
            queuing.setdefault("handSize", 8)
            queuing.setdefault("queueLengthLimit", 50)
    elif plc_spec.get("type") == "Exempt":
        exempt = child(plc_spec, "exempt")
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    plc_spec = spec(obj)
    shares = queues = hand = limit = NONE
    limited = plc_spec.get("limited")
    if isinstance(limited, dict):
        shares = str(limited.get("nominalConcurrencyShares", 0))
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            queues = str(queuing.get("queues", 0))
            hand = str(queuing.get("handSize", 0))
            limit = str(queuing.get("queueLengthLimit", 0))
    return [name(obj), str(plc_spec.get("type", "")), shares, queues, hand, limit, age(obj, now)]


DEFINITION = KindDef(
    KindInfo("PriorityLevelConfiguration", "flowcontrol.apiserver.k8s.io/v1", namespaced=False),
    types={
        **declare(
            PACKAGE,
            """
            PriorityLevelConfiguration [flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfiguration]: PriorityLevelConfiguration
                    represents the configuration of a priority level.
                spec    PriorityLevelConfigurationSpec
                status  object
            PriorityLevelConfigurationSpec: PriorityLevelConfigurationSpec specifies the
                                            configuration of a priority level.
                type!    string  Whether this priority level is subject to limitation: Exempt or
                                 Limited.
                limited  object  How requests are handled for a Limited priority level.
                exempt   object  How requests are handled for an exempt priority level.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("TYPE", type="string", description="type"),
            Column(
                "NOMINALCONCURRENCYSHARES", type="string", description="nominalConcurrencyShares"
            ),
            Column("QUEUES", type="string", description="queues"),
            Column("HANDSIZE", type="string", description="handSize"),
            Column("QUEUELENGTHLIMIT", type="string", description="queueLengthLimit"),
            Column("AGE"),
        ),
        row,
    ),
    patch_meta=facts(status=CONDITIONS),
)
