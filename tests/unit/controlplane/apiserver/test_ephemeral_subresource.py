"""pods/ephemeralcontainers in the registry: only spec.ephemeralContainers
is taken from the request (defaulted as containers are), the pod's rules
apply, and a non-admin needs RBAC on pods/ephemeralcontainers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlplane.apiserver.codec import decode
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Invalid, NotFound
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    reg = Registry(SqliteStore(tmp_path / "state.db"))
    reg.create("Namespace", {"metadata": {"name": "default"}})
    reg.create("Pod", {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    return reg


def test_an_update_takes_only_ephemeral_containers(registry: Registry) -> None:
    pod = decode(registry.get("Pod", "p", "default")[0])
    pod["spec"]["containers"][0]["image"] = "nginx"
    pod["spec"]["ephemeralContainers"] = [
        {"name": "dbg", "image": "busybox", "targetContainerName": "c"}
    ]
    data, _ = registry.update("Pod", pod, "ephemeralcontainers")
    stored = decode(data)
    assert stored["spec"]["containers"][0]["image"] == "busybox"
    (ec,) = stored["spec"]["ephemeralContainers"]
    assert ec["terminationMessagePolicy"] == "File" and ec["imagePullPolicy"]
    fields = json.dumps(stored["metadata"].get("managedFields") or [])
    assert "ephemeralcontainers" in fields


def test_the_pod_rules_refuse_a_bad_one(registry: Registry) -> None:
    patch = {
        "spec": {
            "ephemeralContainers": [{"name": "x", "image": "b", "targetContainerName": "nope"}]
        }
    }
    with pytest.raises(Invalid, match='targetContainerName: Not found: "nope"'):
        registry.patch("Pod", "p", patch, "default", "ephemeralcontainers")


def test_only_pods_have_it(registry: Registry) -> None:
    registry.create("ConfigMap", {"metadata": {"name": "m", "namespace": "default"}})
    with pytest.raises(NotFound):
        registry.patch("ConfigMap", "m", {"data": {"a": "b"}}, "default", "ephemeralcontainers")


def guaranteed(cpu: str, memory: str) -> dict[str, dict[str, str]]:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def test_pods_resize_takes_only_resources_and_keeps_the_qos_class(registry: Registry) -> None:
    registry.create("Pod", {
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": guaranteed("1", "1Gi")}]},
    })  # fmt: skip
    patch = {"spec": {"containers": [{"name": "c", "image": "nginx",
                                      "resources": guaranteed("2", "2Gi")}]}}  # fmt: skip
    stored = decode(registry.patch("Pod", "g", patch, "default", "resize")[0])
    c = stored["spec"]["containers"][0]
    assert c["image"] == "busybox" and c["resources"] == guaranteed("2", "2Gi")
    burstable = {"spec": {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}]}}  # fmt: skip
    with pytest.raises(Invalid, match="Pod QOS Class may not change as a result of resizing"):
        registry.patch("Pod", "g", burstable, "default", "resize")


def test_attach_and_logs_accept_an_ephemeral_container() -> None:
    from controlplane.apiserver.rest.streams import _container

    pod = {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c"}], "ephemeralContainers": [{"name": "debugger-x"}]}}  # fmt: skip
    assert _container(pod, "debugger-x") == "debugger-x"
    assert _container(pod, "") == "c"
