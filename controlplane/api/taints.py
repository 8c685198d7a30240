"""Whether a toleration tolerates a taint (the API's rule, for every part:
the node lifecycle and DaemonSet controllers, the agent's admission)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    op = toleration.get("operator") or "Equal"
    key = toleration.get("key")
    if not key:
        return op == "Exists"
    if key != taint.get("key"):
        return False
    if op == "Exists":
        return True
    return str(toleration.get("value") or "") == str(taint.get("value") or "")
