"""The OpenAPI documents of the Kubernetes REST API, built from the kinds'
schemas joined with the structure of Kubernetes' messages, every nested type
described to the leaves (openapi_model.model()): what
controlplane.api.openapi serves, loaded at the first document asked for (a
server at rest never builds one, so it does not hold this code either).

- Swagger 2.0 (`/openapi/v2`): every kind's definition with
  `x-kubernetes-group-version-kind`, the merge facts of the kinds'
  patch_meta as `x-kubernetes-patch-merge-key`/`-strategy`, and the resource
  paths: `document(served(), ..., v3=False)`.
- OpenAPI 3.0 (`/openapi/v3/apis/<group>/<version>`, `/openapi/v3/api/v1`):
  `document(entries, ..., v3=True)` of one group/version's entries. kubectl
  reads these for `explain`, for strategic merge patch facts, and to learn
  that the server validates fields itself (the `fieldValidation` parameter
  of each PATCH operation): it then sends `fieldValidation=Strict` instead
  of validating on the client.

When each is built and how it is kept: controlplane.api.openapi_served.

Custom resources: the documents include every served version of every
registered CustomResourceDefinition (controlplane.api.crd) with its schema.
Pure: built from tables, no I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from controlplane.api import crd, kinds, patch_meta
from controlplane.api.k8sproto.schema import GROUPS
from controlplane.api.kinds.definition import FieldMeta
from controlplane.api.kinds.registry import kind_types, schema_types
from controlplane.api.openapi_model import (
    INT_OR_STRING,
    MICRO_TIME,
    QUANTITY,
    TIME,
    Definition,
    definition_name,
    model,
)
from controlplane.api.schema import META

_PRIMITIVES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer", "format": "int64"},
    "int32": {"type": "integer", "format": "int32"},
    "bytes": {"type": "string", "format": "byte"},
    "number": {"type": "number", "format": "double"},
    "boolean": {"type": "boolean"},
}

_TIME = "A point in time, written as an RFC 3339 string in UTC, to the second."
_MICRO_TIME = "A point in time, written as an RFC 3339 string in UTC, to the microsecond."
_QUANTITY = (
    "A fixed-point number with an optional unit suffix (100m, 1.5, 2Gi, 1e3): "
    "CPU, memory and other resource amounts."
)
_INT_OR_STRING = "Either an integer or a string (a percentage such as 25%, or a port's name)."
# The scalars Kubernetes publishes as definitions of their own: (v2, v3) bodies.
_SCALAR_DEFINITIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    TIME: (
        {"description": _TIME, "type": "string", "format": "date-time"},
        {"description": _TIME, "type": "string", "format": "date-time"},
    ),
    MICRO_TIME: (
        {"description": _MICRO_TIME, "type": "string", "format": "date-time"},
        {"description": _MICRO_TIME, "type": "string", "format": "date-time"},
    ),
    QUANTITY: (
        {"description": _QUANTITY, "type": "string"},
        {"description": _QUANTITY, "oneOf": [{"type": "string"}, {"type": "number"}]},
    ),
    INT_OR_STRING: (
        {"description": _INT_OR_STRING, "type": "string", "format": "int-or-string"},
        {
            "description": _INT_OR_STRING,
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        },
    ),
}

_VERSION_INFO = {"title": "Kubernetes", "version": "v1.32.0"}


# ---- patch facts per type and field ----------------------------------------------------


def _walk(name: str, path: str, seen: frozenset[str]) -> Iterator[tuple[str, str, str]]:
    """(definition name, field, kind path) for every field reachable from `name`."""
    if name in seen:
        return
    defs = model()
    for fname, (expr, _) in defs[name].fields.items():
        fpath = f"{path}.{fname}" if path else fname
        yield name, fname, fpath
        inner = expr.removeprefix("[]")
        if inner in defs:
            yield from _walk(inner, fpath, seen | {name})


@functools.cache
def _patch_facts() -> dict[tuple[str, str], FieldMeta]:
    """(definition, field) -> merge facts, from the kinds' patch_meta (at first use)."""
    facts: dict[tuple[str, str], FieldMeta] = {}
    for (_, _, kind), type_name in kind_types().items():
        table = patch_meta.table(kind) or {}
        for owner, fname, fpath in _walk(_full_name(type_name), "", frozenset()):
            meta = table.get(fpath)
            if meta is not None:
                facts[(owner, fname)] = meta
    return facts


