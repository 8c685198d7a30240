"""The JSONPath subset behind -o jsonpath and -o custom-columns."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.jsonpath import JsonPathError, custom_columns, render

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "web"}},
    "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
    "status": {
        "podIP": "10.1.0.4",
        "conditions": [{"type": "Ready", "status": "True"}, {"type": "Init", "status": "False"}],
    },
}
LIST = {"kind": "List", "items": [POD, {"metadata": {"name": "q"}, "spec": {"x": 1}}]}


@pytest.mark.parametrize(
    ("template", "data", "want"),
    [
        ("{.status.podIP}", POD, "10.1.0.4"),
        ("ip={.status.podIP}!", POD, "ip=10.1.0.4!"),
        ("{.spec.containers[*].image}", POD, "x y"),
        ("{.spec.containers[1].name}", POD, "b"),
        ("{.spec.containers[-1].name}", POD, "b"),
        ("{.spec.containers[5].name}", POD, ""),
        ("{.metadata.labels['app.kubernetes.io/name']}", POD, "web"),
        ('{.status.conditions[?(@.type=="Ready")].status}', POD, "True"),
        ('{.status.conditions[?(@.status!="True")].type}', POD, "Init"),
        ("{.items[*].metadata.name}", LIST, "p q"),
        ("{range .items[*]}[{.metadata.name}]{end}", LIST, "[p][q]"),
        ('{range .items[*]}{.metadata.name}{"\\n"}{end}', LIST, "p\nq\n"),
        ("{.items[1].spec}", LIST, '{"x":1}'),
        ("{$.kind}", LIST, "List"),
        ("{.missing.deeper}", POD, ""),
    ],
)
def test_render(template: str, data: Any, want: str) -> None:
    assert render(template, data) == want


@pytest.mark.parametrize("bad", ["{.a", "{range .items[*]}x", "{end}", "{.a[?(junk)]}", "{.a[}"])
def test_bad_templates(bad: str) -> None:
    with pytest.raises(JsonPathError):
        render(bad, POD)


def test_custom_columns_spec() -> None:
    assert custom_columns("NAME:.metadata.name,IP:{.status.podIP}") == [
        ("NAME", ".metadata.name"),
        ("IP", "{.status.podIP}"),
    ]
    with pytest.raises(JsonPathError):
        custom_columns("NAME")
