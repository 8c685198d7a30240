"""LimitRange (v1): per-container, per-pod and per-claim bounds in a namespace.

As Kubernetes has it: namespaced, short name `limits`, no status. Defaults
(SetDefaults_LimitRangeItem): for type Container, a default limit missing
for a resource with a max takes the max, and a default request missing
takes the default limit, else the min. Validation (ValidateLimitRange):
types Pod, Container or PersistentVolumeClaim; no default or defaultRequest
for Pod; a PersistentVolumeClaim item bounds storage only; min <=
defaultRequest <= default <= max, maxLimitRequestRatio >= 1 and no more
than max/min, with Kubernetes' messages. The LimitRanger admission
(controlplane/apiserver/limitranger.py) applies them to pods and claims.
Columns, as Kubernetes' printer: NAME CREATED AT.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from controlplane.api.checks import Errors, each_object, items, mapping
from controlplane.api.display import meta, name
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.quantity import format_quantity, is_binary, parse_quantity
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]

TYPES = ("Pod", "Container", "PersistentVolumeClaim")
_FIELDS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def defaults(obj: Object) -> None:
    for item in (obj.get("spec") or {}).get("limits") or []:
        if not isinstance(item, dict) or item.get("type") != "Container":
            continue
        if not item.get("default"):
            item["default"] = {}
        if not item.get("defaultRequest"):
            item["defaultRequest"] = {}
        default, request = item["default"], item["defaultRequest"]
        if not isinstance(default, dict) or not isinstance(request, dict):
            continue
        for source, target in (("max", default), ("default", request), ("min", request)):
            for resource, value in (item.get(source) or {}).items():
                target.setdefault(resource, value)
        for key in ("default", "defaultRequest"):
            if not item.get(key):
                item.pop(key)


def canonical(value: Any) -> str:
    """A quantity as Kubernetes prints it (resource.Quantity.String())."""
    return format_quantity(parse_quantity(value), is_binary(value))


def _parsed(e: Errors, path: str, values: Any) -> dict[str, Fraction]:
    found: dict[str, Fraction] = {}
    if not mapping(e, path, values):
        return found
    for resource, value in values.items():
        try:
            found[str(resource)] = parse_quantity(value)
        except ValueError:
            e.add(f"{path}[{resource}]", f'Invalid value: "{value}": quantities must match the '
                  "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")  # fmt: skip
            continue
        if found[str(resource)] < 0:
            e.add(f"{path}[{resource}]", f'Invalid value: "{value}": must be greater than or '
                  "equal to 0")  # fmt: skip
    return found


def _item(e: Errors, path: str, item: Object) -> None:
    kind_name = item.get("type")
    if kind_name not in TYPES:
        e.add(f"{path}.type", f'Unsupported value: "{kind_name}": supported values: '
              + ", ".join(f'"{t}"' for t in TYPES))  # fmt: skip
        return
    raw = {f: item.get(f) or {} for f in _FIELDS}
    q = {f: _parsed(e, f"{path}.{f}", raw[f]) for f in _FIELDS}
    if kind_name == "Pod":
        for f in ("default", "defaultRequest"):
            if q[f]:
                e.add(f"{path}.{f}", "Forbidden: may not be specified when `type` is 'Pod'")
    if kind_name == "PersistentVolumeClaim":
        for f in ("max", "min"):
            for resource in q[f]:
                if resource != "storage":
                    e.add(f"{path}.{f}[{resource}]", f'Unsupported value: "{resource}": '
                          'supported values: "storage"')  # fmt: skip
        if (
            q["min"].get("storage") is not None
            and q["max"].get("storage") is not None
            and (q["min"]["storage"] > q["max"]["storage"])
        ):
            e.add(f"{path}.min[storage]", f'Invalid value: "{canonical(raw["min"]["storage"])}": '
                  f'min value {canonical(raw["min"]["storage"])} is greater than max value '
                  f'{canonical(raw["max"]["storage"])}')  # fmt: skip
        return

    def text(f: str, r: str) -> str:
        return canonical(raw[f][r])

    resources = set().union(*(q[f] for f in _FIELDS))
    for r in sorted(resources):
        lo, hi, dflt, dreq = (q[f].get(r) for f in ("min", "max", "default", "defaultRequest"))
        ratio = q["maxLimitRequestRatio"].get(r)
        if lo is not None and hi is not None and lo > hi:
            e.add(f"{path}.min[{r}]", f'Invalid value: "{text("min", r)}": min value '
                  f'{text("min", r)} is greater than max value {text("max", r)}')  # fmt: skip
        if dreq is not None:
            where = f"{path}.defaultRequest[{r}]"
            if lo is not None and lo > dreq:
                e.add(where, f'Invalid value: "{text("defaultRequest", r)}": min value '
                      f'{text("min", r)} is greater than default request value '
                      f'{text("defaultRequest", r)}')  # fmt: skip
            if hi is not None and dreq > hi:
                e.add(where, f'Invalid value: "{text("defaultRequest", r)}": default request '
                      f'value {text("defaultRequest", r)} is greater than max value '
                      f'{text("max", r)}')  # fmt: skip
            if dflt is not None and dreq > dflt:
                e.add(where, f'Invalid value: "{text("defaultRequest", r)}": default request '
                      f'value {text("defaultRequest", r)} is greater than default limit value '
                      f'{text("default", r)}')  # fmt: skip
        if dflt is not None:
            where = f"{path}.default[{r}]"
            if lo is not None and lo > dflt:
                e.add(where, f'Invalid value: "{text("default", r)}": min value '
                      f'{text("min", r)} is greater than default value {text("default", r)}')  # fmt: skip
            if hi is not None and dflt > hi:
                e.add(where, f'Invalid value: "{text("default", r)}": default value '
                      f'{text("default", r)} is greater than max value {text("max", r)}')  # fmt: skip
        if ratio is not None:
            where = f"{path}.maxLimitRequestRatio[{r}]"
            if ratio < 1:
                e.add(where, f'Invalid value: "{text("maxLimitRequestRatio", r)}": ratio '
                      f'{text("maxLimitRequestRatio", r)} is less than 1')  # fmt: skip
            if lo is not None and hi is not None and lo > 0 and ratio > hi / lo:
                e.add(where, f'Invalid value: "{text("maxLimitRequestRatio", r)}": ratio '
                      f'{text("maxLimitRequestRatio", r)} is greater than max/min = '
                      f"{float(hi / lo):f}")  # fmt: skip


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    lr_spec: Any = obj.get("spec")
    if not mapping(e, "spec", lr_spec, required=True):
        return
    limits = lr_spec.get("limits")
    if not items(e, "spec.limits", limits, required=True):
        return
    for where, item in each_object(e, "spec.limits", limits, required=True):
        _item(e, where, item)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(meta(obj).get("creationTimestamp") or "")]


DEFINITION = KindDef(
    KindInfo("LimitRange", "v1", short_names=("limits",), has_status=False),
    types={
        **declare(
            CORE,
            """
            LimitRange [v1 LimitRange]: LimitRange sets resource usage limits for each kind of
                                        resource in a Namespace.
                spec  LimitRangeSpec
            LimitRangeSpec: LimitRangeSpec defines a min/max usage limit for resources that match on
                            kind.
                limits!  []LimitRangeItem  Limits is the list of LimitRangeItem objects that are
                                           enforced.
            LimitRangeItem: LimitRangeItem defines a min/max usage limit for any resource that
                            matches on kind.
                type!                 string         Type of resource that this limit applies to.
                max                   map[quantity]  Max usage constraints on this kind by resource
                                                     name.
                min                   map[quantity]  Min usage constraints on this kind by resource
                                                     name.
                default               map[quantity]  Default resource requirement limit value by
                                                     resource name.
                defaultRequest        map[quantity]  DefaultRequest is the default resource
                                                     requirement request value by resource name.
                maxLimitRequestRatio  map[quantity]  The named resource must have a request and
                                                     limit that are both non-zero where limit
                                                     divided by request is less than or equal to the
                                                     enumerated value.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (Column("NAME"), Column("CREATED AT", type="date", description="Date of creation.")), row
    ),
    patch_meta=facts(),
)
