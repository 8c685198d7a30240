"""Volcano's kinds on a real API server: its example manifests apply, its invalid
ones (example/invalid_jobs/) are refused naming the field, and a Job or PodGroup
must name an existing, Open queue."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from controlplane.api import kinds, volcano
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
        ({"queue": "nowhere"}, "spec.queue",
         'unable to find job queue: queues.scheduling.volcano.sh "nowhere" not found'),
        # test/e2e/admission/job_validation_test.go, in Volcano's words:
        ({"minAvailable": -1}, "spec.minAvailable", "should be greater than or equal to 0"),
        ({"tasks": [{**task("task-1"), "minAvailable": 3}]}, "spec.tasks[0].minAvailable",
         "'minAvailable' is greater than 'replicas' in task: task-1, job: test-job"),
        ({"tasks": [task("Task_1")]}, "spec.tasks[0].name", "should match"),
        ({"policies": [{"exitCode": 0, "action": "RestartJob"}]}, "spec.policies[0].exitCode",
         "0 is not a valid error code"),
        ({"policies": [{"exitCode": 3, "action": "RestartJob"},
                       {"exitCode": 3, "action": "AbortJob"}]}, "spec.policies[1].exitCode",
         "duplicate exitCode 3"),
        ({"policies": [{"event": "*", "action": "RestartJob"},
                       {"event": "PodFailed", "action": "AbortJob"}]}, "spec.policies",
         "if there's * here, no other policy should be here"),
        ({"policies": [{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}]},
         "spec.policies[0]", "must not specify event and exitCode simultaneously"),
        ({"policies": [{"action": "AbortJob"}]}, "spec.policies[0]",
         "either event and exitCode should be specified"),
        ({"volumes": [{"mountPath": "/data"}]}, "spec.volumes[0]",
         "either VolumeClaim or VolumeClaimName must be specified"),
        ({"volumes": [{"mountPath": "", "volumeClaimName": "c"}]}, "spec.volumes[0].mountPath",
         "should be at least 1 chars long"),
        # pkg/webhooks/admission/jobs/validate (util.go), in its words: only the
        # external events (not PodRunning, OutOfSync, CommandIssued; "Unknown" is the
        # job's), an event policy's action given, a claim's name a DNS subdomain.
        ({"policies": [{"event": "PodRunning", "action": "AbortJob"}]},
         "spec.policies[0].event", 'Invalid value: "PodRunning": invalid policy event; '
         "valid events are [* PodFailed PodEvicted PodPending Unknown TaskCompleted"),
        ({"policies": [{"event": "JobUnknown", "action": "AbortJob"}]},
         "spec.policies[0].event", 'Invalid value: "JobUnknown": invalid policy event'),
        ({"policies": [{"event": "PodFailed"}]}, "spec.policies[0].action",
         'Invalid value: "": invalid policy action'),
        ({"volumes": [{"mountPath": "/d", "volumeClaimName": "c", "volumeClaim": {}}]},
         "spec.volumes[0]", "conflict: If you want to use an existing PVC, just specify "
         "VolumeClaimName.If you want to create a new PVC, you do not need to specify "
         "VolumeClaimName"),
        ({"volumes": [{"mountPath": "/d", "volumeClaimName": "Bad_Claim"}]},
         "spec.volumes[0].volumeClaimName", "invalid VolumeClaimName Bad_Claim : [a lowercase "
         "RFC 1123 subdomain"),
    ],
)  # fmt: skip
def test_invalid_jobs_are_refused_naming_the_field(
    client: GrpcApiClient, spec: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(Invalid) as err:
        client.create(volcano.JOB_KEY, job(**spec), "default")
    assert field in str(err.value) and reason in str(err.value)


def test_job_and_pod_names_must_be_qualified_names(client: GrpcApiClient) -> None:
    """Volcano's job webhook (validateJobName, validateK8sPodNameLength): the
    job's name and each task's pod name `<job>-<task>-<task index>` are
    qualified names, so at most 63 characters."""
    long_job = {**job(), "metadata": {"name": "j" * 64}}
    with pytest.raises(Invalid, match=f"create job with name {'j' * 64} validate failed "
                                      r"\[name part must be no more than 63 characters\]"):  # fmt: skip
        client.create(volcano.JOB_KEY, long_job, "default")
    name = "n" * 50
    with pytest.raises(Invalid) as err:
        client.create(volcano.JOB_KEY, {**job(tasks=[task("t" * 12, 6)]), "metadata": {"name": name}},
                      "default")  # fmt: skip
    assert f"spec.tasks[0].name: create pod with name {name}-{'t' * 12}-0 validate failed" in str(
        err.value)  # fmt: skip
    assert client.create(volcano.JOB_KEY, {**job(tasks=[task("t" * 10, 6)]),
                                           "metadata": {"name": name}}, "default")  # fmt: skip


def test_a_duplicate_event_within_one_policy_counts_once(client: GrpcApiClient) -> None:
    """Volcano's getEventList de-duplicates a policy's events: accepted."""
    policies = [{"events": ["PodFailed", "PodFailed"], "event": "PodFailed", "action": "AbortJob"}]
    assert client.create(volcano.JOB_KEY, job(policies=policies), "default")


def test_job_updates_may_change_only_sizes_and_priority(client: GrpcApiClient) -> None:
    """test/e2e/admission/job_validation_test.go: "Should allow job update with
    valid changes to minAvailable and replicas", "Should reject job update
    attempting to add new tasks", "... to change queue name"."""
    made = client.create(volcano.JOB_KEY, job(), "default")
    made["spec"]["minAvailable"] = 2
    made["spec"]["tasks"][0]["replicas"] = 8
    made = client.update(volcano.JOB_KEY, made)
    with pytest.raises(Invalid, match="job updates may not add or remove tasks"):
        client.update(volcano.JOB_KEY, {**made, "spec": {
            **made["spec"], "tasks": [*made["spec"]["tasks"], task("new-task")]}})  # fmt: skip
    client.create("Queue", {"metadata": {"name": "elsewhere"}})
    with pytest.raises(Invalid, match="job updates may not change fields other than"):
        client.update(volcano.JOB_KEY, {**made, "spec": {**made["spec"], "queue": "elsewhere"}})
    with pytest.raises(Invalid, match="not be greater than total replicas"):
        client.update(volcano.JOB_KEY, {**made, "spec": {**made["spec"], "minAvailable": 99}})


