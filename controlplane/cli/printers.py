"""How skiffctl shows objects: tables with kubectl's columns, YAML, JSON, names.

The columns themselves (which ones each kind has and how a cell is computed)
are each kind's definition's printer (controlplane/api/kinds/, read through
controlplane/api/columns.py), shared with the API server's Table responses; the accessors skiffctl's commands use (`printers.name`,
`printers.meta`, ...) are re-exported from there. Tables are padded like
kubectl's tabwriter (three spaces between columns) so they line up. Pure
formatting: nothing here calls the API.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from controlplane.api.columns import headers_for, row_for
from controlplane.api.display import (
    NONE,
    age,
    human_duration,
    labels_string,
    meta,
    name,
    selector_string,
    spec,
    status,
)
from controlplane.api.kinds import KindInfo
from controlplane.api.kinds.core.event import last_seen as event_time
from controlplane.api.kinds.core.node import roles as node_roles
from controlplane.api.kinds.core.pod import status_reason as pod_status_reason
from controlplane.client.interface import Object

__all__ = [
    "NONE",
    "TablePrinter",
    "age",
    "as_list",
    "event_time",
    "format_table",
    "human_duration",
    "kind_label",
    "meta",
    "name",
    "node_roles",
    "pod_status_reason",
    "selector_string",
    "spec",
    "status",
    "to_json",
    "to_yaml",
    "type_name",
]

# ---- tables ---------------------------------------------------------------------


def type_name(info: KindInfo, obj_name: str) -> str:
    """`pod/web`, `deployment.apps/web`: the form `-o name` prints and TYPE/NAME accepts."""
    return f"{kind_label(info)}/{obj_name}"


def kind_label(info: KindInfo) -> str:
    return f"{info.singular}.{info.group}" if info.group else info.singular


def format_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], no_headers: bool = False
) -> str:
    """Left-aligned columns, three spaces apart, no trailing blanks (kubectl's tabwriter)."""
    all_rows = ([list(headers)] if not no_headers else []) + [list(r) for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(headers))]
    lines = []
    for r in all_rows:
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


@dataclass(eq=False)
class TablePrinter:
    """Rows for one kind, with optional NAMESPACE column, TYPE/ name prefix and labels."""

    info: KindInfo
    now: float
    wide: bool = False
    with_namespace: bool = False
    with_kind: bool = False
    show_labels: bool = False

    def headers(self) -> list[str]:
        h = headers_for(self.info.key, self.wide)
        if self.with_namespace:
            h = ["NAMESPACE", *h]
        if self.show_labels:
            h = [*h, "LABELS"]
        return h

    def row(self, obj: Object) -> list[str]:
        r = row_for(self.info.key, obj, self.now, self.wide)
        if self.with_kind and self.info.key != "Event":
            r[0] = type_name(self.info, r[0])
        if self.with_namespace:
            r = [str(meta(obj).get("namespace") or ""), *r]
        if self.show_labels:
            r.append(labels_string(meta(obj).get("labels")))
        return r

    def table(self, objs: Sequence[Object], no_headers: bool = False) -> str:
        return format_table(self.headers(), [self.row(o) for o in objs], no_headers)


# ---- documents ------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_presenter)


def to_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False)


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=4, sort_keys=True) + "\n"


def as_list(items: Sequence[Object]) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": list(items),
        "metadata": {"resourceVersion": ""},
    }
