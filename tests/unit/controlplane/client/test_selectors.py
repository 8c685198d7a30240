"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from controlplane.client.selectors import (
    SelectorError,
    from_label_selector,
    parse_field_selector,
    parse_label_selector,
)


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        ("", {}, True),
        ("app=web", {"app": "web"}, True),
        ("app==web", {"app": "web"}, True),
        ("app=web", {"app": "db"}, False),
        ("app!=web", {}, True),
        ("app!=web", {"app": "web"}, False),
        ("tier in (a, b)", {"tier": "b"}, True),
        ("tier in (a,b)", {"tier": "c"}, False),
        ("tier notin (a)", {}, True),
        ("tier notin (a)", {"tier": "a"}, False),
        ("gpu", {"gpu": ""}, True),
        ("gpu", {}, False),
        ("!gpu", {}, True),
        ("app=web,!canary", {"app": "web", "canary": "1"}, False),
        ("example.com/role=x, app in (web)", {"example.com/role": "x", "app": "web"}, True),
    ],
)
def test_label_selector_matches(selector: str, labels: dict[str, str], want: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is want


@pytest.mark.parametrize("bad", ["app=", "=web", "app in a", "a,", "a b"])
def test_bad_label_selector(bad: str) -> None:
    if bad == "app=":
        # an empty value is legal in Kubernetes
        assert parse_label_selector(bad).matches({"app": ""})
        return
    with pytest.raises(SelectorError):
        parse_label_selector(bad)


def test_label_selector_round_trips_as_string() -> None:
    sel = parse_label_selector("a=1,b!=2,c in (x,y),d,!e")
    assert parse_label_selector(str(sel)) == sel


def test_from_label_selector() -> None:
    sel = from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe"]},
                {"key": "old", "operator": "DoesNotExist"},
            ],
        }
    )
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "fe", "old": "1"})
    assert from_label_selector({}).matches({"x": "y"})
    assert not from_label_selector(None).matches({})
    with pytest.raises(SelectorError):
        from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})


def test_field_selector() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert parse_field_selector("spec.nodeName=n1,status.phase=Running").matches(pod)
    assert parse_field_selector("spec.nodeName!=n2").matches(pod)
    assert not parse_field_selector("metadata.name=q").matches(pod)
    assert parse_field_selector("spec.nodeName=").matches({"spec": {}})
    with pytest.raises(SelectorError):
        parse_field_selector("nonsense")


def test_set_based_numeric_operators_come_from_the_server_parser() -> None:
    sel = parse_label_selector("replicas>2,tier")
    assert sel.matches({"replicas": "3", "tier": "x"})
    assert not sel.matches({"replicas": "2", "tier": "x"})
