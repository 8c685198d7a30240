"""Pure tables: kind lookup, selectors, merge patch, quantities, defaults, validation."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from controlplane.api import defaults, jsoncodec
from controlplane.api.kinds import UnknownKind, lookup
from controlplane.api.merge_patch import merge_patch
from controlplane.api.quantity import parse_quantity
from controlplane.api.selectors import (
    SelectorError,
    from_structured,
    parse_field_selector,
    parse_label_selector,
    selector_string,
)
from controlplane.api.validation import validate


@pytest.mark.parametrize(
    ("name", "kind"),
    [("po", "Pod"), ("Pods", "Pod"), ("deploy", "Deployment"), ("deployments.apps", "Deployment"),
     ("rs", "ReplicaSet"), ("svc", "Service"), ("NS", "Namespace"), ("no", "Node"),
     ("hpa", "HorizontalPodAutoscaler"), ("ds", "DaemonSet"), ("sts", "StatefulSet"),
     ("cj", "CronJob"), ("ep", "Endpoints"), ("cm", "ConfigMap"), ("ev", "Event"),
     ("pc", "PriorityClass"), ("podgroup", "PodGroup"), ("lease", "Lease"), ("jobs", "Job"),
     ("secret", "Secret")],
)  # fmt: skip
def test_kind_lookup(name: str, kind: str) -> None:
    assert lookup(name).kind == kind


def test_unknown_kind_message_lists_kinds() -> None:
    with pytest.raises(UnknownKind, match="supported kinds: Namespace, Node, Pod"):
        lookup("gizmo")


@pytest.mark.parametrize(
    ("selector", "labels", "match"),
    [("", {}, True), ("a=b", {"a": "b"}, True), ("a=b", {"a": "c"}, False),
     ("a!=b", {}, True), ("a in (x,y)", {"a": "y"}, True), ("a notin (x)", {"a": "x"}, False),
     ("a", {"a": ""}, True), ("!a", {"a": "1"}, False), ("a,b=2", {"a": "1", "b": "2"}, True),
     ("n>3", {"n": "4"}, True), ("n<3", {"n": "4"}, False),
     ("app.kubernetes.io/name=web", {"app.kubernetes.io/name": "web"}, True)],
)  # fmt: skip
def test_label_selectors(selector: str, labels: dict[str, str], match: bool) -> None:
    assert parse_label_selector(selector).matches(labels) is match


@pytest.mark.parametrize("bad", ["a in (x", "=b", "a==", "a in ()", "a=b c"])
def test_bad_label_selectors(bad: str) -> None:
    if bad == "a==":  # an empty value is allowed: `a==` selects a="".
        assert parse_label_selector(bad).matches({"a": ""})
        return
    with pytest.raises(SelectorError):
        parse_label_selector(bad)


def test_structured_selectors() -> None:
    sel = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe", "be"]}]}  # fmt: skip
    assert from_structured(sel).matches({"app": "web", "tier": "fe"})
    assert not from_structured(sel).matches({"app": "web"})
    assert selector_string(sel) == "app=web,tier in (fe,be)"


def test_field_selectors() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Running"}}
    assert parse_field_selector("metadata.name=p,status.phase!=Failed").matches(obj)
    assert parse_field_selector("spec.nodeName=").matches(obj)
    assert not parse_field_selector("spec.nodeName=n1").matches(obj)


def test_merge_patch_rfc7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "l": [3], "n": {"x": 1}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}}
    assert target["c"] == {"d": "e", "f": "g"}  # untouched
    # RFC 7386's own examples: a non-object value replaced by an object patch,
    # nested nulls, and a patch value that is later changed is not shared.
    assert merge_patch({"a": "foo"}, {"a": {"b": "c", "d": None}}) == {"a": {"b": "c"}}
    assert merge_patch({"a": [{"b": "c"}]}, {"a": [1]}) == {"a": [1]}
    assert merge_patch({"e": None}, {"a": 1}) == {"e": None, "a": 1}
    assert merge_patch({"a": "b"}, ["c"]) == ["c"]
    shared = {"x": [1]}
    merged = merge_patch({}, {"k": shared})
    shared["x"].append(2)
    assert merged == {"k": {"x": [1]}}


def test_clone_is_a_deep_copy_including_big_integers() -> None:
    values: list[object] = [{"a": [1, {"b": None}], "c": 1.5, "t": True}, {"big": 2**70}, [1, "x"]]
    for value in values:
        same = jsoncodec.clone(value)
        assert same == value and same is not value
    nested = {"a": {"b": [1]}}
    copied = jsoncodec.clone(nested)
    copied["a"]["b"].append(2)
    assert nested == {"a": {"b": [1]}}


@pytest.mark.parametrize(
    ("text", "value"),
    [("100m", Fraction(1, 10)), ("0.1", Fraction(1, 10)), ("1Gi", Fraction(2**30)),
     ("64Mi", Fraction(64 * 2**20)), ("1G", Fraction(10**9)), ("2e3", Fraction(2000)), (3, 3)],
)  # fmt: skip
def test_quantities(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_deployment_defaults() -> None:
    d: dict[str, Any] = {
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:latest"}]}}}
    }
    defaults.apply_defaults("Deployment", d)
    assert d["spec"]["replicas"] == 1
    assert d["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }  # fmt: skip
    assert d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"


@pytest.mark.parametrize(
    ("kind", "obj", "problem"),
    [
        ("Pod", {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": []}},
         "spec.containers: Required value"),
        ("Pod", {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [
            {"name": "c", "image": "i", "ports": [{"containerPort": 70000}]}]}},
         "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be less than or "
         "equal to 65535"),
        ("Pod", {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [
            {"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"},
                                                       "limits": {"cpu": "1"}}}]}},
         'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal '
         "to cpu limit of 1"),
        ("Service", {"metadata": {"name": "s", "namespace": "d"}, "spec": {"ports": [
            {"port": 80}, {"port": 81}]}}, "spec.ports[0].name: required"),
        ("HorizontalPodAutoscaler", {"metadata": {"name": "h", "namespace": "d"}, "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "x"}, "minReplicas": 5,
            "maxReplicas": 2}}, "spec.minReplicas: must be <= spec.maxReplicas"),
        ("CronJob", {"metadata": {"name": "c", "namespace": "d"}, "spec": {"schedule": "bad",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "i"}]}}}}}}, "spec.schedule"),
        ("PriorityClass", {"metadata": {"name": "x"}, "value": 2000000000}, "value: Invalid value: 2000000000: must be less than or equal to"),
        ("Node", {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Bad"}]}},
         'spec.taints[0].effect: Unsupported value: "Bad"'),
        ("Lease", {"metadata": {"name": "l", "namespace": "d"}, "spec": {
            "leaseDurationSeconds": 0}}, "spec.leaseDurationSeconds: Invalid value: 0: must be greater than or equal to 1"),
        ("ConfigMap", {"metadata": {"name": "c", "namespace": "d"}, "data": {"bad key": "x"}},
         "data.bad key: invalid key"),
        ("Pod", {"metadata": {"name": "p", "namespace": "d", "labels": {"a": "-bad-"}},
                 "spec": {"containers": [{"name": "c", "image": "i"}]}},
         'metadata.labels: Invalid value: "-bad-": a valid label must be'),
    ],
)  # fmt: skip
def test_validation_names_the_field(kind: str, obj: dict[str, Any], problem: str) -> None:
    problems = validate(kind, obj)
    assert any(problem in p for p in problems), problems
