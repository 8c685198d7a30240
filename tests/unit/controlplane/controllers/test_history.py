"""Controller history's pure rules (controlplane/controllers/history.py):
the revision data, equality, numbering and pruning, as Kubernetes'
pkg/controller/history and the DaemonSet/StatefulSet controllers keep them."""

from __future__ import annotations

from typing import Any

from controlplane.controllers import history

DS: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "DaemonSet",
    "metadata": {"name": "agent", "namespace": "ns", "uid": "u1", "annotations": {"k": "v"}},
    "spec": {"template": {"metadata": {"labels": {"app": "a"}, "creationTimestamp": None},
                          "spec": {"containers": [{"name": "c", "image": "i:1"}]}}},
}  # fmt: skip


def rev(name: str, number: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "revision": number, "data": {}}


def test_data_is_a_patch_replacing_the_template() -> None:
    data = history.patch_of(DS)
    assert data == {"spec": {"template": {
        "$patch": "replace", "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}  # fmt: skip
    assert history.template_of({"data": data}) == {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]},
    }
    # kubectl's `creationTimestamp: null` makes no other revision
    assert history.data_equal(data, history.patch_of({"spec": {"template": {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}))  # fmt: skip
    other = history.patch_of({"spec": {"template": {"spec": {"containers": [{"image": "i:2"}]}}}})
    assert not history.data_equal(data, other)


def test_new_revision_names_labels_and_owner() -> None:
    r = history.new_revision(DS, history.patch_of(DS), 3, "agent-abc", "abc", annotations=True)
    assert r["metadata"]["name"] == "agent-abc" and r["revision"] == 3
    assert r["metadata"]["labels"] == {"app": "a", "controller-revision-hash": "abc"}
    assert r["metadata"]["annotations"] == {"k": "v"}
    assert r["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u1",
        "controller": True, "blockOwnerDeletion": True}]  # fmt: skip


def test_hash_changes_with_data_and_collision_count() -> None:
    data = history.patch_of(DS)
    h = history.hash_data(data)
    assert h == history.hash_data(dict(data)) and h != history.hash_data(data, 1)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert history.revision_name("x" * 300, h) == "x" * 223 + "-" + h


def test_numbering_and_pruning() -> None:
    revs = [rev("c", 3), rev("a", 1), rev("b", 2), rev("d", 4)]
    assert [r["metadata"]["name"] for r in history.sort_revisions(revs)] == ["a", "b", "c", "d"]
    assert history.next_number(revs) == 5 and history.next_number([]) == 1
    # The live ones (current, in use by pods) never count against the limit.
    pruned = history.to_prune(revs, {"d", "a"}, 1)
    assert [r["metadata"]["name"] for r in pruned] == ["b"]
    assert history.to_prune(revs, set(), 10) == []
    assert [r["metadata"]["name"] for r in history.to_prune(revs, {"d"}, 0)] == ["a", "b", "c"]
