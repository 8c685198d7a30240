"""Volcano's own admission e2e suite (test/e2e/admission: job_validation,
job_mutate, queue_validation, queue_mutate, podgroup_validation,
podgroup_mutate and pod_validation), ported case by case onto one API
server: each case names the upstream `It` it comes from and asserts what
that case asserts (the field and the words of the refusal, or the object
as admitted); a few cases beyond the suite say so.

Left out: the cases for plugins skiff does not run (tensorflow, mpi,
pytorch: their webhook adds svc/ssh), pod_mutate (the resource groups of
Volcano's pod mutating webhook) and the hypernode and jobflow suites
(kinds skiff does not serve).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controlplane.api import volcano
from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.apiserver.tls import ensure_pki
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import ApiError, Invalid
from controlplane.storage.sqlite import SqliteStore
from tests.harness.apiserver import Cluster

Obj = dict[str, Any]
NS = "default"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcApiClient]:
    """One API server for the suite (each case names its own objects)."""
    tmp: Path = tmp_path_factory.mktemp("admission")
    store = SqliteStore(tmp / "state.db")
    pki = ensure_pki(tmp)
    server = ApiServer(store, ApiServerConfig(listen="127.0.0.1:0"), pki)
    port = server.start()
    client = Cluster(server, store, pki, f"127.0.0.1:{port}").client()
    try:
        yield client
    finally:
        client.close()
        server.stop(0.5)
        store.close()


def template() -> Obj:
    return {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}


def vcjob(name: str, **spec: Any) -> Obj:
    """test/e2e/admission's job: one task of one replica on the default queue."""
    body: Obj = {"queue": "default", "minAvailable": 1,
                 "tasks": [{"name": "task-1", "replicas": 1, "template": template()}]}  # fmt: skip
    body.update(spec)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name}, "spec": body}  # fmt: skip


def task(name: str, replicas: int = 1, **more: Any) -> Obj:
    return {"name": name, "replicas": replicas, "template": template(), **more}


def queue(name: str, annotations: Obj | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
            "metadata": meta, "spec": {"weight": 1, **spec}}  # fmt: skip


def refused(call: Callable[[], Any], *words: str) -> str:
    with pytest.raises(ApiError) as err:
        call()
    text = str(err.value)
    for w in words:
        assert w in text, f"{w!r} not in {text!r}"
    return text


def res(cpu: str | None = None, memory: str | None = None) -> Obj:
    return {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}


# --- job_validation_test.go ----------------------------------------------------------------


def test_job_valid_configuration(api: GrpcApiClient) -> None:
    """Should allow job creation with valid configuration"""
    assert api.create(volcano.JOB_KEY, vcjob("valid-job"), NS)