# ---- schemas ----------------------------------------------------------------------


def _full_name(name: str) -> str:
    """The OpenAPI definition name of a schema type: `io.k8s.api.core.v1.PodSpec`."""
    return schema_types()[name].full_name(name)


def _ref(name: str, v3: bool) -> str:
    return ("#/components/schemas/" if v3 else "#/definitions/") + name


def _expr(expr: str, v3: bool) -> dict[str, Any]:
    if expr in _PRIMITIVES:
        return dict(_PRIMITIVES[expr])
    if expr == "object":
        return (
            {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            if v3
            else {"type": "object"}
        )
    if expr == "map":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if expr.startswith("map[") and expr.endswith("]"):
        return {"type": "object", "additionalProperties": _expr(expr[4:-1], v3)}
    if expr.startswith("[]"):
        return {"type": "array", "items": _expr(expr[2:], v3)}
    if expr in model() or expr in _SCALAR_DEFINITIONS:
        return {"$ref": _ref(expr, v3)}
    raise ValueError(f"schema: unknown type expression {expr!r}")


def _property(owner: str, fname: str, expr: str, description: str, v3: bool) -> dict[str, Any]:
    body = _expr(expr, v3)
    if "$ref" in body and v3:
        body = {"allOf": [body]}
    body["description"] = description
    meta = _patch_facts().get((owner, fname))
    if meta is not None:
        body["x-kubernetes-patch-strategy"] = meta.strategy
        if meta.merge_key:
            body["x-kubernetes-patch-merge-key"] = meta.merge_key
        if expr.startswith("[]") and meta.merges:
            body["x-kubernetes-list-type"] = "map" if meta.merge_key else "set"
            if meta.merge_key:
                body["x-kubernetes-list-map-keys"] = [meta.merge_key]
    return body


def _definition(name: str, v3: bool, gvk: tuple[str, str, str] | None = None) -> dict[str, Any]:
    t: Definition = model()[name]
    out: dict[str, Any] = {
        "description": t.description,
        "type": "object",
        "properties": {
            f: _property(name, f, expr, desc, v3) for f, (expr, desc) in t.fields.items()
        },
    }
    if t.required:
        out["required"] = list(t.required)
    gvks = t.kinds or ((gvk,) if gvk else ())
    if gvks:
        out["x-kubernetes-group-version-kind"] = [
            {"group": g, "kind": k, "version": v} for g, v, k in gvks
        ]
    return out


def _refs(name: str) -> set[str]:
    """Every definition reachable from `name`, itself included."""
    defs = model()
    out = {name}
    todo = [name]
    while todo:
        for expr, _ in defs[todo.pop()].fields.values():
            inner = expr
            while inner.startswith(("[]", "map[")):
                inner = inner[2:] if inner.startswith("[]") else inner[4:-1]
            if inner in _SCALAR_DEFINITIONS:
                out.add(inner)
            elif inner in defs and inner not in out:
                out.add(inner)
                todo.append(inner)
    return out


def _proto_kind(group: str, version: str, kind: str) -> str | None:
    """The definition name of a served built-in kind no schema type
    describes but Kubernetes' messages do (SubjectAccessReview, TokenRequest)."""
    for package, served_group in GROUPS.items():
        if served_group == group:
            name = definition_name(f"{package}/{version}.{kind}")
            return name if name in model() else None
    return None


def _object_fields(prefix: str) -> dict[str, Any]:
    """apiVersion, kind and metadata, as kube-apiserver publishes them on a
    kind it has no Go type for; `prefix` is where definitions are referenced."""
    return {
        "apiVersion": {"type": "string", "description": "APIVersion of this object."},
        "kind": {"type": "string", "description": "Kind of this object."},
        "metadata": {
            "$ref": prefix + META + ".ObjectMeta",
            "description": "Standard object metadata.",
        },
    }


def _crd_definition(served: crd.ServedVersion, prefix: str) -> dict[str, Any]:
    """The definition of one served custom resource version."""
    body: dict[str, Any] = dict(served.schema) if served.schema else {"type": "object"}
    body.setdefault("type", "object")
    # As kube-apiserver publishes them: with the standard top-level fields.
    body["properties"] = {**_object_fields(prefix), **(body.get("properties") or {})}
    body["x-kubernetes-group-version-kind"] = [
        {"group": served.group, "kind": served.kind, "version": served.version}
    ]
    return body


def _open_definition(group: str, version: str, info: kinds.KindInfo, v3: bool) -> dict[str, Any]:
    """A kind with no schema: any fields accepted (in v2 a schema without
    properties, which kubectl treats as a free-form map)."""
    out: dict[str, Any] = {
        "description": f"{info.kind} ({info.api_version}).",
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": group, "kind": info.kind, "version": version}
        ],
    }
    if v3:
        prefix = "#/components/schemas/"
        out["properties"] = _object_fields(prefix)
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def _crd_name(group: str, version: str, kind: str) -> str:
    return ".".join([*reversed(group.split(".")), version, kind])


