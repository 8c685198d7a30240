"""The facts kube-apiserver derives from a CRD's versions: their priority
order, the default deprecation warning, storedVersions; and conversion
None (apiVersion rewritten, read objects defaulted and pruned)."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import crd, crd_versions, kinds, validation
from tests.fakes.crds import widget_crd

Object = dict[str, Any]


def test_kube_aware_version_order() -> None:
    # Kubernetes' own example (k8s.io/apimachinery version.CompareKubeAwareVersionStrings).
    names = ["foo1", "v1beta1", "v12alpha1", "v1", "v11beta2", "v10", "v3beta1", "foo10",
             "v11alpha2", "v10beta3", "v2"]  # fmt: skip
    assert crd_versions.sorted_versions(names) == [
        "v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v1beta1", "v12alpha1",
        "v11alpha2", "foo1", "foo10",
    ]  # fmt: skip


def spec_of(*versions: Object) -> Object:
    return {"group": "example.com", "names": {"kind": "Widget"}, "versions": list(versions)}


@pytest.mark.parametrize(
    ("versions", "warning"),
    [
        (
            [{"name": "v1beta1", "served": True, "deprecated": True},
             {"name": "v1", "served": True}, {"name": "v2", "served": True}],
            "example.com/v1beta1 Widget is deprecated; use example.com/v2 Widget",
        ),
        (  # only newer, served, not deprecated versions are offered: none here
            [{"name": "v1beta1", "served": True, "deprecated": True},
             {"name": "v1", "served": True, "deprecated": True},
             {"name": "v2", "served": False}],
            "example.com/v1beta1 Widget is deprecated",
        ),
        (
            [{"name": "v1beta1", "served": True, "deprecated": True,
              "deprecationWarning": "v1beta1 goes away in 2027"}],
            "v1beta1 goes away in 2027",
        ),
        ([{"name": "v1beta1", "served": True}], ""),
    ],
)  # fmt: skip
def test_deprecation_warning(versions: list[Object], warning: str) -> None:
    spec = spec_of(*versions)
    assert crd_versions.deprecation_warning(spec, spec["versions"][0]) == warning


def test_stored_versions_append_the_storage_version() -> None:
    spec = spec_of({"name": "v1", "storage": False}, {"name": "v2", "storage": True})
    assert crd_versions.stored_versions({"storedVersions": ["v1"]}, spec) == ["v1", "v2"]
    assert crd_versions.stored_versions(None, spec) == ["v2"]
    assert crd_versions.stored_versions({"storedVersions": ["v2", "v1"]}, spec) == ["v2", "v1"]


def two_versions() -> Object:
    obj = widget_crd()
    v1 = obj["spec"]["versions"][0]
    obj["spec"]["versions"] = [v1, {**v1, "name": "v2", "storage": False}]
    return obj


def test_removing_a_stored_version_is_refused() -> None:
    old = two_versions()
    old["status"] = {"storedVersions": ["v1"]}
    new = two_versions()
    new["spec"]["versions"] = [{**new["spec"]["versions"][1], "storage": True}]
    new["status"] = {"storedVersions": ["v1", "v2"]}
    problems = validation.validate("CustomResourceDefinition", new, old)
    assert 'status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions' in (
        problems
    ), problems


def test_conversion_none_rewrites_the_api_version_only() -> None:
    info = crd.register(two_versions())
    try:
        conversion = kinds.definition(info.key).conversions["example.com/v2"]
        assert not conversion.remote
        written = {"apiVersion": "example.com/v2", "kind": "Widget",
                   "metadata": {"name": "w"}, "spec": {"replicas": 2}}  # fmt: skip
        stored = conversion.to_stored(written)
        assert stored["apiVersion"] == "example.com/v1" and stored["spec"] == {"replicas": 2}
        read = conversion.from_stored({**stored, "spec": {"replicas": 2, "unknown": 1}})
        assert read["apiVersion"] == "example.com/v2"
        assert "unknown" not in read["spec"]  # pruned by v2's schema on the way out
        assert "example.com/v1" not in kinds.definition(info.key).conversions
    finally:
        crd.unregister("widgets.example.com")
