"""The OpenAPI documents of the Kubernetes REST API, and the field check
`fieldValidation=Strict` asks for, against the kinds' schemas.

- `v2()`, `v2_protobuf()`: Swagger 2.0 (`/openapi/v2`), as JSON or as the
  protobuf kubectl asks for (Accept PROTOBUF_ACCEPT; answer with
  Content-Type PROTOBUF_CONTENT_TYPE);
- `v3_paths()`, `v3(group, version)`: OpenAPI 3.0 (`/openapi/v3`, one
  document per group/version).
  `v3_served`, `v2_json`: the documents as sent (bytes and ETag).
  The documents are built by openapi_doc.py and kept by openapi_served.py
  (each built at its first request, again only when what it describes
  changes), imported at the first one asked for: a control plane at rest
  neither builds nor holds them.
- `validate(obj)`: unknown fields and wrong types in a built-in kind's
  object, by path, against the same schema (kinds.schema_types()); below a
  field the schema leaves free-form (`object`) or does not list, unknown
  fields against Kubernetes' message of it (k8sfields.py), as kube-apiserver
  checks every depth: what pruning.prune drops.
Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import k8sfields
from controlplane.api.kinds.registry import kind_types, schema_types
from controlplane.api.openapi_etag import Served

# What kubectl's Accept asks for, and the Content-Type to answer with (Go's
# mime parser refuses the "@" of the former in a response).
PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def v2() -> dict[str, Any]:
    """The Swagger 2.0 document of every served kind (cached until the set of
    kinds changes: treat it as read-only)."""
    from controlplane.api import openapi_served

    return openapi_served.v2()


def v2_json() -> bytes:
    """`v2()` as JSON (cached)."""
    from controlplane.api import openapi_served

    return openapi_served.v2_json()


def v2_protobuf() -> bytes:
    """`v2()` as the openapi.v2.Document protobuf kubectl asks for (cached)."""
    from controlplane.api import openapi_served

    return openapi_served.v2_protobuf()


def v3(group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group/version ("" is the core group;
    a fresh copy). Raises errors.NotFound for a group/version skiff does
    not serve."""
    from controlplane.api import openapi_served

    return openapi_served.v3(group, version)


def v3_served(group: str, version: str) -> Served:
    """`v3(group, version)` as sent: its JSON and ETag (cached)."""
    from controlplane.api import openapi_served

    return openapi_served.v3_served(group, version)


def v3_paths() -> dict[str, Any]:
    """The `/openapi/v3` index: each group/version's document URL with its hash."""
    from controlplane.api import openapi_served

    return openapi_served.v3_paths()


# ---- field validation ----------------------------------------------------------------------


def validate(obj: Any) -> list[str]:
    """Unknown fields and wrong types in a built-in kind's object, as
    `unknown field "spec.foo"` and `path: problem` (what `fieldValidation=Strict`
    reports). [] for custom kinds and kinds the schema does not know: those
    validate elsewhere."""
    if not isinstance(obj, dict):
        return ["object: must be a JSON object"]
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    type_name = kind_types().get((group, version, str(obj.get("kind", ""))))
    if type_name is None:
        return []
    problems: list[str] = []
    _check_type(type_name, obj, "", problems)
    return problems


_JSON_TYPE = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _json_type(value: Any) -> str:
    return _JSON_TYPE.get(type(value), type(value).__name__)


def _check_type(name: str, value: dict[str, Any], path: str, problems: list[str]) -> None:
    fields = schema_types()[name].fields
    for key, child in value.items():
        where = f"{path}.{key}" if path else key
        expr = fields[key][0] if key in fields else None
        if expr is None or (child and expr.removeprefix("[]") == "object"):
            # Free-form here, or a field of Kubernetes' type skiff's schema lacks:
            # Kubernetes' message of the type says what is below it.
            message = k8sfields.message_of(name)
            field = k8sfields.field_of(message, key) if message is not None else None
            if field is not None:
                if child is not None:
                    unknown: list[str] = []
                    k8sfields.unknown_below(field, child, where, unknown, drop=False)
                    problems.extend(f'unknown field "{p}"' for p in unknown)
                continue
            if expr is None:
                problems.append(f'unknown field "{where}"')  # as kube-apiserver words it
                continue
        if child is not None:
            _check_expr(expr, child, where, problems)


def _check_expr(expr: str, value: Any, path: str, problems: list[str]) -> None:
    got = _json_type(value)
    if expr in ("quantity", "int-or-string"):
        ok = got in ("string", "integer") or (expr == "quantity" and got == "number")
        want = "string or integer"
    elif expr in ("string", "time"):
        ok, want = got == "string", "string"
    elif expr == "integer":
        ok, want = got == "integer", "integer"
    elif expr == "number":
        ok, want = got in ("integer", "number"), "number"
    elif expr == "boolean":
        ok, want = got == "boolean", "boolean"
    elif expr.startswith("[]"):
        ok, want = got == "array", "array"
        if ok:
            for i, item in enumerate(value):
                if item is not None:
                    _check_expr(expr[2:], item, f"{path}[{i}]", problems)
    elif expr == "map" or expr.startswith("map["):
        ok, want = got == "object", "object"
        if ok:
            inner = "string" if expr == "map" else expr[4:-1]
            for k, v in value.items():
                if v is not None:
                    _check_expr(inner, v, f"{path}.{k}", problems)
    else:
        ok, want = got == "object", "object"
        if ok and expr in schema_types():
            _check_type(expr, value, path, problems)
    if not ok:
        problems.append(f"{path}: expected {want}, got {got}")
