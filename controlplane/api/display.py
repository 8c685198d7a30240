"""How an object's fields read in a table, as kubectl prints them: ages in
kubectl's `HumanDuration`, label and selector strings, `<none>` for nothing,
and the metadata/spec/status accessors the column functions use. Pure
functions of the object and the current time.
"""

from __future__ import annotations

from typing import Any

from machinery.rfc3339 import parse_time

Object = dict[str, Any]

NONE = "<none>"


# ---- time -------------------------------------------------------------------


def human_duration(seconds: float) -> str:
    """kubectl's duration.HumanDuration: 5s, 2m30s, 10m, 3h, 2d4h, 400d, 3y12d."""
    if seconds < -1:
        return "<invalid>"
    s = int(max(0, seconds))
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // (24 * 365)}y"


def since(value: Any, now: float) -> str:
    when = parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)


def age(obj: Object, now: float) -> str:
    return since(meta(obj).get("creationTimestamp"), now)


# ---- small accessors ------------------------------------------------------------


def meta(obj: Object) -> dict[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, dict) else {}


def spec(obj: Object) -> dict[str, Any]:
    s = obj.get("spec")
    return s if isinstance(s, dict) else {}


def status(obj: Object) -> dict[str, Any]:
    s = obj.get("status")
    return s if isinstance(s, dict) else {}


def name(obj: Object) -> str:
    return str(meta(obj).get("name", ""))


def labels_string(labels: dict[str, Any] | None) -> str:
    if not labels:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def selector_string(selector: dict[str, Any] | None) -> str:
    if not selector:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key = expr.get("operator"), expr.get("key")
        values = ",".join(expr.get("values") or [])
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": str(key),
                "DoesNotExist": f"!{key}",
            }.get(str(op), f"{key} {op}")
        )
    return ",".join(parts) or NONE
