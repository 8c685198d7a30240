"""meta.k8s.io/v1 Table responses: what `kubectl get` asks for.

kubectl sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and
prints the columns the server defines. The columns and cells of each
built-in kind are the ones skiffctl prints (NAME, CREATED AT for a kind
without a printer, as kube-apiserver's default table) (its definition's printer, read
through controlplane/api/columns.py, one home for both); a column's type
and description are its own or those every kind shares for that header
(_COLUMN_FACTS). A custom kind shows NAME, then its CRD's
additionalPrinterColumns (JSONPath) or else AGE. As kube-apiserver does, the
Table always carries the wide-only columns with priority 1: kubectl hides
them unless `-o wide`. Pure: no storage, no I/O.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from controlplane.api import columns, crd, display, kinds
from controlplane.api.kinds.definition import Column

Object = dict[str, Any]

INCLUDE_OBJECT = ("None", "Metadata", "Object")

# Column header -> (type, format, description) where it is not a plain string.
_COLUMN_FACTS: dict[str, tuple[str, str, str]] = {
    "NAME": (
        "string",
        "name",
        "Name must be unique within a namespace. "
        "More info: http://kubernetes.io/docs/user-guide/identifiers#names",
    ),
    "AGE": (
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object "
        "was created.",
    ),
    "RESTARTS": ("integer", "", "The number of times the containers in the pod have restarted."),
    "UP-TO-DATE": ("integer", "", "Total number of non-terminated pods with the desired template."),
    "AVAILABLE": ("integer", "", "Total number of available pods."),
    "DESIRED": ("integer", "", "Number of desired pods."),
    "CURRENT": ("integer", "", "Number of current pods."),
    "DATA": ("integer", "", "Number of data keys."),
    "ACTIVE": ("integer", "", "Number of active jobs."),
    "MINPODS": ("integer", "", "Lower limit for the number of pods."),
    "REPLICAS": ("integer", "", "Current number of replicas."),
    "VALUE": ("integer", "", "The priority value."),
}

_AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _definition(column: Column) -> dict[str, Any]:
    header = column.name
    kind, fmt, description = _COLUMN_FACTS.get(header, ("string", "", header.capitalize()))
    return {
        "name": header,
        "type": column.type or kind,
        "format": column.format or fmt,
        "description": column.description or description,
        "priority": column.priority,
    }


def _typed(value: str, column_type: str) -> Any:
    if column_type == "integer" and value.lstrip("-").isdigit():
        return int(value)
    return value


def _row_object(obj: Object, include_object: str) -> Object | None:
    if include_object == "Object":
        return obj
    if include_object == "Metadata":
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {},
        }
    return None


def _builtin(kind: str, objects: Sequence[Object], now: float) -> tuple[list[Any], list[Any]]:
    printer = columns.printer_of(kind)
    definitions = [_definition(c) for c in printer.columns]
    integers = [i for i, d in enumerate(definitions) if d["type"] == "integer"]
    rows = []
    for obj in objects:
        cells: list[Any] = printer.row(obj, now, True)
        for i in integers:
            cells[i] = _typed(cells[i], "integer")
        rows.append(cells)
    return definitions, rows


def _cell(column: dict[str, Any], obj: Object, now: float) -> Any:
    from controlplane.api import jsonpath  # custom kinds' columns only: not held at rest

    try:
        found = jsonpath.values(str(column.get("jsonPath", "")), obj)
    except jsonpath.JsonPathError:
        return None
    if not found or found[0] is None:
        return None
    value = found[0]
    column_type = column.get("type")
    if column_type == "date":
        return display.since(value, now)
    if column_type in ("integer", "number", "boolean"):
        return value
    if isinstance(value, (dict, list)):
        return jsonpath.column_value(str(column.get("jsonPath", "")), obj)
    return str(value)


def _custom(
    printer_columns: Sequence[dict[str, Any]], objects: Sequence[Object], now: float
) -> tuple[list[Any], list[Any]]:
    cols = list(printer_columns) or [_AGE_COLUMN]
    definitions = [_definition(Column("NAME"))] + [
        {
            "name": str(c.get("name", "")),
            "type": "string" if c.get("type") == "date" else str(c.get("type", "string")),
            "format": str(c.get("format", "")),
            "description": str(c.get("description", "")),
            "priority": int(c.get("priority", 0)),
        }
        for c in cols
    ]
    rows = [[display.name(o)] + [_cell(c, o, now) for c in cols] for o in objects]
    return definitions, rows


def table(
    kind: str,
    objects: list[Object],
    *,
    wide: bool = False,
    include_object: str = "Metadata",
    printer_columns: Sequence[dict[str, Any]] | None = None,
    list_metadata: dict[str, Any] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of `objects` of kind `kind` (a kinds key).

    `include_object` is the request's includeObject (None, Metadata, Object);
    `printer_columns` are a custom kind's additionalPrinterColumns (by default
    those of its registered CRD, by the first object's version); `list_metadata` (resourceVersion, continue) is copied
    into the Table's metadata. `wide` changes nothing: every Table carries
    the wide-only columns at priority 1, as kube-apiserver's do.
    """
    del wide
    if include_object not in INCLUDE_OBJECT:
        raise ValueError(f"includeObject must be one of {', '.join(INCLUDE_OBJECT)}")
    at = time.time() if now is None else now
    if printer_columns is None and crd.is_custom(kind):
        version = str((objects[0] if objects else {}).get("apiVersion", "")).rpartition("/")[2]
        printer_columns = crd.printer_columns(kind, version or None)
    elif printer_columns is None and kinds.find(kind) is None:
        printer_columns = ()  # a kind not (or no longer) registered: NAME, AGE as a custom one
    if printer_columns is not None:
        definitions, cells = _custom(printer_columns, objects, at)
    else:
        definitions, cells = _builtin(kind, objects, at)
    rows = []
    for obj, row_cells in zip(objects, cells, strict=True):
        row: dict[str, Any] = {"cells": row_cells}
        attached = _row_object(obj, include_object)
        if attached is not None:
            row["object"] = attached
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": definitions,
        "rows": rows,
    }
