"""The columns kubectl shows for each kind, computed from an object: one home
for skiffctl's tables (controlplane/cli/printers.py) and the API server's
meta.k8s.io Table responses (controlplane/apiserver/tables.py).

Each kind's printer is its definition's (KindDef.printer in
controlplane/api/kinds/<group>/<kind>.py: its columns, as Kubernetes'
printers define them, and a row function: pods NAME READY STATUS RESTARTS
AGE, wide adds IP NODE NOMINATED NODE READINESS GATES; ...); kinds without
one get NAME AGE. Ages follow kubectl's `HumanDuration`. Pure functions of
the object and the current time.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import kinds
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import Printer, columns

Object = dict[str, Any]


def _default_row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), age(obj, now)]


DEFAULT = Printer(columns(("NAME", "AGE")), _default_row)


def printer_of(kind: str) -> Printer:
    """The kind's table columns and row function (NAME, AGE when it has none)."""
    definition = kinds.find(kind)
    if definition is None or definition.printer is None:
        return DEFAULT
    return definition.printer


def headers_for(kind: str, wide: bool) -> list[str]:
    return printer_of(kind).headers(wide)


def row_for(kind: str, obj: Object, now: float, wide: bool) -> list[str]:
    return printer_of(kind).row(obj, now, wide)