# ---- paths --------------------------------------------------------------------------


def _camel(text: str) -> str:
    parts = [p for p in text.replace(".", "-").split("-") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "Core"


def _param(name: str, where: str, v3: bool, description: str = "") -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "in": where, "description": description or name}
    if where == "path":
        p["required"] = True
    if v3:
        p["schema"] = {"type": "string"}
    else:
        p["type"] = "string"
        p["uniqueItems"] = True
    return p


_WRITE_PARAMS = {
    "dryRun": "When present, modifications are not persisted (All).",
    "fieldManager": "The name of the actor making these changes.",
    "fieldValidation": "How the server treats unknown or duplicate fields: Ignore, Warn or Strict.",
}
_LIST_PARAMS = {
    "labelSelector": "Restrict the returned objects by their labels.",
    "fieldSelector": "Restrict the returned objects by their fields.",
    "limit": "The maximum number of objects to return (a continue token follows).",
    "continue": "The continue token of a previous paged list.",
    "resourceVersion": "Which version of the collection to return.",
    "resourceVersionMatch": "How resourceVersion is applied to the list.",
    "watch": "Watch for changes and return them as a stream of events.",
    "allowWatchBookmarks": "Ask for BOOKMARK events.",
    "timeoutSeconds": "Timeout for the list or watch call.",
}


def _operation(
    action: str,
    op_id: str,
    gvk: dict[str, str],
    body_ref: str,
    v3: bool,
    params: dict[str, str],
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": op_id,
        "description": f"{action} {gvk['kind']}",
        "parameters": [_param(n, "query", v3, d) for n, d in params.items()],
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if v3:
        op["responses"] = {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": {"$ref": body_ref}}},
            }
        }
    else:
        op["responses"] = {"200": {"description": "OK", "schema": {"$ref": body_ref}}}
        op["consumes"] = ["*/*"]
        op["produces"] = ["application/json", "application/yaml"]
    return op


def _paths(
    info: kinds.KindInfo, group: str, version: str, body_ref: str, v3: bool
) -> dict[str, Any]:
    gvk = {"group": group, "version": version, "kind": info.kind}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    scope = "Namespaced" if info.namespaced else ""
    tag = f"{_camel(group)}{_camel(version)}"
    base = (
        f"{prefix}/namespaces/{{namespace}}/{info.plural}"
        if info.namespaced
        else f"{prefix}/{info.plural}"
    )
    path_params = [_param("namespace", "path", v3)] if info.namespaced else []
    item_params = [*path_params, _param("name", "path", v3)]
    patch_params = {**_WRITE_PARAMS, "force": "Force an apply to take over conflicting fields."}

    def op(
        action: str, verb: str, suffix: str = "", params: dict[str, str] | None = None
    ) -> dict[str, Any]:
        return _operation(
            action, f"{verb}{tag}{scope}{info.kind}{suffix}", gvk, body_ref, v3, params or {}
        )

    paths: dict[str, Any] = {
        base: {
            "get": op("list", "list", params=_LIST_PARAMS),
            "post": op("post", "create", params=_WRITE_PARAMS),
            "delete": op("deletecollection", "deleteCollection", params=_LIST_PARAMS),
            "parameters": path_params,
        },
        f"{base}/{{name}}": {
            "get": op("get", "read"),
            "put": op("put", "replace", params=_WRITE_PARAMS),
            "patch": op("patch", "patch", params=patch_params),
            "delete": op("delete", "delete", params={"dryRun": _WRITE_PARAMS["dryRun"]}),
            "parameters": item_params,
        },
    }
    if info.namespaced:
        paths[f"{prefix}/{info.plural}"] = {
            "get": op("list", "list", "ForAllNamespaces", _LIST_PARAMS),
        }
    subresources = (["status"] if info.has_status else []) + (["scale"] if info.has_scale else [])
    for sub in subresources:
        sub_gvk = (
            gvk if sub == "status" else {"group": "autoscaling", "version": "v1", "kind": "Scale"}
        )
        sub_ref = (
            body_ref
            if sub == "status"
            else ("#/components/schemas/" if v3 else "#/definitions/") + _SCALE
        )
        name = f"{tag}{scope}{info.kind}{sub.capitalize()}"
        paths[f"{base}/{{name}}/{sub}"] = {
            "get": _operation("get", f"read{name}", sub_gvk, sub_ref, v3, {}),
            "put": _operation("put", f"replace{name}", sub_gvk, sub_ref, v3, _WRITE_PARAMS),
            "patch": _operation("patch", f"patch{name}", sub_gvk, sub_ref, v3, patch_params),
            "parameters": item_params,
        }
    return paths


