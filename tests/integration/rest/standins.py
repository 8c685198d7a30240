"""Small stand-ins for the patch modules another branch provides.

Installed (into sys.modules, in this test process only) when the real
modules are missing, so the REST API's wiring of JSON patch, strategic merge,
server-side apply and Tables is exercised before those modules land. They are
deliberately minimal: enough for what kubectl sends in these tests.
"""

from __future__ import annotations

import copy
import sys
import types
from typing import Any

from controlplane.api.merge_patch import merge_patch
from controlplane.apiserver.rest import optional


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json_patch_apply(doc: Any, ops: Any) -> Any:
    doc = copy.deepcopy(doc)
    for op in ops:
        *parents, last = _pointer(op["path"])
        target = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        kind = op["op"]
        if kind == "test":
            value = target[int(last)] if isinstance(target, list) else target.get(last)
            if value != op["value"]:
                raise ValueError(f"test failed at {op['path']}")
        elif kind == "remove":
            del target[int(last) if isinstance(target, list) else last]
        elif kind in ("add", "replace"):
            if isinstance(target, list):
                index = len(target) if last == "-" else int(last)
                if kind == "add":
                    target.insert(index, op["value"])
                else:
                    target[index] = op["value"]
            else:
                target[last] = op["value"]
    return doc


def _merge_lists(old: Any, patch: Any) -> Any:
    if isinstance(old, dict) and isinstance(patch, dict):
        out = dict(old)
        for key, value in patch.items():
            if key.startswith("$"):
                continue
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merge_lists(old.get(key), value)
        return out
    if isinstance(old, list) and isinstance(patch, list):
        if all(isinstance(i, dict) and "name" in i for i in old + patch):
            by_name = {i["name"]: i for i in old}
            merged = [_merge_lists(by_name.get(i["name"]), i) for i in patch]
            kept = [i for i in old if i["name"] not in {p["name"] for p in patch}]
            return merged + kept
        return copy.deepcopy(patch)
    return copy.deepcopy(patch)


def strategic_apply(original: dict[str, Any], patch: dict[str, Any], kind: str) -> dict[str, Any]:
    result: dict[str, Any] = _merge_lists(original, patch)
    return result


def server_side_apply(
    live: dict[str, Any] | None, applied: dict[str, Any], manager: str, force: bool, kind: str
) -> dict[str, Any]:
    result: dict[str, Any] = merge_patch(live or {}, applied)
    return result


def table(kind: str, objects: list[dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    column = {"name": "Name", "type": "string", "format": "name", "description": "",
              "priority": 0}  # fmt: skip
    rows = [
        {"cells": [o["metadata"]["name"]],
         "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"]}}
        for o in objects
    ]  # fmt: skip
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "columnDefinitions": [column], "rows": rows}  # fmt: skip


def install() -> list[str]:
    """Install whichever stand-ins are needed; returns their module names."""
    made = []
    for name, attrs in (
        (optional.JSON_PATCH, {"apply": json_patch_apply}),
        (optional.STRATEGIC_MERGE, {"apply": strategic_apply}),
        (optional.SERVER_SIDE_APPLY, {"apply": server_side_apply}),
        (optional.TABLES, {"table": table}),
    ):
        if optional.module(name) is None:
            module = types.ModuleType(name)
            module.__dict__.update(attrs)
            sys.modules[name] = module
            made.append(name)
    return made


def uninstall(names: list[str]) -> None:
    for name in names:
        sys.modules.pop(name, None)
