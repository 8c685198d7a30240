"""meta.k8s.io/v1 Table responses: kubectl's columns per kind, wide columns at
priority 1, includeObject, and custom kinds' printer columns."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.kinds import by_kind
from controlplane.apiserver.tables import table
from controlplane.cli.printers import TablePrinter
from machinery.rfc3339 import parse_time

NOW = parse_time("2026-01-01T01:00:00Z") or 0.0

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "uid": "u1",
    },
    "spec": {"nodeName": "n1", "containers": [{"name": "c"}, {"name": "d"}]},
    "status": {
        "phase": "Running",
        "podIP": "10.0.0.5",
        "containerStatuses": [
            {"name": "c", "ready": True, "restartCount": 2, "state": {"running": {}}},
            {"name": "d", "ready": False, "restartCount": 1, "state": {"running": {}}},
        ],
    },
}


def names(t: dict[str, Any], priority: int | None = None) -> list[str]:
    return [
        c["name"] for c in t["columnDefinitions"] if priority is None or c["priority"] == priority
    ]


def test_pods_have_kubectls_columns_and_wide_ones_at_priority_1() -> None:
    t = table("Pod", [POD], now=NOW)
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert names(t, 0) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert names(t, 1) == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert t["rows"][0]["cells"] == [
        "web-1",
        "1/2",
        "Running",
        3,
        "60m",
        "10.0.0.5",
        "n1",
        "<none>",
        "<none>",
    ]
    restarts = t["columnDefinitions"][3]
    assert restarts["type"] == "integer" and t["columnDefinitions"][0]["format"] == "name"
    for column in t["columnDefinitions"]:
        assert set(column) == {"name", "type", "format", "description", "priority"}


def test_cells_match_what_skiffctl_prints() -> None:
    t = table("Pod", [POD], now=NOW)
    printed = TablePrinter(by_kind("Pod"), NOW, wide=True).row(POD)
    assert [str(c) for c in t["rows"][0]["cells"]] == printed


@pytest.mark.parametrize(
    ("kind", "narrow", "wide"),
    [
        (
            "Deployment",
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
            ["CONTAINERS", "IMAGES", "SELECTOR"],
        ),
        (
            "Node",
            ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"],
        ),
        ("Service", ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"], ["SELECTOR"]),
        ("ConfigMap", ["NAME", "DATA", "AGE"], []),
        ("Event", ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], ["SOURCE"]),
        ("Lease", ["NAME", "HOLDER", "AGE"], []),
    ],
)
def test_columns_per_kind(kind: str, narrow: list[str], wide: list[str]) -> None:
    t = table(kind, [{"metadata": {"name": "x"}}], now=NOW)
    assert names(t, 0) == narrow and names(t, 1) == wide
    assert len(t["rows"][0]["cells"]) == len(narrow) + len(wide)


def test_include_object() -> None:
    meta = table("Pod", [POD], now=NOW)["rows"][0]["object"]
    assert meta == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": POD["metadata"],
    }
    assert table("Pod", [POD], include_object="Object", now=NOW)["rows"][0]["object"] == POD
    assert "object" not in table("Pod", [POD], include_object="None", now=NOW)["rows"][0]
    with pytest.raises(ValueError, match="includeObject"):
        table("Pod", [POD], include_object="All")


def test_list_metadata_is_carried() -> None:
    t = table("Pod", [], list_metadata={"resourceVersion": "7", "continue": "abc"})
    assert t["metadata"] == {"resourceVersion": "7", "continue": "abc"} and t["rows"] == []


def test_unknown_kinds_get_name_and_age() -> None:
    t = table(
        "Widget.example.com",
        [{"metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:59:00Z"}}],
        now=NOW,
    )
    assert names(t) == ["NAME", "AGE"] and t["rows"][0]["cells"] == ["w", "60s"]


def test_custom_printer_columns() -> None:
    columns: list[dict[str, Any]] = [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {
            "name": "Phase",
            "type": "string",
            "jsonPath": ".status.phase",
            "description": "the phase",
        },
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Broken", "type": "string", "jsonPath": ".spec[["},
    ]
    obj = {
        "metadata": {"name": "w", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"replicas": 3, "tags": ["a", "b"]},
    }
    t = table("Widget.example.com", [obj], printer_columns=columns, now=NOW)
    assert names(t) == ["NAME", "Replicas", "Phase", "Tags", "Age", "Broken"]
    assert names(t, 1) == ["Tags"]
    assert t["rows"][0]["cells"] == ["w", 3, None, '["a","b"]', "60m", None]
    assert t["columnDefinitions"][2]["description"] == "the phase"


def test_custom_kind_without_printer_columns_shows_age() -> None:
    t = table("Widget.example.com", [{"metadata": {"name": "w"}}], printer_columns=[], now=NOW)
    assert names(t) == ["NAME", "Age"] and t["rows"][0]["cells"] == ["w", None]
