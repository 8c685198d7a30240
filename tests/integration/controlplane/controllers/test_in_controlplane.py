"""The controller manager as `skiff controlplane` runs it (its own process).

`skiff controlplane --controllers ... --controller-metrics-listen ...` with
SQLite in a temp dir on 127.0.0.1, stopped by its pid: a Deployment becomes
a ReplicaSet and pods, the manager holds its Lease, and /metrics and
/healthz answer with per-controller figures.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest

from tests.harness.controlplane import ControlPlane
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow


def test_skiff_controlplane_runs_the_controllers(tmp_path: Path) -> None:
    metrics_port = free_port()
    cp = ControlPlane(
        tmp_path / "cp",
        [
            "--disable", "scheduler",
            "--controllers", "*,-podgc",
            "--controller-metrics-listen", f"127.0.0.1:{metrics_port}",
        ],
        components=True,
    )  # fmt: skip
    cp.start()
    try:
        client = cp.client()
        client.create(
            "Deployment",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
                    },
                },
            },
            "default",
        )
        wait_for(lambda: len(client.list("Pod", "default").items) == 2, timeout=30)
        lease = client.get("Lease", "skiff-controller-manager", "kube-system")
        assert lease["spec"]["holderIdentity"]

        def scrape(path: str) -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}{path}", timeout=5) as r:
                return str(r.read().decode())

        text = wait_for(lambda: scrape("/metrics"), timeout=10)
        assert 'workqueue_adds_total{name="replicaset"}' in text
        assert 'workqueue_work_duration_seconds_count{name="replicaset"}' in text
        assert 'name="podgc"' not in text  # disabled by --controllers
        assert 'leader_election_master_status{name="kube-controller-manager"} 1.0' in text
        assert wait_for(lambda: scrape("/healthz") == "ok", timeout=10)
    finally:
        cp.close()
