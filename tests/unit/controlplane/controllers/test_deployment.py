"""The Deployment controller (with the ReplicaSet controller) on the in-memory API."""

from __future__ import annotations

import threading
import time

from controlplane.controllers import rollout

from .conftest import deployment


def rs_list(e, name="web"):
    return [
        r for r in e.client.objects("ReplicaSet") if r["metadata"]["name"].startswith(f"{name}-")
    ]


def ready_count(pods):
    return sum(
        1
        for p in pods.values()
        if not p["metadata"].get("deletionTimestamp")
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (p.get("status") or {}).get("conditions") or []
        )
    )


class ReadyWatcher:
    """Follows every pod event and records the lowest ready count seen after `arm()`."""

    def __init__(self, client):
        self.pods = {}
        self.min_ready = None
        self.armed = False
        self.watch = client.watch("Pod")
        for p in client.objects("Pod"):
            self.pods[p["metadata"]["name"]] = p
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def arm(self):
        self.armed = True

    def run(self):
        for ev in self.watch:
            name = ev.object["metadata"]["name"]
            if ev.type == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = ev.object
            if self.armed:
                n = ready_count(self.pods)
                self.min_ready = n if self.min_ready is None else min(self.min_ready, n)


def rollout_to_completion(e, name="web", replicas=3, image=None, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        e.wait(e.idle)
        e.tick(0.05)  # lets rate-limited retries (after a Conflict) fire
        e.wait(e.idle)
        e.make_ready()
        e.wait(e.idle)
        d = e.client.get("Deployment", name)
        st = d.get("status") or {}
        tmpl_image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        pods = e.pods()
        if (
            st.get("updatedReplicas") == replicas
            and st.get("availableReplicas") == replicas
            and st.get("replicas") == replicas
            and len(pods) == replicas
            and all(p["spec"]["containers"][0]["image"] == (image or tmpl_image) for p in pods)
        ):
            return d
    state = {
        "status": e.client.get("Deployment", name).get("status"),
        "rs": [
            (
                r["metadata"]["name"],
                r["spec"]["replicas"],
                r.get("status"),
                r["metadata"].get("annotations"),
            )
            for r in rs_list(e, name)
        ],
        "pods": [(p["metadata"]["name"], p["spec"]["containers"][0]["image"]) for p in e.pods()],
        "metrics": e.manager.metrics(),
    }
    raise AssertionError(f"rollout did not complete: {state}")


def test_create_makes_replicaset_with_hash_and_revision(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment())
    e.wait(lambda: len(e.pods()) == 3)
    [rs] = rs_list(e)
    h = rs["metadata"]["labels"][rollout.POD_TEMPLATE_HASH]
    assert rs["metadata"]["name"] == f"web-{h}"
    assert rs["spec"]["selector"]["matchLabels"][rollout.POD_TEMPLATE_HASH] == h
    assert rs["metadata"]["annotations"][rollout.REVISION] == "1"
    assert all(p["metadata"]["labels"][rollout.POD_TEMPLATE_HASH] == h for p in e.pods())
    d = rollout_to_completion(e)
    conds = {c["type"]: c for c in d["status"]["conditions"]}
    assert conds["Available"]["status"] == "True"
    assert conds["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert d["metadata"]["annotations"][rollout.REVISION] == "1"


def test_rolling_update_max_unavailable_zero_then_rollback(env):
    e = env("deployment,replicaset")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    e.client.create("Deployment", deployment(strategy=strategy))
    rollout_to_completion(e)
    [old_rs] = rs_list(e)
    watcher = ReadyWatcher(e.client)
    e.wait(lambda: ready_count(watcher.pods) == 3)
    watcher.arm()
    e.client.patch(
        "Deployment",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}},
    )
    d = rollout_to_completion(e, image="nginx:1.26")
    assert watcher.min_ready is not None and watcher.min_ready >= 3
    assert len(rs_list(e)) == 2
    assert d["metadata"]["annotations"][rollout.REVISION] == "2"
    # never more than replicas + maxSurge pods existed at once
    # rollback to the previous revision (kubectl rollout undo)
    e.client.patch("Deployment", "web", {"metadata": {"annotations": {rollout.ROLLBACK_TO: "0"}}})
    d = rollout_to_completion(e, image="nginx:1.25")
    assert rollout.ROLLBACK_TO not in d["metadata"].get("annotations", {})
    rss = {r["metadata"]["name"]: r for r in rs_list(e)}
    assert rss[old_rs["metadata"]["name"]]["spec"]["replicas"] == 3  # the old ReplicaSet is back
    assert rss[old_rs["metadata"]["name"]]["metadata"]["annotations"][rollout.REVISION] == "3"
    assert "DeploymentRollback" in e.controller("deployment").recorder.reasons("default/web")


