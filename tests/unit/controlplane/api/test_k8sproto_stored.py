"""Protobuf answers of stored objects (k8sproto/stored.py): the same objects as
envelope's encoding whatever the caches hold, a cached answer used only for
the very bytes and kind it was made from, and the caches bounded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import codec, envelope, stored
from tests.fakes.k8sproto_examples import EXAMPLES

OBJECTS = [o for o in EXAMPLES if isinstance(o.get("metadata"), dict)]


@pytest.fixture(autouse=True)
def empty_caches() -> Iterator[None]:
    stored.clear()
    yield
    stored.clear()


def at(obj: dict[str, Any], rev: int) -> dict[str, Any]:
    """The object as served at `rev`: its resourceVersion written in."""
    out: dict[str, Any] = jsoncodec.loads(jsoncodec.dumps(obj))
    out["metadata"]["resourceVersion"] = str(rev)
    return out


def pod(name: str, image: str = "busybox") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}",
                         "labels": {"b": "2", "a": "1"},
                         "creationTimestamp": "2026-01-02T03:04:05Z",
                         "managedFields": [{"manager": "kubectl", "operation": "Update",
                                            "apiVersion": "v1", "time": "2026-01-02T03:04:05Z",
                                            "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:spec": {"f:containers": {}}}}]},
            "spec": {"containers": [{"name": "c", "image": image}]},
            "status": {"phase": "Pending"}}  # fmt: skip


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: f"{o['apiVersion']}/{o['kind']}")
def test_every_example_is_served_as_envelope_encodes_it(obj: dict[str, Any]) -> None:
    data = jsoncodec.dumps(obj)
    api_version, kind = obj["apiVersion"], obj["kind"]
    for _ in range(2):  # first encoded, then from the caches
        document = stored.document(data, 7, api_version, kind)
        assert envelope.decode(document) == at(obj, 7)
        frames = envelope.read_frames(stored.watch_frame("MODIFIED", data, 7, api_version, kind))
        assert frames == [("MODIFIED", at(obj, 7))]


def test_a_list_holds_each_item_at_its_revision() -> None:
    items = [(jsoncodec.dumps(pod(f"p{i}")), 10 + i) for i in range(3)]
    for _ in range(2):
        doc = stored.list_document(items, {"resourceVersion": "20"}, "v1", "Pod")
        expected = envelope.encode_list(
            "v1", "Pod", [at(pod(f"p{i}"), 10 + i) for i in range(3)], {"resourceVersion": "20"}
        )
        assert _list_objects(doc) == _list_objects(expected)
        assert len(_list_objects(doc)["items"]) == 3


def _list_objects(document: bytes) -> Any:
    _, kind, raw = codec.unwrap(document)
    assert kind == "PodList"
    return codec.decode(raw, envelope.message_of("v1", "PodList"))


def test_a_cached_answer_is_used_only_for_its_own_bytes_and_kind() -> None:
    first = jsoncodec.dumps(pod("a"))
    other = jsoncodec.dumps(pod("b"))  # another store in the process, the same revision
    assert envelope.decode(stored.document(first, 5, "v1", "Pod"))["metadata"]["name"] == "a"
    assert envelope.decode(stored.document(other, 5, "v1", "Pod"))["metadata"]["name"] == "b"
    assert envelope.decode(stored.document(first, 5, "v1", "Pod"))["metadata"]["name"] == "a"
    template = {"apiVersion": "v1", "kind": "PodTemplate",
                "metadata": {"name": "a", "namespace": "default"},
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}  # fmt: skip
    served = envelope.decode(stored.document(jsoncodec.dumps(template), 5, "v1", "PodTemplate"))
    assert served["kind"] == "PodTemplate" and served["template"] == template["template"]


def test_a_create_answer_is_the_stored_object_and_serves_its_later_reads() -> None:
    obj = pod("made")
    data = jsoncodec.dumps(obj)
    written = at(obj, 9)
    answer = stored.document(data, 9, "v1", "Pod", written)
    assert envelope.decode(answer) == written
    assert stored.document(data, 9, "v1", "Pod") == answer  # the get: from the cache
    frames = envelope.read_frames(stored.watch_frame("ADDED", data, 9, "v1", "Pod"))
    assert frames == [("ADDED", written)]


def test_a_dry_run_answer_is_not_kept() -> None:
    data = jsoncodec.dumps(pod("dry"))
    stored.document(data, 0, "v1", "Pod", pod("dry"))
    assert 0 not in stored._answers.items


def test_objects_of_one_template_share_their_parts() -> None:
    for i in range(3):
        obj = pod(f"r{i}")
        assert envelope.decode(stored.document(jsoncodec.dumps(obj), 30 + i, "v1", "Pod")) == at(
            obj, 30 + i
        )
    specs = [key for key in stored._parts.items if key[0] == "core/v1.PodSpec"]
    assert len(specs) == 1
    changed = pod("r9", image="nginx")  # a changed spec is its own part
    assert envelope.decode(stored.document(jsoncodec.dumps(changed), 39, "v1", "Pod")) == at(
        changed, 39
    )


def test_labels_are_written_in_gos_sorted_key_order() -> None:
    document = stored.document(jsoncodec.dumps(pod("s")), 3, "v1", "Pod")
    assert document.index(b"\n\x01a\x12\x011") < document.index(b"\n\x01b\x12\x012")


def test_the_caches_stay_within_their_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored._answers, "budget", 64 * 1024)
    monkeypatch.setattr(stored._parts, "budget", 16 * 1024)
    for i in range(300):
        obj = pod(f"n{i}", image=f"img{i}")  # every spec new
        data = jsoncodec.dumps(obj)
        assert envelope.decode(stored.document(data, 100 + i, "v1", "Pod")) == at(obj, 100 + i)
        assert stored._answers.size <= 64 * 1024 and stored._parts.size <= 16 * 1024
    assert 100 not in stored._answers.items and 399 in stored._answers.items
    assert stored._answers.size == sum(entry[-1] for entry in stored._answers.items.values())


def test_metadata_is_written_in_field_order_whatever_the_order_of_its_keys() -> None:
    meta = pod("m")["metadata"] | {
        "generation": 2, "finalizers": ["a/b"], "deletionGracePeriodSeconds": 30,
        "deletionTimestamp": "2026-01-02T03:04:06Z",
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r",
                             "uid": "u", "controller": True}],
    }  # fmt: skip
    orders = [list(meta), sorted(meta), sorted(meta, reverse=True)]
    answers = set()
    for keys in orders:
        obj = {**pod("m"), "metadata": {key: meta[key] for key in keys}}
        answers.add(stored.document(jsoncodec.dumps(obj), 0, "v1", "Pod"))
    assert len(answers) == 1
    assert envelope.decode(answers.pop())["metadata"] == meta


def test_metadata_the_writer_cannot_take_is_written_by_the_codec() -> None:
    odds: list[dict[str, Any]] = [
        {"finalizers": "not-a-list"}, {"generation": "2"}, {"unknownKey": "x"},
        {"creationTimestamp": "yesterday"}, {"labels": {"a": 1}}, {"labels": {"a": []}},
    ]  # fmt: skip
    for odd in odds:
        obj = {**pod("o"), "metadata": {"name": "o", **odd}}
        assert envelope.decode(stored.document(jsoncodec.dumps(obj), 0, "v1", "Pod")) == (
            envelope.decode(envelope.encode(obj))
        )


def test_creates_answers_are_kept_apart_and_never_push_out_reads_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stored._recent, "budget", 16 * 1024)
    read = jsoncodec.dumps(pod("read"))
    stored.document(read, 5, "v1", "Pod")  # a get's answer
    for i in range(100):
        obj = pod(f"c{i}", image=f"img{i}")
        stored.document(jsoncodec.dumps(obj), 100 + i, "v1", "Pod", at(obj, 100 + i))
        assert stored._recent.size <= 16 * 1024
    assert list(stored._answers.items) == [5]  # the creates' did not push it out
    assert 199 in stored._recent.items and 100 not in stored._recent.items
    last = jsoncodec.dumps(pod("c99", image="img99"))
    answer = stored._recent.items[199][4]
    assert stored.document(last, 199, "v1", "Pod").endswith(answer + b"\x1a\x00\x22\x00")
    first = pod("c0", image="img0")  # pushed out: encoded again, as it was stored
    again = stored.document(jsoncodec.dumps(first), 100, "v1", "Pod")
    assert envelope.decode(again) == at(first, 100)
    assert 100 in stored._answers.items
