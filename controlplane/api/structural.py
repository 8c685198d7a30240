"""Values against a structural schema (Kubernetes' openAPIV3Schema of a
CustomResourceDefinition version): pure functions, no registry.

- `check(schema, value)`: every way `value` breaks `schema`, as
  `path: problem` (types, required, enum, bounds, pattern, nullable,
  x-kubernetes-int-or-string, list-type set/map uniqueness, allOf, anyOf,
  oneOf, not).
- `apply_defaults(schema, value)`: the schema's defaults filled in.
- `prune(schema, value, removed)`: fields the schema does not know dropped
  (unless x-kubernetes-preserve-unknown-fields), their paths collected.
- `root(schema)`: a custom kind's root schema with apiVersion, kind and
  metadata left to the server.
"""

from __future__ import annotations

import math
import re
from typing import Any

from controlplane.api.jsoncodec import clone

Object = dict[str, Any]

ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def check(s: Object, value: Any, path: str = "") -> list[str]:
    """Every way `value` breaks schema `s`, as `path: problem` (`<root>` for
    the value itself)."""
    out: list[str] = []
    _check(s, value, path, out)
    return out


def _type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _check(s: Object, value: Any, path: str, problems: list[str]) -> None:
    where = path or "<root>"
    if value is None:
        if not s.get("nullable"):
            problems.append(f"{where}: must not be null")
        return
    got = _type_of(value)
    want = s.get("type")
    if s.get("x-kubernetes-int-or-string"):
        if got not in ("integer", "string"):
            problems.append(f"{where}: must be an integer or a string, got {got}")
            return
    elif want and not (got == want or (want == "number" and got == "integer")):
        problems.append(f"{where}: must be of type {want}, got {got}")
        return
    if "enum" in s and value not in s["enum"]:
        allowed = ", ".join(repr(x) for x in s["enum"])
        problems.append(f"{where}: unsupported value {value!r}: supported values: {allowed}")
    if got in ("integer", "number"):
        _bounds(s, value, where, problems)
    if got == "string":
        if "maxLength" in s and len(value) > s["maxLength"]:
            problems.append(f"{where}: may not be longer than {s['maxLength']}")
        if "minLength" in s and len(value) < s["minLength"]:
            problems.append(f"{where}: should be at least {s['minLength']} chars long")
        if "pattern" in s and not re.search(s["pattern"], value):
            problems.append(f"{where}: should match '{s['pattern']}'")
    if got == "array":
        if "maxItems" in s and len(value) > s["maxItems"]:
            problems.append(f"{where}: must have at most {s['maxItems']} items")
        if "minItems" in s and len(value) < s["minItems"]:
            problems.append(f"{where}: should have at least {s['minItems']} items")
        items = s.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _check(items, item, f"{path}[{i}]", problems)
        _unique(s, value, where, problems)
    if got == "object":
        _check_object(s, value, path, where, problems)
    for key in ("allOf", "anyOf", "oneOf"):
        options = s.get(key)
        if isinstance(options, list):
            results = [_sub_problems(o, value, path) for o in options]
            passed = sum(1 for r in results if not r)
            if key == "allOf":
                for r in results:
                    problems.extend(r)
            elif key == "anyOf" and options and passed == 0:
                problems.append(f"{where}: must match at least one schema in anyOf")
            elif key == "oneOf" and options and passed != 1:
                problems.append(f"{where}: must match exactly one schema in oneOf")
    if isinstance(s.get("not"), dict) and not _sub_problems(s["not"], value, path):
        problems.append(f"{where}: must not match the schema in not")


def _unique(s: Object, items: list[Any], where: str, problems: list[str]) -> None:
    """x-kubernetes-list-type set (unique values) and map (unique keys)."""
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for i, item in enumerate(items):
            if item in seen:
                problems.append(f"{where}[{i}]: Duplicate value: {item!r}")
            seen.append(item)
    elif list_type == "map":
        keys = s.get("x-kubernetes-list-map-keys") or []
        seen_keys: set[str] = set()
        for i, item in enumerate(items):
            if isinstance(item, dict):
                ident = repr([item.get(k) for k in keys])
                if ident in seen_keys:
                    problems.append(f"{where}[{i}]: Duplicate value: map keys {ident}")
                seen_keys.add(ident)


