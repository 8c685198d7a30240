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