def test_a_job_goes_only_to_a_leaf_queue(client: GrpcApiClient) -> None:
    """Volcano's job webhook: "can only submit job to leaf queue"; a queue's
    parent must exist and not be itself (its queue webhook)."""
    client.create("Queue", {"metadata": {"name": "trunk"}, "spec": {"parent": "root"}})
    client.create("Queue", {"metadata": {"name": "leaf"}, "spec": {"parent": "trunk"}})
    with pytest.raises(Invalid, match="can only submit job to leaf queue, queue `trunk` has 1 "
                                      "child queues"):  # fmt: skip
        client.create(volcano.JOB_KEY, job(queue="trunk"), "default")
    assert client.create(volcano.JOB_KEY, job(queue="leaf"), "default")
    with pytest.raises(Invalid, match="cannot use itself as parent"):
        client.create("Queue", {"metadata": {"name": "loop"}, "spec": {"parent": "loop"}})
    with pytest.raises(Invalid, match="failed to get parent queue nowhere of queue orphan"):
        client.create("Queue", {"metadata": {"name": "orphan"}, "spec": {"parent": "nowhere"}})


def test_a_queue_tree_keeps_its_depth_and_resources_in_order(client: GrpcApiClient) -> None:
    """Volcano's queue webhook (validate_queue.go: validateQueueDepth,
    validateChildAgainstAncestor, validateSiblingsSum, validateChildrenConstraints)."""

    def q(name: str, parent: str, **spec: Any) -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"parent": parent, **spec}}

    parent = "root"
    for i in range(1, 6):  # five deep is the most
        client.create("Queue", q(f"d{i}", parent))
        parent = f"d{i}"
    with pytest.raises(Invalid, match="queue d6 exceeds the maximum allowed depth of 5"):
        client.create("Queue", q("d6", "d5"))
    client.create("Queue", q("p", "root", capability={"cpu": "8"}, deserved={"cpu": "4"}))
    with pytest.raises(Invalid, match=re.escape(
            "queue c0 capability[cpu]=16 exceeds its ancestor's capability=8")):  # fmt: skip
        client.create("Queue", q("c0", "p", capability={"cpu": "16"}))
    client.create("Queue", q("c1", "p", capability={"cpu": "6"}, deserved={"cpu": "3"}))
    with pytest.raises(Invalid, match=re.escape(
            "parent queue p validation failed: sum of children's deserved (cpu 5000.00, "
            "memory 0.00) exceeds parent's deserved limit (cpu 4000.00, memory 0.00)")):  # fmt: skip
        client.create("Queue", q("c2", "p", deserved={"cpu": "2"}))
    made = client.get("Queue", "p")
    made["spec"]["capability"] = {"cpu": "4"}
    with pytest.raises(Invalid, match=re.escape(
            "queue p capability[cpu]=4 is smaller than its descendants' max capability=6")):  # fmt: skip
        client.update("Queue", made)
    made["spec"]["capability"] = {"cpu": "6"}
    assert client.update("Queue", made)


