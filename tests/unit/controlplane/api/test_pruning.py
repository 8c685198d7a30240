"""Unknown fields of built-in kinds are dropped at any depth, as Kubernetes
drops them when it decodes a request into its Go structs: below the
structures skiff's schema leaves free-form too, by Kubernetes' messages, which
also keep the fields skiff's schema does not list; kinds neither describes
keep what they hold."""

from __future__ import annotations

import json
from typing import Any

from controlplane.api import k8sfields, openapi, pruning
from controlplane.api.k8sproto import codec, envelope
from controlplane.api.kinds.registry import schema_types
from tests.fakes.k8sproto_examples import EXAMPLES


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "colour": "blue"},
        "spec": {
            "replicas": 2,
            "foo": 1,
            "strategy": {"type": "Recreate", "anything": {"goes": True}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "x", "imagee": "typo"},
                        {"name": "b", "image": "y", "ports": [{"containerPort": 80, "hostt": 1}]},
                    ],
                    "affinity": {"nodeAffinity": {"made": "up"}},
                },
            },
        },
        "status": {"replicas": 2, "whatever": "kept"},
        "extra": "top",
    }


def test_unknown_fields_are_dropped_top_level_and_nested_and_named() -> None:
    obj = deployment()
    removed = pruning.prune(obj)
    assert removed == [
        "extra",
        "metadata.colour",
        "spec.foo",
        "spec.template.spec.containers[0].imagee",
        "spec.template.spec.containers[1].ports[0].hostt",
        "spec.template.spec.affinity.nodeAffinity.made",
        "spec.strategy.anything",
        "status.whatever",
    ]
    assert "extra" not in obj and "colour" not in obj["metadata"]
    assert "foo" not in obj["spec"]
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert containers[0] == {"name": "a", "image": "x"}
    assert containers[1]["ports"] == [{"containerPort": 80}]


def test_below_free_form_fields_and_in_status_kubernetes_types_decide() -> None:
    obj = deployment()
    pruning.prune(obj)
    assert obj["spec"]["strategy"] == {"type": "Recreate"}
    assert obj["spec"]["template"]["spec"]["affinity"] == {"nodeAffinity": {}}
    assert obj["status"] == {"replicas": 2}


def test_prune_drops_what_validate_names() -> None:
    """One set: a warning names exactly what is not stored."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "bogus": 1},
        "spec": {
            "containers": [{"name": "a", "image": "x", "unknown": 1,
                            "livenessProbe": {"exec": {"command": ["true"], "shell": 1}},
                            "securityContext": {"capabilities": {"add": ["NET_ADMIN"], "x": 1}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "y": 2}],
            "volumes": [{"name": "v", "configMap": {"name": "c", "items": [
                {"key": "a", "path": "b", "z": 3}]}}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "odd": 1}]},
    }  # fmt: skip
    named = sorted(p[len('unknown field "') : -1] for p in openapi.validate(pod))
    assert named == sorted(pruning.prune(pod))
    assert len(named) == 7
    assert openapi.validate(pod) == [] and pruning.prune(pod) == []
    assert pod["spec"]["volumes"][0]["configMap"]["items"] == [{"key": "a", "path": "b"}]


def test_fields_kubernetes_has_that_the_schema_lacks_are_kept() -> None:
    """No data loss: a field of Kubernetes' types is known even where skiff's
    schema does not list it (checked against the messages, at every depth)."""
    message = k8sfields.message_of("PodSpec")
    assert message is not None
    lacking = sorted(k8sfields.names(message) - set(schema_types()["PodSpec"].fields))
    assert lacking, "the schema lists every field of PodSpec: pick another type"
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}
    for name in lacking:
        pod["spec"][name] = "value"
    before = json.dumps(pod, sort_keys=True)
    assert pruning.prune(pod) == [] and openapi.validate(pod) == []
    assert json.dumps(pod, sort_keys=True) == before


def test_a_known_object_is_left_as_it_was() -> None:
    obj = deployment()
    pruning.prune(obj)
    again = pruning.prune(obj)
    assert again == []


def test_kinds_the_schema_does_not_describe_are_left_alone() -> None:
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "spec": {"x": 1}}
    custom = {"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"anything": 1}}
    other_version = {"apiVersion": "apps/v1beta9", "kind": "Deployment", "foo": 1}
    for obj in (queue, custom, other_version):
        before = dict(obj)
        assert pruning.prune(obj) == []
        assert obj == before


def test_maps_of_typed_values_and_wrong_types_are_walked_safely() -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"ownerReferences": ["not-an-object", {"uid": "u", "bogus": 1}]},
        "spec": {"containers": "not-a-list", "volumes": [{"name": "v", "nope": {}}]},
    }
    assert pruning.prune(pod) == [
        "metadata.ownerReferences[1].bogus",
        "spec.volumes[0].nope",
    ]
    assert pod["spec"]["containers"] == "not-a-list"  # validation reports it


def test_rbac_accounts_and_storage_kinds_are_pruned_too() -> None:
    binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r", "x": 1},
        "subjects": [{"kind": "User", "name": "alice", "nmespace": "typo"}],
    }
    assert sorted(pruning.prune(binding)) == ["roleRef.x", "subjects[0].nmespace"]
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "spec": {"local": {"path": "/x"}, "capacity": {"storage": "1Gi"}, "sizee": 1},
    }
    assert pruning.prune(volume) == ["spec.sizee"]
    assert volume["spec"] == {"local": {"path": "/x"}, "capacity": {"storage": "1Gi"}}


def test_parts_unchanged_from_the_stored_object_are_not_walked_again() -> None:
    stored = deployment()
    pruning.prune(stored)
    update = deployment()
    pruning.prune(update)
    update["metadata"]["labels"]["new"] = "label"
    update["metadata"]["bogus"] = 1
    # A stored part is trusted as it is (it was pruned when written) ...
    update["spec"]["template"]["spec"]["containers"][0]["hidden"] = 1
    stored["spec"]["template"]["spec"]["containers"][0]["hidden"] = 1
    assert pruning.prune(update, stored) == ["metadata.bogus"]
    # ... and a changed part is walked.
    update["spec"]["template"]["spec"]["containers"][0]["image"] = "z"
    assert pruning.prune(update, stored) == ["spec.template.spec.containers[0].hidden"]


def test_a_spec_seen_clean_before_is_trusted_only_as_it_was() -> None:
    first = deployment()
    del first["spec"]["foo"]
    for container in first["spec"]["template"]["spec"]["containers"]:
        container.pop("imagee", None)
        for port in container.get("ports", []):
            port.pop("hostt", None)
    pruning.prune(first)  # clean: remembered
    second = deployment()
    assert "spec.foo" in pruning.prune(second)  # another spec: walked


def test_an_object_decoded_from_protobuf_has_nothing_to_prune() -> None:
    """Why the registry skips the walk for protobuf bodies (create's `typed`):
    the decoder keeps only the message's fields, and every field of every
    kind's message is one prune knows. Checked over every kind's example,
    an unknown field number added to its body."""
    stray = b"\xf8\x7f\x01"  # field 2047, varint 1: in no Kubernetes message
    for example in EXAMPLES:
        api_version, kind, raw = codec.unwrap(envelope.encode(example))
        decoded = codec.decode(raw + stray, envelope.message_of(api_version, kind))
        assert pruning.prune(decoded, None) == [], kind
        assert decoded == {k: v for k, v in example.items() if k not in ("apiVersion", "kind")}
