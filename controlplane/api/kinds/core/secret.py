"""Secret (v1): secret data of a type.

Validation: data keys as a ConfigMap's, data values base64; type is
immutable. Defaults: type Opaque. Admission: stringData is folded into
base64 data. Columns: NAME TYPE DATA AGE.
"""

from __future__ import annotations

import base64
from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.display import age, name
from controlplane.api.kinds.core.configmap import (
    MAX_DATA_SIZE,
    canonical_base64,
    check_data,
    data_size,
)
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    check_data(e, obj, ("data", "stringData"), "data")
    if data_size(obj, ("data", "stringData"), ("data",)) > MAX_DATA_SIZE:
        e.too_long("data", MAX_DATA_SIZE)
    if old is not None and old.get("type") != obj.get("type"):
        e.add("type", "field is immutable")


def defaults(obj: Object) -> None:
    obj.setdefault("type", "Opaque")
    canonical_base64(obj.get("data"))


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict):
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def row(obj: Object, now: float, wide: bool) -> list[str]:
    n = len(obj.get("data") or {}) + len(obj.get("stringData") or {})
    return [name(obj), str(obj.get("type") or "Opaque"), str(n), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("Secret", "v1", has_status=False),
    types={
        **declare(
            CORE,
            """
            Secret [v1 Secret]: Secret holds secret data of a certain type.
                data        map      Secret data, base64-encoded values.
                stringData  map      Write-only convenience field for non-binary secret data.
                type        string   Used to facilitate programmatic handling of secret data.
                immutable   boolean  If true, the data cannot be updated.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(columns(("NAME", "TYPE", "DATA", "AGE")), row),
    patch_meta=facts(),
)
