"""Volcano's kinds on a real API server: its example manifests apply, its invalid
ones (example/invalid_jobs/) are refused naming the field, and a Job or PodGroup
must name an existing, Open queue."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controlplane.api import volcano
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import Invalid
from tests.fakes.volcano_examples import example_job_yaml

EXAMPLE_JOB = example_job_yaml()

QUEUE = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: test
spec:
  weight: 1
  reclaimable: false
  capability:
    cpu: 2
"""


def job(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load(EXAMPLE_JOB)
    obj["spec"].update(spec)
    return obj


def task(name: str, replicas: int = 2) -> dict[str, Any]:
    t: dict[str, Any] = yaml.safe_load(EXAMPLE_JOB)["spec"]["tasks"][0]
    return {**t, "name": name, "replicas": replicas}


def test_example_job_applies_with_volcano_defaults(client: GrpcApiClient) -> None:
    assert client.get("Queue", "default")["status"]["state"] == "Open"
    created = client.create(volcano.JOB_KEY, job(), "default")
    assert created["apiVersion"] == "batch.volcano.sh/v1alpha1"
    assert created["spec"]["tasks"][0]["minAvailable"] == 6
    assert created["status"]["state"]["phase"] == "Pending"
    # Beside it, a batch/v1 Job of the same name is another object.
    assert client.list("Job", "default").items == []
    client.create("Queue", yaml.safe_load(QUEUE))
    q = client.get("Queue", "test")
    assert q["spec"]["weight"] == 1 and q["status"]["state"] == "Open"


@pytest.mark.parametrize(
    ("spec", "field", "reason"),
    [
        ({"tasks": [task("task-1"), task("task-1")]}, "spec.tasks[1].name", "duplicated task name"),
        ({"minAvailable": 7}, "spec.minAvailable", "should not be greater than total replicas"),
        (
            {"policies": [{"event": "PodFailed", "action": "RestartJob"},
                          {"event": "PodFailed", "action": "AbortJob"}]},
            "spec.policies[1].event",
            "duplicate event PodFailed",
        ),
        ({"policies": [{"event": "PodFailed", "action": "Explode"}]}, "spec.policies[0].action",
         "invalid policy action"),
        ({"plugins": {"mystery": []}}, "spec.plugins.mystery", "unable to find job plugin"),
        ({"tasks": []}, "spec.tasks", "No task specified"),
        ({"queue": "nowhere"}, "spec.queue", "unable to find job queue: nowhere"),
    ],
)  # fmt: skip
def test_invalid_jobs_are_refused_naming_the_field(
    client: GrpcApiClient, spec: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(Invalid) as err:
        client.create(volcano.JOB_KEY, job(**spec), "default")
    assert field in str(err.value) and reason in str(err.value)


def test_closed_queue_refuses_jobs_and_podgroups(client: GrpcApiClient) -> None:
    client.create("Queue", {"metadata": {"name": "shut"}})
    client.patch("Queue", "shut", {"status": {"state": "Closed"}}, None, "status")
    with pytest.raises(Invalid, match="queue `shut` status is `Closed`"):
        client.create(volcano.JOB_KEY, job(queue="shut"), "default")
    pg = {"apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
          "metadata": {"name": "g"}, "spec": {"minMember": 2, "queue": "shut"}}  # fmt: skip
    with pytest.raises(Invalid, match=r"spec\.queue"):
        client.create("PodGroup", pg, "default")
    # skiff's earlier PodGroup apiVersion still applies, on the default queue.
    old = {"apiVersion": "scheduling.skiff.dev/v1alpha1", "kind": "PodGroup",
           "metadata": {"name": "g"}, "spec": {"minMember": 2}}  # fmt: skip
    assert client.create("PodGroup", old, "default")["spec"]["queue"] == "default"


def test_commands_are_validated_naming_the_field(client: GrpcApiClient) -> None:
    """A bus.volcano.sh Command: an action its target's kind takes, a
    target naming a Job or a Queue; once made, neither changes."""
    queue = client.get("Queue", "default")
    made = client.create("Command", volcano.command_for(queue, "CloseQueue", "default"), "default")
    assert made["metadata"]["name"].startswith("default-closequeue-")
    assert made["target"]["uid"] == queue["metadata"]["uid"]
    with pytest.raises(Invalid, match="field is immutable"):
        client.update("Command", {**made, "action": "OpenQueue"})
    bad = volcano.command_for(queue, "AbortJob", "default")
    with pytest.raises(Invalid, match="action: unsupported value 'AbortJob' for a Queue"):
        client.create("Command", bad, "default")
    with pytest.raises(Invalid, match=r"target\.name: Required value"):
        client.create("Command", {**bad, "target": {"kind": "Pod", "apiVersion": "v1"}}, "default")
    with pytest.raises(Invalid, match="Pod \\(v1\\) takes no commands"):
        client.create(
            "Command",
            {**bad, "target": {"kind": "Pod", "apiVersion": "v1", "name": "p"}},
            "default",
        )