def _sub_problems(s: Any, value: Any, path: str) -> list[str]:
    out: list[str] = []
    if isinstance(s, dict):
        _check({**s, "nullable": True} if value is None else s, value, path, out)
    return out


def _bounds(s: Object, value: float, where: str, problems: list[str]) -> None:
    if "maximum" in s:
        limit = s["maximum"]
        if value > limit or (s.get("exclusiveMaximum") and value == limit):
            op = "less than" if s.get("exclusiveMaximum") else "less than or equal to"
            problems.append(f"{where}: should be {op} {limit}")
    if "minimum" in s:
        limit = s["minimum"]
        if value < limit or (s.get("exclusiveMinimum") and value == limit):
            op = "greater than" if s.get("exclusiveMinimum") else "greater than or equal to"
            problems.append(f"{where}: should be {op} {limit}")
    multiple = s.get("multipleOf")
    if multiple and not math.isclose(value / multiple, round(value / multiple)):
        problems.append(f"{where}: must be a multiple of {multiple}")


def _check_object(s: Object, value: Object, path: str, where: str, problems: list[str]) -> None:
    for key in s.get("required") or []:
        if key not in value:
            problems.append(f"{path + '.' if path else ''}{key}: Required value")
    if "maxProperties" in s and len(value) > s["maxProperties"]:
        problems.append(f"{where}: must have at most {s['maxProperties']} properties")
    if "minProperties" in s and len(value) < s["minProperties"]:
        problems.append(f"{where}: must have at least {s['minProperties']} properties")
    props = s.get("properties") or {}
    extra = s.get("additionalProperties")
    for key, child in value.items():
        child_path = f"{path}.{key}" if path else key
        if key in props:
            _check(props[key], child, child_path, problems)
        elif isinstance(extra, dict):
            _check(extra, child, child_path, problems)


def root(schema: Object) -> Object:
    """The root schema with apiVersion, kind and metadata left to the server:
    kept as an embedded resource keeps them, never defaulted or pruned here.
    A schema that lists them as `required` (Argo CD's, Traefik's,
    cert-manager's Challenge and Order list `metadata`) is satisfied: the
    server always has them."""
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in ROOT_FIELDS}
    out = {**schema, "properties": props, "x-kubernetes-embedded-resource": True}
    if isinstance(schema.get("required"), list):
        out["required"] = [r for r in schema["required"] if r not in ROOT_FIELDS]
    return out


def apply_defaults(s: Object, value: Any) -> Any:
    """`value` with the defaults of schema `s` filled in (dicts in place)."""
    if isinstance(value, dict):
        for key, sub in (s.get("properties") or {}).items():
            if not isinstance(sub, dict):
                continue
            if key not in value and "default" in sub:
                value[key] = clone(sub["default"])
            if key in value and value[key] is not None:
                value[key] = apply_defaults(sub, value[key])
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            props = s.get("properties") or {}
            for key in value:
                if key not in props and value[key] is not None:
                    value[key] = apply_defaults(extra, value[key])
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        return [apply_defaults(s["items"], item) if item is not None else item for item in value]
    return value


def prune(s: Object, value: Any, path: str, removed: list[str] | None) -> Any:
    """`value` without the fields schema `s` does not know; their paths are
    appended to `removed` when given."""
    if isinstance(value, dict):
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = s.get("x-kubernetes-embedded-resource") is True
        for key in list(value):
            where = f"{path}.{key}" if path else key
            sub = props.get(key)
            if isinstance(sub, dict):
                value[key] = prune(sub, value[key], where, removed)
            elif isinstance(extra, dict):
                value[key] = prune(extra, value[key], where, removed)
            elif not (preserve or extra is True or (embedded and key in ROOT_FIELDS)):
                del value[key]
                if removed is not None:
                    removed.append(where)
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        return [prune(s["items"], item, f"{path}[{i}]", removed) for i, item in enumerate(value)]
    return value
