"""List is served as a stream of chunks (ListStream); the client joins them."""

from __future__ import annotations

import pytest

from controlplane.apiserver import servicer
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import ListOptions


def test_list_in_chunks_keeps_order_versions_and_continue(
    client: GrpcApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(servicer, "LIST_CHUNK", 3)
    created = [
        client.create("ConfigMap", {"metadata": {"name": f"cm-{i:02d}"}, "data": {"i": str(i)}},
                      "default")
        for i in range(10)
    ]  # fmt: skip
    full = client.list("ConfigMap", "default")
    assert [o["metadata"]["name"] for o in full.items] == [f"cm-{i:02d}" for i in range(10)]
    assert [o["metadata"]["resourceVersion"] for o in full.items] == [
        c["metadata"]["resourceVersion"] for c in created
    ]
    assert int(full.resource_version) >= int(created[-1]["metadata"]["resourceVersion"])
    assert not full.continue_token
    page = client.list("ConfigMap", "default", ListOptions(limit=7))
    assert len(page.items) == 7 and page.continue_token
    rest = client.list(
        "ConfigMap", "default", ListOptions(limit=7, continue_token=page.continue_token)
    )
    assert [o["metadata"]["name"] for o in rest.items] == ["cm-07", "cm-08", "cm-09"]
    assert not rest.continue_token
    empty = client.list("ConfigMap", "kube-public")
    assert empty.items == [] and empty.resource_version


def test_full_list_streams_pages_with_selectors_and_one_version(
    client: GrpcApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(servicer, "LIST_CHUNK", 4)
    for i in range(11):
        client.create(
            "ConfigMap",
            {"metadata": {"name": f"s-{i:02d}", "labels": {"odd": str(i % 2)}}},
            "default",
        )
    odd = client.list("ConfigMap", "default", ListOptions(label_selector="odd=1"))
    assert [o["metadata"]["name"] for o in odd.items] == [f"s-{i:02d}" for i in range(1, 11, 2)]
    full = client.list("ConfigMap", "default")
    assert len([o for o in full.items if o["metadata"]["name"].startswith("s-")]) == 11
    assert int(full.resource_version) >= max(
        int(o["metadata"]["resourceVersion"]) for o in full.items
    )
    named = client.list("ConfigMap", "default", ListOptions(field_selector="metadata.name=s-03"))
    assert [o["metadata"]["name"] for o in named.items] == ["s-03"]