# "Should reject job creation with ..." -> (spec change, words of the refusal)
JOB_REFUSALS: dict[str, tuple[Obj, tuple[str, ...]]] = {
    "duplicate task names": (
        {"tasks": [task("duplicated-task-1"), task("duplicated-task-1")]},
        ("duplicated task name duplicated-task-1",)),
    "invalid minAvailable less than zero": (
        {"minAvailable": -1}, ("spec.minAvailable", "should be greater than or equal to 0")),
    "invalid maxRetry less than zero": (
        {"maxRetry": -1}, ("spec.maxRetry", "should be greater than or equal to 0")),
    "invalid TTLSecondsAfterFinished less than zero": (
        {"ttlSecondsAfterFinished": -1},
        ("spec.ttlSecondsAfterFinished", "should be greater than or equal to 0")),
    "no tasks specified": ({"tasks": []}, ("No task specified in job spec",)),
    "task replicas less than zero": (
        {"minAvailable": 0, "tasks": [task("task-1", -1)]},
        ("spec.tasks[0].replicas", "should be greater than or equal to 0")),
    "task minAvailable less than zero": (
        {"tasks": [task("task-1", minAvailable=-1)]},
        ("spec.tasks[0].minAvailable", "should be greater than or equal to 0")),
    "task minAvailable greater than replicas": (
        {"tasks": [task("task-1", 3, minAvailable=5)]},
        ("'minAvailable' is greater than 'replicas' in task",)),
    "job minAvailable greater than total replicas": (
        {"minAvailable": 5}, ("job 'minAvailable' should not be greater than total replicas",)),
    "invalid task name (non-DNS1123)": (
        {"tasks": [task("Task_1")]}, ("spec.tasks[0].name", "should match")),
    "duplicate policy events": (
        {"policies": [{"event": "PodFailed", "action": "AbortJob"},
                      {"event": "PodFailed", "action": "RestartJob"}]},
        ("duplicate event PodFailed",)),
    "policy event and exit code specified simultaneously": (
        {"policies": [{"event": "PodFailed", "exitCode": 1, "action": "AbortJob"}]},
        ("must not specify event and exitCode simultaneously",)),
    "policy having neither event nor exit code": (
        {"policies": [{"action": "AbortJob"}]},
        ("either event and exitCode should be specified",)),
    "invalid policy action": (
        {"policies": [{"event": "PodFailed", "action": "InvalidAction"}]},
        ("invalid policy action",)),
    "policy exit code zero": (
        {"policies": [{"exitCode": 0, "action": "AbortJob"}]}, ("0 is not a valid error code",)),
    "duplicate policy exit codes": (
        {"policies": [{"exitCode": 1, "action": "AbortJob"},
                      {"exitCode": 1, "action": "RestartJob"}]}, ("duplicate exitCode 1",)),
    "AnyEvent policy and other event policies": (
        {"policies": [{"event": "*", "action": "AbortJob"},
                      {"event": "PodFailed", "action": "RestartJob"}]},
        ("if there's * here, no other policy should be here",)),
    "invalid volume mount path": (
        {"volumes": [{"mountPath": "", "volumeClaimName": "pvc1"}]},
        ("spec.volumes[0].mountPath", "should be at least 1 chars long")),
    "duplicate volume mount paths": (
        {"volumes": [{"mountPath": "/var", "volumeClaimName": "pvc1"},
                     {"mountPath": "/var", "volumeClaimName": "pvc2"}]},
        ("duplicated mountPath",)),
    "volume without claim name or claim spec": (
        {"volumes": [{"mountPath": "/var"}]},
        ("either VolumeClaim or VolumeClaimName must be specified",)),
}  # fmt: skip


@pytest.mark.parametrize("case", list(JOB_REFUSALS))
def test_job_refused(api: GrpcApiClient, case: str) -> None:
    """Should reject job creation with <case>"""
    spec, words = JOB_REFUSALS[case]
    name = "refused-" + "".join(c if c.isalnum() else "-" for c in case.lower())[:40].strip("-")
    refused(lambda: api.create(volcano.JOB_KEY, vcjob(name, **spec), NS), *words)


def test_job_valid_task_dependencies(api: GrpcApiClient) -> None:
    """Should allow job creation with valid task dependencies (DAG)"""
    dag = [task("t1", dependsOn={"name": ["t2"]}), task("t2")]
    assert api.create(volcano.JOB_KEY, vcjob("valid-dag-job", minAvailable=2, tasks=dag), NS)


def test_job_cyclic_task_dependencies_refused(api: GrpcApiClient) -> None:
    """Beyond the suite, its webhook's topoSort: dependencies forming a cycle."""
    cycle = [task("t1", dependsOn={"name": ["t2"]}), task("t2", dependsOn={"name": ["t1"]})]
    refused(lambda: api.create(volcano.JOB_KEY, vcjob("cyclic-job", minAvailable=2, tasks=cycle),
                               NS),
            "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)")  # fmt: skip


def test_job_update_valid_changes(api: GrpcApiClient) -> None:
    """Should allow job update with valid changes to minAvailable and replicas"""
    made = api.create(volcano.JOB_KEY, vcjob("update-valid-job", tasks=[task("task-1", 2)]), NS)
    made["spec"]["minAvailable"] = 2
    made["spec"]["tasks"][0]["replicas"] = 3
    updated = api.update(volcano.JOB_KEY, made)
    assert updated["spec"]["minAvailable"] == 2 and updated["spec"]["tasks"][0]["replicas"] == 3


@pytest.mark.parametrize(
    ("case", "change", "words"),
    [
        ("invalid minAvailable greater than total replicas",
         lambda s: s.update(minAvailable=10), ("not be greater than total replicas",)),
        ("attempting to add new tasks",
         lambda s: s["tasks"].append(task("task-2")), ("job updates may not add or remove tasks",)),
        ("attempting to change queue name",
         lambda s: s.update(queue="new-queue"),
         ("job updates may not change fields other than `minAvailable`, "
          "`tasks[*].replicas under spec` and `PriorityClassName`",)),
    ],
)  # fmt: skip
def test_job_update_refused(
    api: GrpcApiClient, case: str, change: Callable[[Obj], Any], words: tuple[str, ...]
) -> None:
    """Should reject job update <case>"""
    name = "update-" + case.split()[-1].lower() + "-job"
    made = api.create(volcano.JOB_KEY, vcjob(name), NS)
    new = copy.deepcopy(made)
    change(new["spec"])
    refused(lambda: api.update(volcano.JOB_KEY, new), *words)


