"""ResourceQuota, LimitRange and RuntimeClass admission through the
registry: a create past a quota refused with Kubernetes' message and
nothing stored, status.used charged, dry runs never charged, LimitRange
defaults and bounds, an unknown RuntimeClass refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.apiserver.admission import default_plugins
from controlplane.apiserver.codec import decode
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden, NotFound
from controlplane.storage.sqlite import SqliteStore


@pytest.fixture
def reg(tmp_path: Path) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "state.db")
    registry = Registry(store)
    registry.plugins = default_plugins()
    registry.create("Namespace", {"metadata": {"name": "default"}})
    yield registry
    store.close()


def pod(name: str, **resources: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "busybox"}
    if resources:
        c["resources"] = resources
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"containers": [c]}}


def quota(reg: Registry, hard: dict[str, str], used: dict[str, str], **spec: Any) -> None:
    """A quota as the controller leaves it: status.hard and status.used set."""
    reg.create("ResourceQuota", {"metadata": {"name": "q", "namespace": "default"},
                                 "spec": {"hard": hard, **spec}})  # fmt: skip
    reg.patch("ResourceQuota", "q", {"status": {"hard": hard, "used": used}}, "default",
              subresource="status")  # fmt: skip


def used(reg: Registry) -> dict[str, str]:
    found: dict[str, str] = decode(reg.get("ResourceQuota", "q", "default")[0])["status"]["used"]
    return found


def test_pods_over_quota_refused_with_kubernetes_message(reg: Registry) -> None:
    quota(reg, {"pods": "1"}, {"pods": "0"})
    reg.create("Pod", pod("a"))
    assert used(reg) == {"pods": "1"}
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("b"))
    assert str(err.value) == (
        'pods "b" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'
    )
    with pytest.raises(NotFound):
        reg.get("Pod", "b", "default")
    assert used(reg) == {"pods": "1"}


def test_dry_run_checks_but_never_charges(reg: Registry) -> None:
    quota(reg, {"pods": "1"}, {"pods": "0"})
    reg.create("Pod", pod("a"), dry_run=True)
    assert used(reg) == {"pods": "0"}


def test_compute_quota_needs_requests_and_sums_them(reg: Registry) -> None:
    quota(reg, {"requests.cpu": "1", "requests.memory": "1Gi"},
          {"requests.cpu": "0", "requests.memory": "0"})  # fmt: skip
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("bare"))
    assert "failed quota: q: must specify requests.cpu for: c; requests.memory for: c" in str(
        err.value
    )
    reg.create("Pod", pod("a", requests={"cpu": "600m", "memory": "512Mi"}))
    assert used(reg) == {"requests.cpu": "600m", "requests.memory": "512Mi"}
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("b", requests={"cpu": "600m", "memory": "64Mi"}))
    assert "requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1" in str(
        err.value
    )


def test_status_unknown_until_the_controller_counted(reg: Registry) -> None:
    quota(reg, {"pods": "1", "count/configmaps": "5"}, {"pods": "0"})
    with pytest.raises(Forbidden) as err:
        reg.create("ConfigMap", {"metadata": {"name": "c", "namespace": "default"}})
    assert str(err.value).endswith("status unknown for quota: q, resources: count/configmaps")


def test_scoped_quota_counts_only_pods_it_selects(reg: Registry) -> None:
    quota(reg, {"pods": "1"}, {"pods": "0"}, scopes=["BestEffort"])
    reg.create("Pod", pod("guaranteed", requests={"cpu": "1"}, limits={"cpu": "1"}))
    assert used(reg) == {"pods": "0"}
    reg.create("Pod", pod("besteffort"))
    with pytest.raises(Forbidden):
        reg.create("Pod", pod("besteffort2"))


def test_limit_range_defaults_and_bounds(reg: Registry) -> None:
    reg.create("LimitRange", {
        "metadata": {"name": "lr", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"},
                             "defaultRequest": {"cpu": "200m"}}]},
    })  # fmt: skip
    stored = decode(reg.create("Pod", pod("a"))[0])
    resources = stored["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "1"}, "requests": {"cpu": "200m"}}
    assert stored["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c"
    )
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("small", requests={"cpu": "50m"}))
    assert str(err.value) == (
        'pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m'
    )
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("big", limits={"cpu": "2"}))
    assert "maximum cpu usage per Container is 1, but limit is 2" in str(err.value)


def test_unknown_runtime_class_refused(reg: Registry) -> None:
    p = pod("a")
    p["spec"]["runtimeClassName"] = "gvisor"
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", p)
    assert str(err.value) == 'pods "a" is forbidden: pod rejected: RuntimeClass "gvisor" not found'
    reg.create("RuntimeClass", {"metadata": {"name": "gvisor"}, "handler": "runsc",
                                "overhead": {"podFixed": {"memory": "64Mi"}},
                                "scheduling": {"nodeSelector": {"sandbox": "yes"}}})  # fmt: skip
    stored = decode(reg.create("Pod", p)[0])
    assert stored["spec"]["overhead"] == {"memory": "64Mi"}
    assert stored["spec"]["nodeSelector"] == {"sandbox": "yes"}