_SCALE = (
    "io.k8s.api.autoscaling.v1.Scale"  # its definition: autoscaling/v1's message (openapi_model)
)


# ---- served group versions ------------------------------------------------------------


Entry = tuple[str, str, kinds.KindInfo, str | None]
CustomVersions = dict[tuple[str, str, str], crd.ServedVersion]  # by (group, version, kind)


def served() -> Iterator[Entry]:
    """(group, version, kind row, schema type name) of every kind the kinds
    table serves; the type name is None for a kind no schema type
    describes (custom kinds, and any kind added to the kinds table without a
    schema): those get their CRD's schema or an open one, so that every
    served kind has its paths (kubectl looks for fieldValidation on each
    kind's PATCH operation) and a definition."""
    builtin = kind_types()
    for info in kinds.all_kinds():
        definition = kinds.find(info.key)
        versions = definition.served_versions() if definition is not None else ()
        for api_version in (info.api_version, *info.also_api_versions):
            if versions and api_version not in versions:
                continue  # a CRD's storage version that is not served
            group, _, version = api_version.rpartition("/")
            yield group, version, info, builtin.get((group, version, info.kind))


def key(group: str, version: str) -> str:
    """A group/version's name in /openapi/v3: `api/v1`, `apis/apps/v1`."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def custom_versions() -> CustomVersions:
    """Every served custom resource version, by (group, version, kind)."""
    return {(v.group, v.version, v.kind): v for v in crd.served_versions()}


def document(entries: list[Entry], custom: CustomVersions, v3: bool) -> dict[str, Any]:
    """The document of `entries` (served kinds; `custom`: the served custom
    resource versions, whose schemas define custom kinds)."""
    definitions: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    needed: set[str] = set()
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    proto_kinds: dict[str, tuple[str, str, str]] = {}
    for group, version, info, type_name in entries:
        name = _full_name(type_name) if type_name else _proto_kind(group, version, info.kind)
        if name is not None:
            needed |= _refs(name)
            ref = prefix + name
            if type_name is None:
                proto_kinds[name] = (group, version, info.kind)
        else:
            name = _crd_name(group, version, info.kind)
            found = custom.get((group, version, info.kind))
            definitions[name] = (
                _crd_definition(found, prefix)
                if found is not None
                else _open_definition(group, version, info, v3)
            )
            needed |= _refs(META + ".ObjectMeta")
            ref = prefix + name
        paths.update(_paths(info, group, version, ref, v3))
        if info.has_scale:
            needed |= _refs(_SCALE)
            proto_kinds[_SCALE] = ("autoscaling", "v1", "Scale")
    for name in sorted(needed):
        scalar = _SCALAR_DEFINITIONS.get(name)
        if scalar is not None:
            definitions[name] = scalar[v3]
        else:
            definitions[name] = _definition(name, v3, proto_kinds.get(name))
    if v3:
        return {
            "openapi": "3.0.0",
            "info": _VERSION_INFO,
            "paths": paths,
            "components": {"schemas": definitions},
        }
    return {"swagger": "2.0", "info": _VERSION_INFO, "paths": paths, "definitions": definitions}