# --- job_mutate_test.go --------------------------------------------------------------------


def test_job_mutate_defaults(api: GrpcApiClient) -> None:
    """Should add default queue / scheduler name / maxRetry when not specified;
    Should calculate and set default minAvailable when not specified"""
    body = vcjob("default-job-mutate", tasks=[task("task-1", 2), task("task-2", 3)])
    for key in ("queue", "minAvailable"):
        del body["spec"][key]
    made = api.create(volcano.JOB_KEY, body, NS)["spec"]
    assert (made["queue"], made["schedulerName"], made["maxRetry"]) == ("default", "volcano", 3)
    assert made["minAvailable"] == 5


def test_job_mutate_fills_empty_strings(api: GrpcApiClient) -> None:
    """Beyond the suite, the webhook's patches: an empty queue or scheduler
    name is not given, so defaulted (Go cannot tell them apart)."""
    made = api.create(volcano.JOB_KEY, vcjob("empty-strings-job", queue="", schedulerName=""), NS)
    assert (made["spec"]["queue"], made["spec"]["schedulerName"]) == ("default", "volcano")


def test_job_mutate_min_available_counts_task_minimums(api: GrpcApiClient) -> None:
    """Should calculate minAvailable considering task-level minAvailable when specified"""
    body = vcjob("task-min-available-job",
                 tasks=[task("task-1", 2, minAvailable=1), task("task-2", 3)])  # fmt: skip
    del body["spec"]["minAvailable"]
    assert api.create(volcano.JOB_KEY, body, NS)["spec"]["minAvailable"] == 4


def test_job_mutate_task_defaults(api: GrpcApiClient) -> None:
    """Beyond the suite (its task-level cases moved out of e2e), the webhook's
    mutateSpec: a task's maxRetry 3 and minAvailable its replicas, and a
    hostNetwork pod's dnsPolicy ClusterFirstWithHostNet."""
    net = task("net", 2, template={"spec": {**template()["spec"], "hostNetwork": True}})
    made = api.create(volcano.JOB_KEY, vcjob("host-network-job", tasks=[net]), NS)["spec"]
    assert (made["tasks"][0]["minAvailable"], made["tasks"][0]["maxRetry"]) == (2, 3)
    assert made["tasks"][0]["template"]["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_job_mutate_preserves_given_values(api: GrpcApiClient) -> None:
    """Should preserve existing field values when specified"""
    api.create("Queue", queue("custom-queue"))
    body = vcjob("preserve-job", queue="custom-queue", schedulerName="custom-scheduler",
                 maxRetry=5, minAvailable=2, tasks=[task("task-1", 3)])  # fmt: skip
    made = api.create(volcano.JOB_KEY, body, NS)["spec"]
    assert (made["queue"], made["schedulerName"], made["maxRetry"], made["minAvailable"]) == (
        "custom-queue", "custom-scheduler", 5, 2)  # fmt: skip


# --- queue_validation_test.go --------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "body"),
    [
        ("valid state (Open)", {**queue("test-queue-open"), "status": {"state": "Open"}}),
        ("valid state (Closed)", {**queue("test-queue-closed"), "status": {"state": "Closed"}}),
        ("without state set", queue("test-queue-no-state")),
        ("only deserved resource", queue("test-queue-deserved-only", deserved=res("1", "1Gi"))),
        ("deserved resource type not in capability",
         queue("test-queue-deserved-type-not-in-capability", capability=res("10"),
               deserved=res("5", "10Gi"))),
        ("guarantee resource type not in capability",
         queue("test-queue-guarantee-type-not-in-capability", capability=res("10"),
               deserved=res("5", "8Gi"), guarantee={"resource": res("5", "8Gi")})),
    ],
)  # fmt: skip
def test_queue_allowed(api: GrpcApiClient, case: str, body: Obj) -> None:
    """Should allow queue creation with <case>"""
    assert api.create("Queue", body)
    api.delete("Queue", body["metadata"]["name"])


def test_queue_weight_defaults_to_one(api: GrpcApiClient) -> None:
    """Should allow queue creation without weight specified (uses default);
    queue_mutate_test.go: Should set default reclaimable to true / weight to 1."""
    body = queue("test-queue-weight-default")
    del body["spec"]["weight"]
    made = api.create("Queue", body)
    assert made["spec"]["weight"] == 1 and made["spec"]["reclaimable"] is True


