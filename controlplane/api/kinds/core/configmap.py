"""ConfigMap (v1): configuration data for pods.

Validation: keys of data and binaryData are alphanumerics, '-', '_' or '.'
(<= 253) and unique across both, values strings, binaryData base64; data is
immutable once `immutable` is set. Columns: NAME DATA AGE.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from controlplane.api.checks import Errors, mapping
from controlplane.api.display import age, name
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]

_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


# The most a ConfigMap's or a Secret's data may hold (corev1.MaxSecretSize).
MAX_DATA_SIZE = 1024 * 1024
_LINE_BREAKS = str.maketrans("", "", "\r\n")


def canonical_base64(data: Any) -> None:
    """Base64 values written as Kubernetes stores them: Go's decoder skips
    line breaks (`base64 -w 76` output), and the bytes are written back
    without them. Values that do not decode are left for validation."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if isinstance(value, str) and ("\n" in value or "\r" in value):
            flat = value.translate(_LINE_BREAKS)
            try:
                data[key] = base64.b64encode(base64.b64decode(flat, validate=True)).decode()
            except (binascii.Error, ValueError):
                pass


def data_size(obj: Object, fields: tuple[str, ...], base64_fields: tuple[str, ...]) -> int:
    """The bytes the data holds (base64 values by their decoded size)."""
    total = 0
    for field in fields:
        data = obj.get(field)
        if not isinstance(data, dict):
            continue
        for key, value in data.items():
            if not isinstance(value, str):
                continue
            size = len(value.encode())
            if field in base64_fields:
                size = len(value) * 3 // 4 - value.count("=", -2)
            total += len(str(key)) + size
    return total


def check_data(e: Errors, obj: Object, fields: tuple[str, ...], base64_field: str = "") -> None:
    """The data maps of a ConfigMap or a Secret: keys, values, base64."""
    keys: set[str] = set()
    for field in fields:
        data: Any = obj.get(field)
        if not mapping(e, field, data):
            continue
        for key, value in data.items():
            if not _CONFIG_KEY.match(str(key)) or len(str(key)) > 253:
                e.add(f"{field}.{key}", "invalid key (alphanumerics, '-', '_' or '.')")
            if str(key) in keys and field != "stringData":
                e.add(f"{field}.{key}", "duplicate key in data and binaryData")
            keys.add(str(key))
            if not isinstance(value, str):
                e.add(f"{field}.{key}", "must be a string")
            elif field == base64_field:
                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    e.add(f"{field}.{key}", "must be base64-encoded")


def defaults(obj: Object) -> None:
    canonical_base64(obj.get("binaryData"))


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    check_data(e, obj, ("data", "binaryData"), "binaryData")
    if data_size(obj, ("data", "binaryData"), ("binaryData",)) > MAX_DATA_SIZE:
        e.too_long("", MAX_DATA_SIZE)
    if (
        old is not None
        and old.get("immutable")
        and (old.get("data") != obj.get("data") or old.get("binaryData") != obj.get("binaryData"))
    ):
        e.add("data", "field is immutable when `immutable` is set")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    n = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [name(obj), str(n), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("ConfigMap", "v1", short_names=("cm",), has_status=False),
    types={
        **declare(
            CORE,
            """
            ConfigMap [v1 ConfigMap]: ConfigMap holds configuration data for pods to consume.
                data        map      Configuration data (UTF-8).
                binaryData  map      Binary configuration data (base64).
                immutable   boolean  If true, the data cannot be updated.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(columns(("NAME", "DATA", "AGE")), row),
    patch_meta=facts(),
)
