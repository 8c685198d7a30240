"""Both OpenAPI documents describe every nested type of the built-in kinds to
its leaves (issue 28): every property of every definition has a type (or a
reference that resolves) and a non-empty description, the structure and
formats come from Kubernetes' messages (k8sproto/table.py), and the kinds'
own descriptions are kept."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import openapi
from controlplane.api.kinds.registry import all_kinds, builtin_kinds, schema_types

V2 = "#/definitions/"
V3 = "#/components/schemas/"


def documents() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(label, $ref prefix, definitions) of /openapi/v2 and every v3 document."""
    yield "v2", V2, openapi.v2()["definitions"]
    for key in openapi.v3_paths()["paths"]:
        _, *group, version = key.split("/")
        doc = openapi.v3(group[0] if group else "", version)
        yield key, V3, doc["components"]["schemas"]


def refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from refs(item)


def custom(definition: dict[str, Any]) -> bool:
    """Whether a definition is a kind registered at run time (a CRD's)."""
    builtin = {(k.api_version, k.kind) for k in builtin_kinds()}
    registered = {(k.api_version, k.kind) for k in all_kinds()} - builtin
    return any(
        ("/".join(filter(None, (g["group"], g["version"]))), g["kind"]) in registered
        for g in definition.get("x-kubernetes-group-version-kind", ())
    )


def typed(schema: dict[str, Any]) -> bool:
    """Whether a property says what it holds: a type, a reference, or a schema
    built of those (allOf/oneOf), or preserve-unknown-fields for free form."""
    if "type" in schema or "$ref" in schema:
        return True
    parts = [*schema.get("allOf", ()), *schema.get("oneOf", ()), *schema.get("anyOf", ())]
    return bool(parts) and all(typed(p) for p in parts)


def test_every_property_has_a_type_and_a_description_and_every_ref_resolves() -> None:
    checked = 0
    for label, prefix, definitions in documents():
        for name, definition in definitions.items():
            for ref in refs(definition):
                assert ref.startswith(prefix) and ref[len(prefix) :] in definitions, (
                    label, name, ref)  # fmt: skip
            if not name.startswith("io.k8s.") or custom(definition):
                # Volcano's kinds, and custom resources (another test of this
                # process may have registered one, under any group, io.k8s
                # ones included): described only as far as their schemas say.
                continue
            assert definition.get("description"), (label, name)
            for field, prop in definition.get("properties", {}).items():
                assert typed(prop), (label, name, field, prop)
                assert str(prop.get("description", "")).strip(), (label, name, field)
                checked += 1
    assert checked > 5000  # every group version's document, v2 included


@pytest.mark.parametrize("prefix", [V2, V3])
def test_nested_types_to_the_leaves_with_kubernetes_names(prefix: str) -> None:
    if prefix == V2:
        schemas = openapi.v2()["definitions"]
    else:  # apps/v1 with the core types it refers to
        schemas = openapi.v3("apps", "v1")["components"]["schemas"]
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert prefix + "io.k8s.api.apps.v1.DeploymentStrategy" in list(refs(strategy))
    rolling = schemas["io.k8s.api.apps.v1.RollingUpdateDeployment"]["properties"]
    assert list(refs(rolling["maxSurge"])) == [
        prefix + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
    ]
    intstr = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert intstr["format"] == "int-or-string"
    spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert spec["terminationGracePeriodSeconds"]["format"] == "int64"
    container = schemas["io.k8s.api.core.v1.Container"]["properties"]
    assert prefix + "io.k8s.api.core.v1.Probe" in list(refs(container["livenessProbe"]))
    probe = schemas["io.k8s.api.core.v1.Probe"]["properties"]
    assert probe["periodSeconds"]["format"] == "int32"
    assert prefix + "io.k8s.api.core.v1.HTTPGetAction" in list(refs(probe["httpGet"]))
    conditions = schemas["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"]
    assert conditions["items"] == {"$ref": prefix + "io.k8s.api.apps.v1.DeploymentCondition"}
    assert conditions["x-kubernetes-patch-merge-key"] == "type"
    condition = schemas["io.k8s.api.apps.v1.DeploymentCondition"]["properties"]
    assert prefix + "io.k8s.apimachinery.pkg.apis.meta.v1.Time" in list(
        refs(condition["lastTransitionTime"]))  # fmt: skip
    time = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]
    assert (time["type"], time["format"]) == ("string", "date-time")
    volume = schemas["io.k8s.api.core.v1.Volume"]["properties"]  # VolumeSource inlined
    assert prefix + "io.k8s.api.core.v1.HostPathVolumeSource" in list(refs(volume["hostPath"]))
    host_path = schemas["io.k8s.api.core.v1.HostPathVolumeSource"]
    assert set(host_path["properties"]) == {"path", "type"}


def test_the_kinds_own_descriptions_are_kept() -> None:
    definitions = openapi.v2()["definitions"]
    for key, t in schema_types().items():
        published = definitions.get(t.full_name(key))
        if published is None:
            continue  # a type of a kind no document serves
        assert published["description"] == t.description, key
        for field, (_, description) in t.fields.items():
            assert published["properties"][field]["description"] == description, (key, field)


def test_quantities_and_kinds_only_the_messages_describe() -> None:
    v2 = openapi.v2()["definitions"]
    quantity = v2["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["type"] == "string"
    v3 = openapi.v3("", "v1")["components"]["schemas"]
    assert v3["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [
        {"type": "string"}, {"type": "number"}]  # fmt: skip
    limits = v3["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["limits"]
    assert limits["additionalProperties"] == {
        "$ref": V3 + "io.k8s.apimachinery.pkg.api.resource.Quantity"
    }
    # SubjectAccessReview has no schema type: its definition comes from the messages.
    review = v2["io.k8s.api.authorization.v1.SubjectAccessReview"]
    assert review["x-kubernetes-group-version-kind"] == [
        {"group": "authorization.k8s.io", "kind": "SubjectAccessReview", "version": "v1"}
    ]
    assert "resourceAttributes" in v2["io.k8s.api.authorization.v1.SubjectAccessReviewSpec"][
        "properties"]  # fmt: skip