def test_queue_mutate_preserves_given_values(api: GrpcApiClient) -> None:
    """queue_mutate_test.go: Should preserve existing field values when specified"""
    made = api.create("Queue", queue("preserve-values-queue", weight=5, reclaimable=False))
    assert made["spec"]["weight"] == 5 and made["spec"]["reclaimable"] is False


HIER, WEIGHTS = "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"


@pytest.mark.parametrize(
    ("case", "body", "words"),
    [
        ("negative weight", queue("test-queue-weight-negative", weight=-1),
         ("spec.weight", "should be greater than or equal to 1")),
        ("only guarantee resource (deserved required)",
         queue("test-queue-guarantee-only", guarantee={"resource": res("1", "1Gi")}),
         ("must be >= guarantee",)),
        ("capability less than deserved",
         queue("test-queue-capability-less-deserved", capability=res("1", "1Gi"),
               deserved=res("2", "1Gi")), ("must be <= capability",)),
        ("capability less than guarantee",
         queue("test-queue-capability-less-guarantee", capability=res("1", "1Gi"),
               guarantee={"resource": res("2", "3Gi")}), ("must be >= guarantee",)),
        ("deserved less than guarantee",
         queue("test-queue-deserved-less-guarantee", deserved=res("2", "1Gi"),
               guarantee={"resource": res("2", "3Gi")}), ("must be >= guarantee",)),
        ("guarantee resource type not in deserved",
         queue("test-queue-guarantee-type-not-in-deserved", deserved=res("10"),
               guarantee={"resource": res("5", "8Gi")}), ("must be >= guarantee",)),
        ("only hierarchy annotation but no weights",
         queue("hierarchy-only-queue", {HIER: "a"}),
         ("volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights",)),
        ("mismatched hierarchy annotation lengths",
         queue("mismatched-hierarchy-queue", {HIER: "a/b", WEIGHTS: "1/2/3"}),
         ("must have the same length",)),
        ("mismatched hierarchy and weights",
         queue("test-queue-hierarchy-mismatch", {HIER: "root/a/b", WEIGHTS: "1/2/3/4"}),
         ("must have the same length",)),
        ("negative hierarchical weight",
         queue("test-queue-negative-hierarchy-weight", {HIER: "root/a/b", WEIGHTS: "1/-1/3"}),
         ("-1 in the 1/-1/3 must be larger than 0",)),
        ("invalid hierarchical weight format",
         queue("test-queue-invalid-hierarchy-weight", {HIER: "root/a/b", WEIGHTS: "1/a/3"}),
         ("a in the 1/a/3 is invalid number",)),
    ],
)  # fmt: skip
def test_queue_refused(api: GrpcApiClient, case: str, body: Obj, words: tuple[str, ...]) -> None:
    """Should reject queue creation with <case>"""
    refused(lambda: api.create("Queue", body), *words)


def test_queue_state_update_open_to_closed(api: GrpcApiClient) -> None:
    """Should allow queue state update from Open to Closed"""
    made = api.create("Queue", queue("test-queue-update-state"))
    made["status"] = {"state": "Closed"}
    assert api.update("Queue", made)


def test_queue_update_negative_weight_refused(api: GrpcApiClient) -> None:
    """Should reject queue update with negative weight"""
    made = api.create("Queue", queue("test-queue-update-weight-negative"))
    made["spec"]["weight"] = -1
    refused(lambda: api.update("Queue", made),
            "spec.weight", "should be greater than or equal to 1")  # fmt: skip


def test_queue_deletion_and_hierarchy(api: GrpcApiClient) -> None:
    """Should allow deletion of regular queues; Should allow hierarchical queue
    creation with valid parent"""
    api.create("Queue", queue("test-queue-deletable"))
    api.delete("Queue", "test-queue-deletable")
    api.create("Queue", queue("test-parent-queue", parent="root"))
    api.create("Queue", queue("test-child-queue", parent="test-parent-queue"))
    api.delete("Queue", "test-child-queue")
    api.delete("Queue", "test-parent-queue")


