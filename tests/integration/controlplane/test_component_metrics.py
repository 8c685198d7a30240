"""Every control-plane component's /metrics, as `skiff controlplane` runs
them (each its own process, each its own registry), parsed with
prometheus_client's text parser: kube-scheduler's, client-go's workqueue
(the controller manager) and Volcano's names, each with `process_*`."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.controlplane import ControlPlane
from tests.harness.ports import free_port
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow

PROCESS = {"process_cpu_seconds", "process_resident_memory_bytes", "process_start_time_seconds"}
EXPECTED = {
    "scheduler": {"scheduler_schedule_attempts", "scheduler_scheduling_attempt_duration_seconds",
                  "scheduler_pending_pods"},
    "controllers": {"workqueue_depth", "workqueue_adds", "workqueue_queue_duration_seconds",
                    "workqueue_work_duration_seconds", "workqueue_retries",
                    "leader_election_master_status"},
    "volcano": {"volcano_e2e_scheduling_latency_milliseconds", "volcano_schedule_attempts",
                "volcano_pod_preemption_victims", "volcano_total_preemption_attempts"},
}  # fmt: skip


def scrape(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return {f.name: f for f in text_string_to_metric_families(r.read().decode())}


@pytest.mark.parametrize("mode", ["--component-processes", "--no-component-processes"])
def test_every_component_serves_its_own_metrics(tmp_path: Path, mode: str) -> None:
    """As processes, and as threads of one process (each component its own
    registry all the same)."""
    ports = {name: free_port() for name in EXPECTED}
    cp = ControlPlane(
        tmp_path / "cp",
        [mode,
         "--scheduler-metrics-listen", f"127.0.0.1:{ports['scheduler']}",
         "--volcano-metrics-listen", f"127.0.0.1:{ports['volcano']}",
         "--controller-metrics-listen", f"127.0.0.1:{ports['controllers']}"],
        components=True,
    )  # fmt: skip
    cp.start()
    try:
        client = cp.client()
        # No node: the scheduler tries the pod and finds it unschedulable.
        client.create("Pod", {"metadata": {"name": "waits"},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                      "default")  # fmt: skip

        def attempted() -> dict[str, Any]:
            found = scrape(ports["scheduler"])
            runs = found.get("scheduler_schedule_attempts")
            return found if runs is not None and runs.samples else {}

        sched = wait_for(attempted, timeout=120, message="a scheduling attempt in /metrics")
        (run,) = sched["scheduler_schedule_attempts"].samples
        assert run.labels == {"result": "unschedulable", "profile": "default-scheduler"}
        queues = {s.labels["queue"]: s.value for s in sched["scheduler_pending_pods"].samples}
        assert queues["unschedulable"] + queues["backoff"] + queues["active"] == 1, queues
        found = {"scheduler": sched}

        def controllers_running() -> dict[str, Any]:
            text = scrape(ports["controllers"])
            return text if text["workqueue_depth"].samples else {}

        found["controllers"] = wait_for(controllers_running, timeout=120,
                                        message="the controllers' queues in /metrics")  # fmt: skip
        found["volcano"] = wait_for(lambda: scrape(ports["volcano"]), timeout=60)
        for name, names in EXPECTED.items():
            missing = (names | PROCESS) - set(found[name])
            assert not missing, (name, sorted(missing))
        # Each process its own registry: no component's series in another's.
        assert "workqueue_depth" not in found["scheduler"]
        assert "scheduler_pending_pods" not in found["volcano"]
        queues_seen = {s.labels["name"] for s in found["controllers"]["workqueue_depth"].samples}
        assert {"replicaset", "deployment", "daemonset", "cronjob"} <= queues_seen, queues_seen
    finally:
        cp.close()
