from typing import Any

import pytest

from agent.backoff import Backoff
from agent.resources import container_resources, cpu_quota, cpu_shares, oom_score_adj
from controlplane.api.qos import QOSClass, qos_class


def pod_with(*resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}
    }


GUAR = {"limits": {"cpu": "500m", "memory": "128Mi"}}


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (({},), QOSClass.BEST_EFFORT),
        (({"requests": {"ephemeral-storage": "1Gi"}},), QOSClass.BEST_EFFORT),
        ((GUAR,), QOSClass.GUARANTEED),
        (
            (
                {
                    "requests": {"cpu": "0.5", "memory": "128Mi"},
                    "limits": {"cpu": "500m", "memory": "134217728"},
                },
            ),
            QOSClass.GUARANTEED,
        ),
        (({"requests": {"cpu": "100m"}},), QOSClass.BURSTABLE),
        (
            (
                {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "500m", "memory": "128Mi"},
                },
            ),
            QOSClass.BURSTABLE,
        ),
        ((GUAR, {}), QOSClass.BURSTABLE),
    ],
)
def test_qos_class(resources: tuple[dict[str, Any], ...], expected: QOSClass) -> None:
    assert qos_class(pod_with(*resources)) is expected


def test_init_container_counts_for_qos() -> None:
    p = pod_with(GUAR)
    p["spec"]["initContainers"] = [{"name": "i", "resources": {}}]
    assert qos_class(p) is QOSClass.BURSTABLE


def test_cpu_mapping_matches_kubelet() -> None:
    assert cpu_shares(0) == 2
    assert cpu_shares(1) == 2
    assert cpu_shares(100) == 102
    assert cpu_shares(1000) == 1024
    assert cpu_quota(500) == 50_000
    assert cpu_quota(1) == 1_000


def test_oom_score_adj() -> None:
    gib = 1 << 30
    assert oom_score_adj(QOSClass.GUARANTEED, 0, gib) == -997
    assert oom_score_adj(QOSClass.BEST_EFFORT, 0, gib) == 1000
    assert oom_score_adj(QOSClass.BURSTABLE, gib // 2, gib) == 500
    assert oom_score_adj(QOSClass.BURSTABLE, gib, gib) == 3
    assert oom_score_adj(QOSClass.BURSTABLE, 0, gib) == 999


def test_container_resources() -> None:
    c = {
        "resources": {
            "requests": {"cpu": "250m", "memory": "64Mi"},
            "limits": {"cpu": "1", "memory": "128Mi"},
        }
    }
    r = container_resources(c, QOSClass.BURSTABLE, 1 << 30)
    assert (r.cpu_shares, r.cpu_quota, r.cpu_period) == (256, 100_000, 100_000)
    assert r.memory_limit_in_bytes == 128 << 20
    assert r.oom_score_adj == 1000 - 1000 * (64 << 20) // (1 << 30)
    empty = container_resources({}, QOSClass.BEST_EFFORT, 1 << 30)
    assert (empty.cpu_shares, empty.cpu_quota, empty.memory_limit_in_bytes) == (2, 0, 0)


def test_backoff_doubles_from_last_exit_and_resets() -> None:
    now = [1000.0]
    b = Backoff(lambda: now[0])
    assert b.remaining("p/web", finished_at=1000.0) == 0  # first restart is immediate
    b.restarted("p/web")
    assert b.remaining("p/web", finished_at=1000.0) == 10
    now[0] = 1010.0
    assert b.remaining("p/web", finished_at=1000.0) == 0
    b.restarted("p/web")
    assert b.remaining("p/web", finished_at=1010.0) == 20
    for _ in range(10):
        b.restarted("p/web")
    assert b.remaining("p/web", finished_at=1010.0) == 300
    assert b.remaining("p/web", finished_at=1010.0, ran_for=600) == 0