def test_rollback_to_unknown_revision_is_reported(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment())
    rollout_to_completion(e)
    e.client.patch("Deployment", "web", {"metadata": {"annotations": {rollout.ROLLBACK_TO: "42"}}})
    e.wait(
        lambda: (
            rollout.ROLLBACK_TO
            not in e.client.get("Deployment", "web")["metadata"].get("annotations", {})
        )
    )
    assert "RollbackRevisionNotFound" in e.controller("deployment").recorder.reasons("default/web")
    assert len(rs_list(e)) == 1


def test_recreate_scales_old_to_zero_first(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment(strategy={"type": "Recreate"}))
    rollout_to_completion(e)
    e.client.patch(
        "Deployment",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
    )
    e.wait(lambda: all(r["spec"]["replicas"] == 0 for r in rs_list(e)) or len(rs_list(e)) == 2)
    # while old pods exist, the new ReplicaSet is not created
    e.wait(lambda: len(e.pods()) == 0 or len(rs_list(e)) == 2)
    rollout_to_completion(e, image="nginx:2")
    assert len(rs_list(e)) == 2


def test_pause_and_scale_and_resume(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment())
    rollout_to_completion(e)
    e.client.patch("Deployment", "web", {"spec": {"paused": True}})
    e.client.patch(
        "Deployment",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:9"}]}}}},
    )
    e.wait(
        lambda: any(
            c["reason"] == "DeploymentPaused"
            for c in e.client.get("Deployment", "web")["status"]["conditions"]
        )
    )
    e.wait(e.idle)
    assert len(rs_list(e)) == 1  # paused: no new ReplicaSet
    e.client.patch("Deployment", "web", {"spec": {"replicas": 5}})
    e.wait(lambda: len(e.pods()) == 5)
    e.client.patch("Deployment", "web", {"spec": {"paused": False}})
    rollout_to_completion(e, replicas=5, image="nginx:9")


def test_proportional_scaling_mid_rollout(env):
    e = env("deployment,replicaset")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    e.client.create("Deployment", deployment(replicas=10, strategy=strategy))
    rollout_to_completion(e, replicas=10)
    e.client.patch(
        "Deployment",
        "web",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:new"}]}}}},
    )
    e.wait(lambda: len(rs_list(e)) == 2)
    e.wait(e.idle)
    e.client.patch("Deployment", "web", {"spec": {"replicas": 20}})
    e.wait(lambda: sum(r["spec"]["replicas"] for r in rs_list(e)) >= 20)
    sizes = sorted(r["spec"]["replicas"] for r in rs_list(e))
    assert sizes[0] > 0 and sum(sizes) <= 23  # both grew, within replicas + maxSurge
    rollout_to_completion(e, replicas=20, image="nginx:new")


def test_progress_deadline_exceeded(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment(progressDeadlineSeconds=60))
    e.wait(lambda: len(e.pods()) == 3)
    e.wait(e.idle)
    # pods never become ready; 61 s later the rollout has timed out
    e.clock.step(61)
    e.settle(
        lambda: any(
            c.get("reason") == "ProgressDeadlineExceeded" and c["status"] == "False"
            for c in e.client.get("Deployment", "web").get("status", {}).get("conditions", [])
        ),
        step=1.0,
    )


def test_revision_history_limit(env):
    e = env("deployment,replicaset")
    e.client.create("Deployment", deployment(revisionHistoryLimit=1))
    rollout_to_completion(e)
    for tag in ("a", "b", "c"):
        e.client.patch(
            "Deployment",
            "web",
            {
                "spec": {
                    "template": {"spec": {"containers": [{"name": "c", "image": f"nginx:{tag}"}]}}
                }
            },
        )
        rollout_to_completion(e, image=f"nginx:{tag}")
    e.wait(lambda: len(rs_list(e)) == 2)


def test_empty_selector_is_reported(env):
    e = env("deployment,replicaset")
    bad = deployment()
    bad["spec"]["selector"] = {}
    e.client.create("Deployment", bad)
    e.wait(lambda: "SelectingAll" in e.controller("deployment").recorder.reasons("default/web"))
    assert rs_list(e) == []
