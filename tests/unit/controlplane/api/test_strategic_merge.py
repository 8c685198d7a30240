"""Strategic merge patch with the patches kubectl 1.20 sends (apply's 3-way
patch, `patch`, `edit`), every directive, and the fallback for custom kinds."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from controlplane.api import kinds, strategic_merge
from controlplane.api.patch_meta import field_meta
from controlplane.client.errors import Invalid

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def deployment(containers: list[dict[str, Any]], replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "annotations": {LAST_APPLIED: "{}"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers, "dnsPolicy": "ClusterFirst"},
            },
        },
        "status": {"replicas": replicas},
    }


NGINX = {
    "name": "nginx",
    "image": "nginx:1.19",
    "ports": [{"containerPort": 80, "protocol": "TCP"}],
    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
    "terminationMessagePath": "/dev/termination-log",
}
SIDECAR = {"name": "sidecar", "image": "busybox", "terminationMessagePath": "/dev/termination-log"}


def smp(
    original: dict[str, Any], patch: dict[str, Any], kind: str = "Deployment"
) -> dict[str, Any]:
    before = copy.deepcopy((original, patch))
    out = strategic_merge.apply(original, patch, kind)
    assert (original, patch) == before, "apply must not modify its inputs"
    return out


def test_kubectl_apply_changes_image_and_replicas() -> None:
    # What kubectl 1.20's `apply` sends when the manifest's image and replicas change.
    patch = {
        "metadata": {"annotations": {LAST_APPLIED: '{"new":1}'}},
        "spec": {
            "replicas": 5,
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}],
                    "containers": [{"image": "nginx:1.21", "name": "nginx"}],
                }
            },
        },
    }
    out = smp(deployment([NGINX]), patch)
    c = out["spec"]["template"]["spec"]["containers"]
    assert len(c) == 1 and c[0]["image"] == "nginx:1.21"
    assert c[0]["ports"] == NGINX["ports"] and c[0]["terminationMessagePath"]  # server fields kept
    assert out["spec"]["replicas"] == 5 and out["status"] == {"replicas": 2}
    assert out["metadata"]["annotations"][LAST_APPLIED] == '{"new":1}'


def test_kubectl_apply_adds_a_container() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}],
                    "containers": [{"image": "busybox", "name": "sidecar"}],
                }
            }
        }
    }
    out = smp(deployment([NGINX]), patch)
    names = [c["name"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert names == ["sidecar", "nginx"]


def test_kubectl_apply_removes_a_container() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}],
                    "containers": [{"$patch": "delete", "name": "sidecar"}],
                }
            }
        }
    }
    out = smp(deployment([NGINX, SIDECAR]), patch)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["nginx"]


def test_kubectl_apply_removes_an_env_var() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}],
                    "containers": [
                        {
                            "$setElementOrder/env": [{"name": "A"}],
                            "env": [{"$patch": "delete", "name": "B"}],
                            "name": "nginx",
                        }
                    ],
                }
            }
        }
    }
    out = smp(deployment([NGINX]), patch)
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_kubectl_apply_removes_a_field_and_switches_strategy() -> None:
    patch = {
        "spec": {
            "minReadySeconds": None,
            "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None},
        }
    }
    original = deployment([NGINX])
    original["spec"]["minReadySeconds"] = 5
    out = smp(original, patch)
    assert "minReadySeconds" not in out["spec"]
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_drops_unlisted_server_fields() -> None:
    original = deployment([NGINX])
    out = smp(original, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}})
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_kubectl_patch_ports_merge_by_container_port() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "nginx",
                            "ports": [
                                {"containerPort": 80, "name": "http"},
                                {"containerPort": 443},
                            ],
                        }
                    ]
                }
            }
        }
    }
    out = smp(deployment([NGINX]), patch)
    ports = out["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [
        {"containerPort": 80, "protocol": "TCP", "name": "http"},
        {"containerPort": 443},
    ]


def test_atomic_lists_are_replaced() -> None:
    pod = {
        "spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["x", "y"]}]}
    }
    patch = {"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["z"]}]}}
    out = smp(pod, patch, "Pod")
    assert out["spec"]["tolerations"] == [{"key": "b"}]
    assert out["spec"]["containers"] == [{"name": "c", "args": ["z"]}]


def test_finalizers_merge_and_delete_from_primitive_list() -> None:
    obj = {"metadata": {"finalizers": ["a", "b"]}}
    assert smp(obj, {"metadata": {"finalizers": ["c", "a"]}}, "Pod")["metadata"]["finalizers"] == [
        "a",
        "b",
        "c",
    ]
    out = smp(obj, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["b"]
    out = smp(obj, {"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["b", "a"]


def test_patch_replace_on_a_list_and_a_map() -> None:
    out = smp(
        deployment([NGINX, SIDECAR]),
        {
            "spec": {
                "template": {
                    "spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}
                }
            }
        },
    )
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "only", "image": "x"}]
    out = smp(
        deployment([NGINX]),
        {"spec": {"selector": {"$patch": "replace", "matchLabels": {"x": "y"}}}},
    )
    assert out["spec"]["selector"] == {"matchLabels": {"x": "y"}}


def test_patch_delete_on_a_map() -> None:
    out = smp(deployment([NGINX]), {"spec": {"strategy": {"$patch": "delete"}}})
    assert "strategy" not in out["spec"]


def test_conditions_merge_by_type() -> None:
    pod = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"},
            ]
        }
    }
    out = smp(pod, {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "Pod")
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "PodScheduled", "status": "True"},
    ]


def test_owner_references_and_volumes_merge_by_their_keys() -> None:
    pod = {
        "metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]},
        "spec": {"volumes": [{"name": "v", "emptyDir": {}}]},
    }
    patch = {
        "metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]},
        "spec": {"volumes": [{"name": "w", "configMap": {"name": "cm"}}]},
    }
    out = smp(pod, patch, "Pod")
    assert [o["uid"] for o in out["metadata"]["ownerReferences"]] == ["1", "2"]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["v", "w"]


def test_new_values_have_directives_stripped() -> None:
    out = smp({}, {"spec": {"selector": {"$patch": "merge", "matchLabels": {"a": "b", "c": None}}}})
    assert out == {"spec": {"selector": {"matchLabels": {"a": "b"}}}}


def test_cronjob_template_containers_merge() -> None:
    cj = {
        "spec": {
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}
                    }
                }
            }
        }
    }
    patch = {
        "spec": {
            "jobTemplate": {
                "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "2"}]}}}
            }
        }
    }
    out = smp(cj, patch, "CronJob")
    assert out["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "a", "image": "2"},
        {"name": "b"},
    ]


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        (
            {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}},
            ["containers[0]", "'name'"],
        ),
        ({"spec": {"template": {"spec": {"containers": ["x"]}}}}, ["containers[0]"]),
        ({"spec": {"$patch": "bogus"}}, ["spec.$patch", "bogus"]),
        ({"spec": {"strategy": {"$retainKeys": "type"}}}, ["spec.strategy.$retainKeys"]),
        (
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            ["finalizers", "must be a list"],
        ),
    ],
)
def test_bad_patches_name_the_field(patch: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(Invalid) as err:
        strategic_merge.apply(deployment([NGINX]), patch, "Deployment")
    for word in words:
        assert word in str(err.value)


def test_custom_kinds_fall_back_to_merge_patch() -> None:
    assert not strategic_merge.supports("Widget.example.com")
    assert strategic_merge.supports("Deployment")
    out = smp(
        {"spec": {"items": [1, 2], "a": 1}},
        {"spec": {"items": [3], "a": None}},
        "Widget.example.com",
    )
    assert out == {"spec": {"items": [3]}}


def test_the_table_is_declarative_and_covers_the_pod_template_of_every_workload() -> None:
    for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"):
        meta = field_meta(kind, "spec.template.spec.containers.env")
        assert meta is not None and meta.merge_key == "name"
    meta = field_meta("Pod", "spec.volumes")
    assert meta is not None and meta.merges and meta.retains_keys
    assert field_meta("Pod", "spec.tolerations") is None
    tables = {d.key: d.patch_meta for d in kinds.definitions() if d.patch_meta is not None}
    json.dumps({k: {p: m.strategy for p, m in v.items()} for k, v in tables.items()})


def test_volume_source_switch_retains_only_listed_keys() -> None:
    # kubectl apply, when a volume changes from emptyDir to configMap.
    pod = {"spec": {"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}]}}
    patch = {
        "spec": {
            "$setElementOrder/volumes": [{"name": "v"}, {"name": "w"}],
            "volumes": [
                {"$retainKeys": ["configMap", "name"], "configMap": {"name": "cm"}, "name": "v"}
            ],
        }
    }
    out = smp(pod, patch, "Pod")
    assert out["spec"]["volumes"] == [
        {"name": "v", "configMap": {"name": "cm"}},
        {"name": "w", "emptyDir": {}},
    ]


@pytest.mark.parametrize(
    ("server", "order", "expected"),
    [
        # The server-only item (s) keeps its place among the others.
        (["a", "s", "b"], ["b", "a"], ["s", "b", "a"]),
        (["a", "s", "b"], ["a", "b"], ["a", "s", "b"]),
        (["s", "a"], ["a", "n"], ["s", "a", "n"]),
        (["a", "b"], ["n", "b", "a"], ["n", "b", "a"]),
    ],
)
def test_set_element_order_with_server_only_items(
    server: list[str], order: list[str], expected: list[str]
) -> None:
    pod = {"spec": {"containers": [{"name": n} for n in server]}}
    new = [{"name": n} for n in order if n not in server]
    patch = {
        "spec": {"$setElementOrder/containers": [{"name": n} for n in order], "containers": new}
    }
    out = smp(pod, patch, "Pod")
    assert [c["name"] for c in out["spec"]["containers"]] == expected


@pytest.mark.parametrize("kind", ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"])
def test_webhooks_merge_by_name(kind: str) -> None:
    """kubectl's apply (and diff) of an unchanged webhook configuration sends
    `$setElementOrder/webhooks` with the names only; Kubernetes merges the
    list on `name`, so every webhook keeps its fields (ingress-nginx's
    manifest applied twice)."""
    hook = {
        "name": "validate.nginx.ingress.kubernetes.io",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "admission", "namespace": "ingress-nginx"}},
        "sideEffects": "None",
        "timeoutSeconds": 10,
    }
    live = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "ingress-nginx-admission"}, "webhooks": [hook]}  # fmt: skip
    patch = {"$setElementOrder/webhooks": [{"name": hook["name"]}]}
    assert smp(live, patch, kind)["webhooks"] == [hook]
    # A changed field of one webhook leaves the others' alone.
    other = {**hook, "name": "other.example.com"}
    patch = {"$setElementOrder/webhooks": [{"name": hook["name"]}, {"name": other["name"]}],
             "webhooks": [{"name": other["name"], "timeoutSeconds": 5}]}  # fmt: skip
    out = smp({**live, "webhooks": [hook, other]}, patch, kind)["webhooks"]
    assert out == [hook, {**other, "timeoutSeconds": 5}]