def test_queue_deletion_refused(api: GrpcApiClient) -> None:
    """Beyond the suite, Volcano's queue webhook and policy on DELETE:
    `default` and `root` stay, a parent goes only after its children."""
    api.create("Queue", queue("kept-parent", parent="root"))
    api.create("Queue", queue("kept-child", parent="kept-parent"))
    refused(lambda: api.delete("Queue", "kept-parent"),
            "queue kept-parent can not be deleted because it has 1 child queues: kept-child")  # fmt: skip
    api.delete("Queue", "kept-child")
    api.delete("Queue", "kept-parent")
    with pytest.raises(Invalid, match="`default` queue can not be deleted"):
        api.delete("Queue", "default")


# --- podgroup_validation_test.go, podgroup_mutate_test.go ---------------------------------


def podgroup(name: str, **spec: Any) -> Obj:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": 1, **spec}}  # fmt: skip


def test_podgroup_queue(api: GrpcApiClient) -> None:
    """Should allow PodGroup creation with valid open queue / without queue
    specified; Should not modify podgroup with custom queue"""
    api.create("Queue", queue("pg-open-queue"))
    assert api.create("PodGroup", podgroup("pg-open", queue="pg-open-queue"), NS)["spec"][
        "queue"] == "pg-open-queue"  # fmt: skip
    assert api.create("PodGroup", podgroup("pg-no-queue"), NS)["spec"]["queue"] == "default"


def test_podgroup_queue_from_namespace_annotation(api: GrpcApiClient) -> None:
    """Should set queue from namespace annotation when podgroup uses default
    queue; Should keep default queue when namespace has no queue annotation;
    Should handle multiple podgroups in same namespace"""
    api.create("Queue", queue("ns-queue"))
    api.create("Namespace", {"metadata": {"name": "pg-annotated",
               "annotations": {"scheduling.volcano.sh/queue-name": "ns-queue"}}})  # fmt: skip
    for name in ("pg-a", "pg-b"):
        made = api.create("PodGroup", podgroup(name, queue="default"), "pg-annotated")
        assert made["spec"]["queue"] == "ns-queue"
    api.create("Namespace", {"metadata": {"name": "pg-plain"}})
    assert api.create("PodGroup", podgroup("pg-c"), "pg-plain")["spec"]["queue"] == "default"


# --- pod_validation_test.go ----------------------------------------------------------------

JDB_MIN, JDB_MAX = "volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable"


def pod(name: str, annotations: Obj, scheduler: str = "volcano") -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {**template()["spec"], "schedulerName": scheduler}}  # fmt: skip


@pytest.mark.parametrize(
    ("case", "body"),
    [
        ("valid annotations", pod("pod-valid-annotation", {JDB_MIN: "2"})),
        ("valid percentage annotation", pod("pod-valid-percentage", {JDB_MAX: "50%"})),
        ("without annotations when using volcano scheduler", pod("pod-no-annotation", {})),
        ("non-volcano scheduler (bypass validation)",
         pod("pod-default-scheduler", {JDB_MIN: "-1"}, "default-scheduler")),
    ],
)  # fmt: skip
def test_pod_allowed(api: GrpcApiClient, case: str, body: Obj) -> None:
    """Should allow pod creation with <case>"""
    assert api.create("Pod", body, NS)


@pytest.mark.parametrize(
    ("case", "annotations", "words"),
    [
        ("invalid negative annotation value", {JDB_MIN: "-1"},
         ('invalid value <"-1"> for volcano.sh/jdb-min-available, it must be a positive integer',)),
        ("invalid zero annotation value", {JDB_MIN: "0"}, ("must be a positive integer",)),
        ("invalid percentage annotation (0%)", {JDB_MAX: "0%"},
         ("percentage which between 1% ~ 99%",)),
        ("invalid percentage annotation (100%)", {JDB_MAX: "100%"},
         ("percentage which between 1% ~ 99%",)),
        ("invalid string annotation", {JDB_MIN: "invalid"},
         ('invalid value strconv.Atoi: parsing "invalid": invalid syntax for '
          "volcano.sh/jdb-min-available",)),
        ("multiple conflicting annotations", {JDB_MIN: "2", JDB_MAX: "50%"},
         ("not allow configure multiple annotations <[volcano.sh/jdb-min-available "
          "volcano.sh/jdb-max-unavailable]> at same time",)),
    ],
)  # fmt: skip
def test_pod_refused(
    api: GrpcApiClient, case: str, annotations: Obj, words: tuple[str, ...]
) -> None:
    """Should reject pod creation with <case>"""
    name = "pod-" + "".join(c if c.isalnum() else "-" for c in case.lower())[:40].strip("-")
    refused(lambda: api.create("Pod", pod(name, annotations), NS), *words)
