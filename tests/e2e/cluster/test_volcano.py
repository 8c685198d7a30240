"""Volcano's example Job with real pods on the three-node cluster: the batch
scheduler (schedulerName volcano, started with the control plane) places the
gang, the Job controller's svc plugin gives every pod the hostname
`<job>-<task>-<index>` under the headless Service `<job>`, and the agents'
cluster DNS answers those names, so two tasks find each other by them, talk,
and finish: the Job and its PodGroup end Completed.

The Job keeps the fields of Volcano's example/job.yaml; only the image, the
resources (scaled to a small node), the tasks and their commands differ.
"""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import volcano
from controlplane.client.apiclient import GrpcApiClient
from controlplane.controllers.vcjob_pods import group_name
from tests.harness import cluster_workloads as h
from tests.harness.cluster import Cluster
from tests.harness.wait import wait_for

pytestmark = [pytest.mark.root, pytest.mark.e2e, pytest.mark.netns, pytest.mark.slow]

BACKEND = "host-gw"
JOB = "vc-job"
PORT = 8080
FINISHED = ("Completed", "Failed", "Aborted", "Terminated")


def peer_check(other: str) -> list[str]:
    """Serve this pod's hostname, look the other task up by its svc-plugin
    short name `<pod>.<job>` with busybox's nslookup (which sends it as it
    stands: the node's DNS applies the pod's search list) and fetch its page
    by that name with wget (libc's getaddrinfo applies the search list
    itself) until it answers, then stay up a few seconds so the other task
    can reach this one too."""
    script = (
        f"mkdir -p /w && hostname > /w/index.html && httpd -p {PORT} -h /w; "
        f"i=0; until nslookup {other} > /dev/null && "
        f"wget -q -O /tmp/peer http://{other}:{PORT}/; do "
        "i=$((i+1)); [ $i -ge 60 ] && exit 1; sleep 0.5; done; "
        "cat /tmp/peer; sleep 5"
    )
    return ["sh", "-c", script]


def task(name: str, other: str) -> dict[str, Any]:
    return {
        "replicas": 1,
        "name": name,
        "template": {
            "metadata": {"name": name},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [
                    {
                        "image": h.BUSYBOX,
                        "imagePullPolicy": "IfNotPresent",
                        "name": name,
                        "command": peer_check(other),
                        "resources": {"requests": {"cpu": "100m"}},
                    }
                ],
                "restartPolicy": "OnFailure",
            },
        },
    }


def example_job() -> dict[str, Any]:
    """example/job.yaml's shape: gang (minAvailable), volcano scheduler,
    PodEvicted -> RestartJob, the ssh/env/svc plugins, maxRetry, queue."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": "default"},
        "spec": {
            "minAvailable": 2,
            "schedulerName": "volcano",
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "plugins": {"ssh": [], "env": [], "svc": []},
            "maxRetry": 5,
            "queue": "default",
            "tasks": [
                task("ping", f"{JOB}-pong-0.{JOB}"),
                task("pong", f"{JOB}-ping-0.{JOB}"),
            ],
        },
    }


def phase_of(obj: dict[str, Any]) -> str:
    """A Volcano Job's status.state.phase, or a PodGroup's status.phase."""
    status = obj.get("status") or {}
    return str((status.get("state") or status).get("phase") or "")


def finished(api: GrpcApiClient, kind: str, name: str, phases: tuple[str, ...]) -> dict[str, Any]:
    obj: dict[str, Any] = api.get(kind, name, "default")
    return obj if phase_of(obj) in phases else {}


def test_example_job_tasks_reach_each_other_and_complete(
    cluster: Cluster, api: GrpcApiClient
) -> None:
    job = api.create(volcano.JOB_KEY, example_job(), "default")
    try:
        done = wait_for(
            lambda: finished(api, volcano.JOB_KEY, JOB, FINISHED),
            timeout=120,
            message="the Volcano Job finished",
        )
        assert phase_of(done) == "Completed", done["status"]
        assert done["status"].get("succeeded") == 2, done["status"]

        group = wait_for(
            lambda: finished(api, "PodGroup", group_name(job), ("Completed",)),
            timeout=30,
            message="the PodGroup reports Completed",
        )
        assert group["status"].get("succeeded") == 2, group["status"]

        pods = h.pods(api, {volcano.JOB_NAME: JOB})
        nodes = {n.name for n in cluster.nodes}
        assert {p["metadata"]["name"] for p in pods} == {f"{JOB}-ping-0", f"{JOB}-pong-0"}
        for p in pods:
            assert p["spec"]["nodeName"] in nodes, h.brief(p)
            assert p["status"]["phase"] == "Succeeded", h.brief(p)
    finally:
        h.delete(api, volcano.JOB_KEY, JOB)
        h.wait_gone(api, {volcano.JOB_NAME: JOB})
