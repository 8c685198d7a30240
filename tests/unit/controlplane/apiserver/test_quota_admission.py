"""ResourceQuota, LimitRange and RuntimeClass admission through the
registry: a create past a quota refused with Kubernetes' message and
nothing stored, status.used charged, dry runs never charged, parallel
creates never both taking the last unit, a create and its charge one
store write (a taken name or a failed commit charges nothing), LimitRange
defaults and bounds, an unknown RuntimeClass refused."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import pytest

from controlplane.apiserver.codec import decode
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists, Forbidden, NotFound, Unavailable
from controlplane.storage import sqlite_ops


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


def test_limit_range_bounds_a_pods_totals(reg: Registry) -> None:
    """A `Pod` item bounds what the pod's containers add up to (Kubernetes'
    podRequests/podLimits, init containers and sidecars included)."""
    reg.create("LimitRange", {
        "metadata": {"name": "lr", "namespace": "default"},
        "spec": {"limits": [{"type": "Pod", "min": {"cpu": "300m"}, "max": {"memory": "1Gi"}}]},
    })  # fmt: skip
    made = pod("a", requests={"cpu": "100m"}, limits={"memory": "256Mi"})
    made["spec"]["initContainers"] = [
        {"name": "side", "image": "busybox", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "200m"}, "limits": {"memory": "512Mi"}}},
    ]  # fmt: skip
    reg.create("Pod", made)  # 300m requested, 768Mi limited
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("small", requests={"cpu": "250m"}, limits={"memory": "1Gi"}))
    assert str(err.value) == (
        'pods "small" is forbidden: minimum cpu usage per Pod is 300m, but request is 250m'
    )
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("big", requests={"cpu": "1"}, limits={"memory": "1536Mi"}))
    assert str(err.value) == (
        'pods "big" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1536Mi'
    )


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


def in_parallel(n: int, call: Callable[[int], object]) -> list[object]:
    """call(0..n-1) from n threads started together; each one's result or error."""
    start = threading.Barrier(n)
    outcomes: list[object] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = call(i)
        except Exception as err:
            outcomes[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    return outcomes


def test_parallel_creates_take_the_last_unit_once(reg: Registry) -> None:
    quota(reg, {"pods": "5"}, {"pods": "0"})
    outcomes = in_parallel(20, lambda i: reg.create("Pod", pod(f"p{i}")))
    refused = [o for o in outcomes if isinstance(o, Forbidden)]
    assert len(refused) == 15, outcomes
    assert all("exceeded quota: q, requested: pods=1, used: pods=5, limited: pods=5" in str(o)
               for o in refused)  # fmt: skip
    assert len(reg.list("Pod", "default").items) == 5
    assert used(reg) == {"pods": "5"}


def test_a_taken_name_is_neither_stored_nor_charged(reg: Registry) -> None:
    quota(reg, {"pods": "3"}, {"pods": "0"})
    reg.create("Pod", pod("a"))
    with pytest.raises(AlreadyExists):
        reg.create("Pod", pod("a"))
    assert used(reg) == {"pods": "1"}
    # Many creates of one name at once: one is stored, one unit charged.
    outcomes = in_parallel(8, lambda i: reg.create("Pod", pod("same")))
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1, outcomes
    assert sum(isinstance(o, AlreadyExists) for o in outcomes) == 7, outcomes
    assert used(reg) == {"pods": "2"}


def test_generated_names_are_charged_once_each(reg: Registry) -> None:
    quota(reg, {"pods": "4"}, {"pods": "0"})
    made = pod("")
    del made["metadata"]["name"]
    made["metadata"]["generateName"] = "g-"
    outcomes = in_parallel(6, lambda i: reg.create("Pod", made))
    assert sum(isinstance(o, Forbidden) for o in outcomes) == 2, outcomes
    assert used(reg) == {"pods": "4"}
    assert len(reg.list("Pod", "default").items) == 4


def test_a_failed_write_neither_stores_nor_charges(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The charge and the object are one transaction: a commit that fails
    (a disk error) leaves neither."""
    quota(reg, {"pods": "3"}, {"pods": "0"})
    real = sqlite_ops.update_and_create

    def failing(updates: Any, creates: Any) -> sqlite_ops.Op:
        op = real(updates, creates)

        def broken(cur: sqlite3.Cursor, rev: int) -> Any:
            op(cur, rev)
            raise sqlite3.OperationalError("disk I/O error")

        return broken

    monkeypatch.setattr(sqlite_ops, "update_and_create", failing)
    with pytest.raises(Unavailable):
        reg.create("Pod", pod("a"))
    monkeypatch.undo()
    with pytest.raises(NotFound):
        reg.get("Pod", "a", "default")
    assert used(reg) == {"pods": "0"}
    reg.create("Pod", pod("a"))
    assert used(reg) == {"pods": "1"}


def test_updates_are_charged_what_they_add(reg: Registry) -> None:
    quota(reg, {"services.nodeports": "1", "services": "5"},
          {"services.nodeports": "0", "services": "0"})  # fmt: skip
    svc = {"metadata": {"name": "s", "namespace": "default"},
           "spec": {"ports": [{"port": 80}], "selector": {"app": "a"}}}  # fmt: skip
    reg.create("Service", svc)
    assert used(reg) == {"services": "1", "services.nodeports": "0"}
    current = decode(reg.get("Service", "s", "default")[0])
    current["spec"]["type"] = "NodePort"
    reg.update("Service", current)
    assert used(reg) == {"services": "1", "services.nodeports": "1"}
