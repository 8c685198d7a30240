"""Volcano on a real control plane (in this process, SQLite in a temp dir) with hollow nodes.

The control plane starts the batch scheduler and the Volcano controllers
like the default ones; hollow nodes (agent/hollow.py) report bound pods
Running and finish deleted ones, as agents would.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.hollow import HollowConfig, HollowNodes
from controlplane import main as cp_main
from controlplane.api import volcano
from controlplane.cli import main as skiffctl
from controlplane.client.apiclient import GrpcApiClient, connect
from controlplane.client.errors import Invalid
from controlplane.scheduler.batch import run as batch_run
from tests.fakes.volcano_examples import example_job
from tests.harness.hollow import wait_schedulable
from tests.harness.wait import wait_for

pytestmark = pytest.mark.slow
NODES = 5  # of 4 cpus each

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcApiClient]:
    base = tmp_path_factory.mktemp("volcano")
    conf = base / "volcano-scheduler.conf"
    conf.write_text(CONF)
    mp = pytest.MonkeyPatch()
    mp.setenv(batch_run.CONFIG_ENV, str(conf))
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(base / "cp"), "--controllers", "*,-podgc"]
    )
    running = cp_main.start(args)
    client = connect(running.admin, timeout=30)
    nodes = HollowNodes(client, HollowConfig(nodes=NODES, cpu="4", memory="16Gi", prefix="vh"))
    try:
        nodes.start()
        wait_schedulable(client, NODES)
        yield client
    finally:
        nodes.stop()
        client.close()
        running.stop()
        mp.undo()


def job(name: str, **spec: Any) -> dict[str, Any]:
    obj = example_job(name)
    obj["spec"].update(spec)
    return obj


def pods_of(api: GrpcApiClient, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in api.list("Pod", "default").items
        if (p["metadata"].get("labels") or {}).get(volcano.JOB_NAME) == name
    ]


def phase(api: GrpcApiClient, name: str) -> str:
    return str(api.get(volcano.JOB_KEY, name, "default")["status"]["state"]["phase"])


def group_of(api: GrpcApiClient, name: str) -> dict[str, Any]:
    j = api.get(volcano.JOB_KEY, name, "default")
    return api.get("PodGroup", f"{name}-{j['metadata']['uid']}", "default")


def finish(api: GrpcApiClient, name: str) -> None:
    api.delete(volcano.JOB_KEY, name, "default")
    wait_for(lambda: not pods_of(api, name), timeout=30, message=f"pods of {name} gone")


def test_example_job_runs_with_its_plugins(api: GrpcApiClient) -> None:
    api.create(volcano.JOB_KEY, job("test-job"), "default")
    try:
        _runs_with_its_plugins(api)
    finally:  # a job left running would hold the queue's room from the next test
        finish(api, "test-job")


def _runs_with_its_plugins(api: GrpcApiClient) -> None:
    wait_for(lambda: phase(api, "test-job") == "Running", timeout=30)

    def all_bound() -> list[dict[str, Any]]:
        # Running once minAvailable run: the others may still be being bound.
        found = pods_of(api, "test-job")
        return found if len(found) == 6 and all(p["spec"].get("nodeName") for p in found) else []

    pods = wait_for(all_bound, timeout=30, message="all six pods bound")
    assert sorted(p["metadata"]["name"] for p in pods) == [
        f"test-job-default-nginx-{i}" for i in range(6)
    ]
    p0 = next(p for p in pods if p["metadata"]["name"].endswith("-0"))
    env = {e["name"]: e["value"] for e in p0["spec"]["containers"][0]["env"]}
    assert (
        env["VK_TASK_INDEX"] == "0"
        and "test-job-default-nginx-5.test-job" in env["VC_DEFAULT_NGINX_HOSTS"]
    )
    assert p0["spec"]["subdomain"] == "test-job"
    assert api.get("Service", "test-job", "default")["spec"]["clusterIP"] == "None"
    hosts = api.get("ConfigMap", "test-job-svc", "default")["data"]["default-nginx.host"]
    assert len(hosts.splitlines()) == 6
    assert "authorized_keys" in api.get("Secret", "test-job-ssh", "default")["data"]
    wait_for(lambda: group_of(api, "test-job")["status"]["phase"] == "Running", timeout=10)


def test_gang_of_six_on_room_for_five_stays_pending(api: GrpcApiClient) -> None:
    big = job("gang6", minAvailable=6, plugins={}, policies=[])
    big["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = (
        "4"
    )
    api.create(volcano.JOB_KEY, big, "default")

    def unschedulable() -> str:
        conds = group_of(api, "gang6").get("status", {}).get("conditions") or []
        message = next((c["message"] for c in conds if c["type"] == "Unschedulable"), "")
        return message if "tasks in gang" in message else ""  # not while pods are created

    message = wait_for(unschedulable, timeout=30)
    # Volcano's words: five could be placed, the sixth not (gang's OnSessionClose).
    assert message.startswith("1/6 tasks in gang unschedulable: pod group is not ready, ")
    assert "Pending: 1 Unschedulable, 5 Schedulable" in message and "Insufficient cpu" in message
    assert len(pods_of(api, "gang6")) == 6
    assert not any(p["spec"].get("nodeName") for p in pods_of(api, "gang6"))
    assert phase(api, "gang6") == "Pending"
    finish(api, "gang6")


def test_pod_evicted_restarts_the_job_and_counts_retries(api: GrpcApiClient) -> None:
    api.create(volcano.JOB_KEY, job("restarty", plugins={}, minAvailable=2), "default")
    # Every pod running first: a hollow node that is still starting a pod
    # misses its deletion (agent/hollow.py handles one event per pod at a time).
    wait_for(
        lambda: api.get(volcano.JOB_KEY, "restarty", "default")["status"].get("running") == 6,
        timeout=30,
    )
    victim = pods_of(api, "restarty")[0]
    api.delete("Pod", victim["metadata"]["name"], "default")  # an eviction it did not ask for

    def restarted() -> bool:
        st = api.get(volcano.JOB_KEY, "restarty", "default")["status"]
        return bool(
            st["retryCount"] == 1 and st["state"]["phase"] == "Running" and st["running"] == 6
        )

    try:
        wait_for(restarted, timeout=60, message="job restarted once and running again")
    except Exception:
        print(api.get(volcano.JOB_KEY, "restarty", "default")["status"])
        print([(p["metadata"]["name"], p["status"].get("phase")) for p in pods_of(api, "restarty")])
        raise
    st = api.get(volcano.JOB_KEY, "restarty", "default")["status"]
    assert st["version"] == 1
    finish(api, "restarty")


def test_plain_pod_with_scheduler_volcano_gets_a_podgroup(api: GrpcApiClient) -> None:
    pod = example_job()["spec"]["tasks"][0]["template"]
    pod.update({"apiVersion": "v1", "kind": "Pod"})
    pod["metadata"] = {"name": "lonely", "namespace": "default"}
    pod["spec"]["schedulerName"] = "volcano"
    api.create("Pod", pod, "default")
    bound = wait_for(
        lambda: api.get("Pod", "lonely", "default")["spec"].get("nodeName"), timeout=30
    )
    assert bound
    group = api.get("Pod", "lonely", "default")["metadata"]["annotations"][
        volcano.GROUP_NAME_ANNOTATION
    ]
    assert api.get("PodGroup", group, "default")["spec"]["minMember"] == 1
    api.delete("Pod", "lonely", "default")


def ctl(api: GrpcApiClient, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = skiffctl.main(list(argv), client_factory=lambda args: api, stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue()


def queue_state(api: GrpcApiClient, name: str) -> str:
    return str(api.get("Queue", name)["status"].get("state"))


def commands(api: GrpcApiClient) -> list[dict[str, Any]]:
    return list(api.list("Command", "default").items)


def test_skiffctl_queues_and_job_commands(api: GrpcApiClient) -> None:
    """vcctl's verbs: queue operate and job suspend/resume create Commands
    that the queue and Job controllers consume; a closed queue refuses new
    jobs, a closing one (a job still running) too, and is Closed once the
    job finishes."""
    assert ctl(api, "queue", "create", "-N", "batch", "--weight", "3")[0] == 0
    code, text = ctl(api, "get", "q")
    assert code == 0 and "batch" in text and "WEIGHT" in text
    assert ctl(api, "queue", "operate", "-N", "batch", "--action", "close")[0] == 0
    wait_for(lambda: queue_state(api, "batch") == "Closed", timeout=30)
    with pytest.raises(Invalid, match="queue `batch` status is `Closed`"):
        api.create(volcano.JOB_KEY, job("shut-out", queue="batch", plugins={}), "default")
    assert ctl(api, "queue", "operate", "-N", "batch", "--action", "open")[0] == 0
    wait_for(lambda: queue_state(api, "batch") == "Open", timeout=30)
    api.create(volcano.JOB_KEY, job("pausable", queue="batch", plugins={}), "default")
    wait_for(
        lambda: api.get(volcano.JOB_KEY, "pausable", "default")["status"].get("running") == 6,
        timeout=30,
    )
    code, text = ctl(api, "get", "vj")
    assert code == 0 and "pausable" in text and "Running" in text
    assert ctl(api, "job", "suspend", "-N", "pausable")[0] == 0
    wait_for(lambda: phase(api, "pausable") == "Aborted", timeout=30)
    assert not [p for p in pods_of(api, "pausable") if not p["metadata"].get("deletionTimestamp")]
    assert ctl(api, "job", "resume", "-N", "pausable")[0] == 0
    wait_for(lambda: phase(api, "pausable") == "Running", timeout=30)
    wait_for(lambda: not commands(api), timeout=10, message="the Commands consumed")
    code, text = ctl(api, "job", "list")
    assert code == 0 and "pausable" in text

    assert ctl(api, "queue", "operate", "-N", "batch", "--action", "close")[0] == 0
    wait_for(lambda: queue_state(api, "batch") == "Closing", timeout=30)
    with pytest.raises(Invalid, match="queue `batch` status is `Closing`"):
        api.create(volcano.JOB_KEY, job("shut-out", queue="batch", plugins={}), "default")
    target = api.get(volcano.JOB_KEY, "pausable", "default")
    api.create("Command", volcano.command_for(target, "CompleteJob", "default"), "default")
    wait_for(lambda: phase(api, "pausable") == "Completed", timeout=30)
    wait_for(lambda: queue_state(api, "batch") == "Closed", timeout=30)
    assert phase(api, "pausable") == "Completed"
    finish(api, "pausable")


def test_bad_batch_configuration_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown action is refused naming its line, as Volcano's scheduler
    refuses it ("failed to find Action"); an unknown plugin is only skipped."""
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text('tiers:\n- plugins:\n  - name: gang\nactions: "enqueue, allocatte"\n')
    monkeypatch.setenv(batch_run.CONFIG_ENV, str(conf))
    args = cp_main.build_parser().parse_args(
        ["--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "cp"), "--controllers", "job"]
    )
    with pytest.raises(cp_main.StartError) as err:
        cp_main.start(args).stop()
    assert "volcano-scheduler: refusing to start" in str(err.value)
    assert f"{conf}: line 4: unknown action 'allocatte'" in str(err.value)


def test_job_volumes_become_claims_the_task_pods_mount(api: GrpcApiClient) -> None:
    """As Volcano's job controller: a `volumeClaim` becomes a claim the job owns, a
    `volumeClaimName` must exist before any pod is made, and every pod mounts both."""
    claim_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    both = {"mountPath": "/a", "volumeClaimName": "x", "volumeClaim": claim_spec}
    with pytest.raises(Invalid) as err:
        api.create(volcano.JOB_KEY, job("vols-bad", volumes=[both]), "default")
    assert "spec.volumes[0]" in str(err.value) and "conflict" in str(err.value)
    vols = [
        {"mountPath": "/scratch", "volumeClaim": claim_spec},
        {"mountPath": "/shared", "volumeClaimName": "vols-shared"},
    ]
    body = job("vols", volumes=vols, plugins={}, policies=[], minAvailable=2)
    body["spec"]["tasks"][0]["replicas"] = 2
    created = api.create(volcano.JOB_KEY, body, "default")
    wait_for(
        lambda: any(
            c["metadata"]["name"].startswith("vols-volume-")
            for c in api.list("PersistentVolumeClaim", "default").items
        ),
        timeout=30,
        message="the job's own claim",
    )
    assert not pods_of(api, "vols")  # vols-shared does not exist yet
    api.create(
        "PersistentVolumeClaim",
        {"metadata": {"name": "vols-shared"}, "spec": claim_spec},
        "default",
    )
    wait_for(lambda: len(pods_of(api, "vols")) == 2, timeout=30, message="pods of vols")
    [own] = [
        c
        for c in api.list("PersistentVolumeClaim", "default").items
        if c["metadata"]["name"].startswith("vols-volume-")
    ]
    assert own["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]
    for pod in pods_of(api, "vols"):
        claims = {
            v["persistentVolumeClaim"]["claimName"]: v["name"]
            for v in pod["spec"]["volumes"]
            if "persistentVolumeClaim" in v
        }
        assert set(claims) == {own["metadata"]["name"], "vols-shared"}
        mounts = {m["mountPath"]: m["name"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
        assert mounts["/scratch"] == claims[own["metadata"]["name"]]
        assert mounts["/shared"] == claims["vols-shared"]
    status = api.get(volcano.JOB_KEY, "vols", "default")["status"]["controlledResources"]
    assert status["volume-pvc-vols-shared"] == "vols-shared"
    finish(api, "vols")
    api.delete("PersistentVolumeClaim", "vols-shared", "default")
