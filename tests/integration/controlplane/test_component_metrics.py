"""Every control-plane component's /metrics, as `skiff controlplane` runs
them (each its own process, each its own registry), parsed with
prometheus_client's text parser: kube-scheduler's, client-go's workqueue
(the controller manager) and Volcano's names, each with `process_*`."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controlplane.client.config import load_config
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


def scrape_secure(port: int, token: str) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # self-signed, as kube-scheduler's own
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.mark.parametrize("mode", ["--component-processes", "--no-component-processes"])
def test_every_component_serves_its_own_metrics(tmp_path: Path, mode: str) -> None:
    """As processes, and as threads of one process (each component its own
    registry all the same)."""
    ports = {name: free_port() for name in EXPECTED}
    secure = {name: free_port() for name in EXPECTED}
    cp = ControlPlane(
        tmp_path / "cp",
        [mode,
         "--scheduler-metrics-listen", f"127.0.0.1:{ports['scheduler']}",
         "--volcano-metrics-listen", f"127.0.0.1:{ports['volcano']}",
         "--controller-metrics-listen", f"127.0.0.1:{ports['controllers']}",
         "--scheduler-secure-port", str(secure["scheduler"]),
         "--volcano-scheduler-secure-port", str(secure["volcano"]),
         "--controller-manager-secure-port", str(secure["controllers"])],
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
        # The same series on each secure port: the admin (system:masters) may
        # read them, nobody without credentials.
        admin = load_config(cp.data_dir / "admin.conf").token
        for name, port in secure.items():
            code, body = scrape_secure(port, admin)
            assert code == 200 and EXPECTED[name] <= {
                f.name for f in text_string_to_metric_families(body)
            }, name
            code, body = scrape_secure(port, "")
            assert code == 403 and "system:anonymous" in body, (name, body)
    finally:
        cp.close()
