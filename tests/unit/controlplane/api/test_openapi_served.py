"""The OpenAPI documents as served: a CRD change rebuilds its own
group/version's document (new JSON, new hash in the index), and only it;
/openapi/v2 follows the change too."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from controlplane.api import crd, openapi, openapi_etag
from controlplane.client.errors import NotFound
from tests.fakes.crds import widget_crd


@pytest.fixture
def widgets() -> Iterator[None]:
    crd.register(widget_crd())
    try:
        yield
    finally:
        crd.unregister("widgets.example.com")


def _size_schema(doc: dict[str, object]) -> object:
    schemas = doc["components"]["schemas"]  # type: ignore[index]
    return schemas["com.example.v1.Widget"]["properties"]["spec"]["properties"]["size"]


def test_a_documents_hash_is_its_etag() -> None:
    served = openapi.v3_served("apps", "v1")
    assert served.etag == openapi_etag.etag_of(served.body) and len(served.etag) == 128
    url = openapi.v3_paths()["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url == f"/openapi/v3/apis/apps/v1?hash={served.etag}"
    assert json.loads(served.body) == openapi.v3("apps", "v1")


def test_a_crd_change_rebuilds_its_document_only(widgets: None) -> None:
    before = openapi.v3_served("example.com", "v1")
    apps = openapi.v3_served("apps", "v1")
    index = openapi.v3_paths()["paths"]
    assert _size_schema(json.loads(before.body))["maximum"] == 10  # type: ignore[index]
    v2_spec = openapi.v2()["definitions"]["com.example.v1.Widget"]["properties"]["spec"]
    assert v2_spec["properties"]["size"]["maximum"] == 10  # /openapi/v2 built before the change
    changed = widget_crd()
    spec_props = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    spec_props["spec"]["properties"]["size"]["maximum"] = 20
    crd.register(changed)

    after = openapi.v3_served("example.com", "v1")
    assert after.etag != before.etag
    assert _size_schema(json.loads(after.body))["maximum"] == 20  # type: ignore[index]
    new_index = openapi.v3_paths()["paths"]
    assert new_index["apis/example.com/v1"] != index["apis/example.com/v1"]
    assert new_index["apis/example.com/v1"]["serverRelativeURL"].endswith(after.etag)
    # Another group's document is the one already built, not built again.
    assert openapi.v3_served("apps", "v1") is apps
    assert new_index["apis/apps/v1"] == index["apis/apps/v1"]
    v2_spec = openapi.v2()["definitions"]["com.example.v1.Widget"]["properties"]["spec"]
    assert v2_spec["properties"]["size"]["maximum"] == 20
    assert (
        json.loads(openapi.v2_json())["definitions"]["com.example.v1.Widget"]
        == (openapi.v2()["definitions"]["com.example.v1.Widget"])
    )


def test_a_removed_crds_document_is_gone(widgets: None) -> None:
    openapi.v3_served("example.com", "v1")
    crd.unregister("widgets.example.com")
    try:
        assert "apis/example.com/v1" not in openapi.v3_paths()["paths"]
        with pytest.raises(NotFound, match="does not serve"):
            openapi.v3_served("example.com", "v1")
        assert "com.example.v1.Widget" not in openapi.v2()["definitions"]
    finally:
        crd.register(widget_crd())