def test_closed_queue_refuses_jobs_and_podgroups(client: GrpcApiClient) -> None:
    client.create("Queue", {"metadata": {"name": "shut"}})
    client.patch("Queue", "shut", {"status": {"state": "Closed"}}, None, "status")
    with pytest.raises(Invalid, match="queue `shut` status is `Closed`"):
        client.create(volcano.JOB_KEY, job(queue="shut"), "default")
    pg = {"apiVersion": volcano.SCHEDULING_API, "kind": "PodGroup",
          "metadata": {"name": "g"}, "spec": {"minMember": 2, "queue": "shut"}}  # fmt: skip
    with pytest.raises(
        Invalid,
        match=r"spec\.queue: can only submit PodGroup to queue with "
        r"state `Open`, queue `shut` status is `Closed`\.",
    ):
        client.create("PodGroup", pg, "default")
    with pytest.raises(
        Invalid,
        match=re.escape('spec.queue: unable to find queue: queues.scheduling.volcano.sh "nowhere"'),
    ):
        client.create("PodGroup", {**pg, "spec": {"minMember": 2, "queue": "nowhere"}}, "default")
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


def test_volcanos_own_crds_are_stored_and_the_built_in_kinds_keep_serving(
    client: GrpcApiClient,
) -> None:
    """Volcano's installer applies its CustomResourceDefinitions (here its
    queues.scheduling.volcano.sh, cut down): they are stored, as
    kube-apiserver stores any valid CRD, and skiff's own Queue keeps serving
    (its schema, its scheduler); deleting the CRD removes no Queue."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "queues.scheduling.volcano.sh"},
        "spec": {"group": "scheduling.volcano.sh", "scope": "Cluster",
                 "names": {"kind": "Queue", "listKind": "QueueList", "plural": "queues",
                           "singular": "queue", "shortNames": ["q"]},
                 "versions": [{"name": "v1beta1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]},
    }  # fmt: skip
    before = kinds.find("Queue")
    made = client.create("CustomResourceDefinition", crd)
    try:
        assert made["status"]["storedVersions"] == ["v1beta1"]
        assert kinds.find("Queue") is before  # still the built-in kind
        queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                 "metadata": {"name": "kept"}, "spec": {"weight": 1}}  # fmt: skip
        client.create("Queue", queue)
        with pytest.raises(Invalid):  # the built-in schema still checks it
            client.create("Queue", {**queue, "metadata": {"name": "bad"}, "spec": {"weight": -1}})
    finally:
        client.delete("CustomResourceDefinition", "queues.scheduling.volcano.sh")
    assert client.get("Queue", "kept")["metadata"]["name"] == "kept"
    client.delete("Queue", "kept")
