"""The hook that keeps served kinds in step with stored CRDs, over a real
registry and SQLite store (no server): a created CRD serves its kind at once,
its objects are validated, defaulted and pruned by the registry, a deleted
CRD stops being served and its objects go, and start-up serves stored CRDs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.api import crd, jsoncodec, kinds
from controlplane.apiserver.codec import ROOT, decode
from controlplane.apiserver.crd_kinds import CrdKinds
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Invalid
from controlplane.storage.interface import Event, EventType
from controlplane.storage.sqlite import SqliteStore
from tests.fakes.crds import widget_crd
from tests.harness.wait import wait_for

CRD_KEY = f"{ROOT}customresourcedefinitions/widgets.example.com"
KEY = "Widget.example.com"


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[Registry]:
    # The kinds are process-wide: a module run before this one in the same
    # pytest worker (an in-process API server of another layer) may have
    # left a Widget served with another schema, and a CRD create serves its
    # kind only when none is (a make test failure: fields neither pruned
    # nor defaulted).
    crd.unregister("widgets.example.com")
    store = SqliteStore(tmp_path / "db")
    try:
        registry = Registry(store)
        registry.create(
            "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        )
        yield registry
    finally:
        store.close()  # first: its listener could serve the CRD again
        crd.unregister("widgets.example.com")


def hooked(registry: Registry) -> CrdKinds:
    hook = CrdKinds(registry)
    registry.admission["CustomResourceDefinition"] = hook.admit
    hook.start()
    return hook


def widget(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_created_crd_serves_its_kind_at_once(registry: Registry) -> None:
    hooked(registry)
    data, _ = registry.create("CustomResourceDefinition", widget_crd())
    stored = decode(data)
    assert {c["type"] for c in stored["status"]["conditions"]} == {"NamesAccepted", "Established"}
    assert kinds.by_kind(KEY).plural == "widgets" and kinds.lookup("widgets").key == KEY
    data, _ = registry.create(KEY, widget("w1", size=2, junk=1), namespace="default")
    assert decode(data)["spec"] == {"size": 2, "color": "red"}
    with pytest.raises(Invalid, match=r"spec\.size"):
        registry.create(KEY, widget("w2", size=99), namespace="default")


def test_invalid_crd_is_refused_and_not_served(registry: Registry) -> None:
    hooked(registry)
    with pytest.raises(Invalid, match=r"spec\.scope"):
        registry.create("CustomResourceDefinition", widget_crd(scope="Galaxy"))
    assert not crd.is_custom(KEY)


def test_deleted_crd_stops_serving_and_its_objects_go(registry: Registry) -> None:
    hook = hooked(registry)
    registry.create("CustomResourceDefinition", widget_crd())
    registry.create(KEY, widget("w1", size=1), namespace="default")
    assert registry.store.range(f"{ROOT}widgets.example.com/").items
    kv = registry.store.get(CRD_KEY)
    registry.delete("CustomResourceDefinition", "widgets.example.com")
    hook.on_event(Event(EventType.DELETE, CRD_KEY, kv.value, kv.mod_rev + 10))
    assert not crd.is_custom(KEY)
    wait_for(
        lambda: not registry.store.range(f"{ROOT}widgets.example.com/").items,
        message="widgets purged",
    )


def test_update_event_follows_changes(registry: Registry) -> None:
    hook = hooked(registry)
    registry.create("CustomResourceDefinition", widget_crd())
    changed = widget_crd(names={"plural": "widgets", "kind": "Widget", "shortNames": ["wdg"]})
    hook.on_event(Event(EventType.UPDATE, CRD_KEY, jsoncodec.dumps(changed), 99))
    assert kinds.lookup("wdg").kind == "Widget"


def test_start_serves_stored_crds(registry: Registry) -> None:
    hooked(registry)
    registry.create("CustomResourceDefinition", widget_crd())
    crd.unregister("widgets.example.com")
    CrdKinds(registry).start()
    assert crd.is_custom(KEY)


def test_a_schema_requiring_metadata_accepts_objects(registry: Registry) -> None:
    """Argo CD's Application, Traefik's and cert-manager's Challenge and Order
    CRDs list `metadata` (Argo CD also apiVersion and kind) among the root's
    required properties: the server always has them, so objects are accepted;
    the schema's other required properties still count."""
    hooked(registry)
    definition = widget_crd()
    schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["required"] = ["apiVersion", "kind", "metadata", "spec"]
    schema["properties"]["metadata"] = {"type": "object"}
    registry.create("CustomResourceDefinition", definition)
    data, _ = registry.create(KEY, widget("needs-meta", size=2), namespace="default")
    assert decode(data)["metadata"]["name"] == "needs-meta"
    no_spec = widget("no-spec")
    del no_spec["spec"]
    with pytest.raises(Invalid, match="spec: Required value"):
        registry.create(KEY, no_spec, namespace="default")
