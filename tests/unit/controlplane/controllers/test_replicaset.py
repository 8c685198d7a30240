"""The ReplicaSet controller against the in-memory API."""

from __future__ import annotations

from controlplane.client import errors

from .conftest import replicaset


def test_creates_and_scales(env):
    e = env("replicaset")
    e.client.create("ReplicaSet", replicaset(replicas=5))
    e.wait(lambda: len(e.pods()) == 5)
    e.wait(e.idle)
    # exactly five creations: expectations prevent duplicates while caches catch up
    assert len(e.client.calls_of("create", "Pod")) == 5
    for p in e.pods():
        ref = p["metadata"]["ownerReferences"][0]
        assert ref["kind"] == "ReplicaSet" and ref["controller"] is True
        assert p["metadata"]["name"].startswith("rs-")
    e.client.patch("ReplicaSet", "rs", {"spec": {"replicas": 2}})
    e.wait(lambda: len(e.pods()) == 2)
    e.make_ready()
    e.wait(lambda: e.client.get("ReplicaSet", "rs").get("status", {}).get("readyReplicas") == 2)
    st = e.client.get("ReplicaSet", "rs")["status"]
    assert st["replicas"] == 2 and st["availableReplicas"] == 2 and st["observedGeneration"] == 2


def test_deletes_least_valuable_first(env):
    e = env("replicaset")
    e.client.create("ReplicaSet", replicaset(replicas=3))
    e.wait(lambda: len(e.pods()) == 3)
    pods = e.pods()
    e.set_pod_status(pods[0], node="n1")
    e.set_pod_status(pods[1], node="n2")
    # pods[2] stays unscheduled and pending
    for p in pods[:2]:
        e.wait(
            lambda p=p: (
                (e.cached("Pod", p["metadata"]["name"]) or {}).get("status", {}).get("phase")
                == "Running"
            )
        )
    e.client.patch("ReplicaSet", "rs", {"spec": {"replicas": 2}})
    e.wait(lambda: len(e.pods()) == 2)
    assert pods[2]["metadata"]["name"] not in {p["metadata"]["name"] for p in e.pods()}


def test_adopts_orphans_and_releases_non_matching(env):
    e = env("replicaset")
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "namespace": "default", "labels": {"app": "rs"}},
        "spec": {},
    }
    e.client.create("Pod", orphan)
    e.wait(lambda: e.cached("Pod", "orphan"))
    e.client.create("ReplicaSet", replicaset(replicas=2))
    e.wait(lambda: len(e.pods()) == 2)
    e.wait(lambda: e.client.get("Pod", "orphan")["metadata"].get("ownerReferences"))
    assert len(e.client.calls_of("create", "Pod")) == 2  # the orphan + one new
    # relabel a pod: it is released and replaced
    e.client.patch("Pod", "orphan", {"metadata": {"labels": {"app": "other"}}})
    e.wait(lambda: not e.client.get("Pod", "orphan")["metadata"].get("ownerReferences"))
    e.wait(lambda: len([p for p in e.pods() if p["metadata"]["labels"].get("app") == "rs"]) == 2)


def test_create_failure_is_retried(env):
    e = env("replicaset")
    e.client.fail("create", errors.Unavailable("boom"), kind="Pod", times=2)
    e.client.create("ReplicaSet", replicaset(replicas=3))
    e.settle(lambda: len(e.pods()) == 3)
    assert e.controller("replicaset").metrics.errors >= 1


def test_selector_not_matching_template_creates_nothing(env):
    e = env("replicaset,deployment,statefulset")
    bad = replicaset(replicas=2)
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    e.client.create("ReplicaSet", bad)
    e.wait(lambda: "SelectorMismatch" in e.controller("replicaset").recorder.reasons("default/rs"))
    e.wait(e.idle)
    assert e.pods() == []
    # the controller keeps serving everything else
    e.client.create("ReplicaSet", replicaset(name="good", replicas=1))
    e.wait(lambda: len(e.pods()) == 1)


def test_negative_replicas_reported(env):
    e = env("replicaset")
    e.client.create("ReplicaSet", replicaset(replicas=-3))
    e.wait(lambda: "InvalidReplicas" in e.controller("replicaset").recorder.reasons("default/rs"))
    assert e.pods() == []


def test_min_ready_seconds_availability(env):
    e = env("replicaset")
    rs = replicaset(replicas=2)
    rs["spec"]["minReadySeconds"] = 30
    e.client.create("ReplicaSet", rs)
    e.wait(lambda: len(e.pods()) == 2)
    e.make_ready()
    e.wait(lambda: e.client.get("ReplicaSet", "rs").get("status", {}).get("readyReplicas") == 2)
    assert e.client.get("ReplicaSet", "rs")["status"]["availableReplicas"] == 0
    e.clock.step(31)
    e.settle(lambda: e.client.get("ReplicaSet", "rs")["status"]["availableReplicas"] == 2, step=1.0)


def test_pod_status_changes_are_folded_into_few_syncs(env):
    e = env("replicaset")
    rs_ctl = e.controller("replicaset")
    n = rs_ctl.STATUS_BATCH_MIN_PODS
    e.client.create("ReplicaSet", replicaset(replicas=n))
    e.settle(lambda: len(e.pods()) == n)
    # Settled: the status write has come back through the informer and was synced.
    e.wait(lambda: (e.cached("ReplicaSet", "rs") or {}).get("status", {}).get("replicas") == n)
    e.wait(e.idle)
    syncs = rs_ctl.metrics.reconciles
    pods = e.pods()

    def cached_all(check):
        return all(check(e.cached("Pod", p["metadata"]["name"]) or {}) for p in pods)

    # A bind changes nothing the ReplicaSet reports: no sync.
    for i, p in enumerate(pods):
        e.client.patch("Pod", p["metadata"]["name"], {"spec": {"nodeName": f"n{i}"}})
    e.wait(lambda: cached_all(lambda p: p.get("spec", {}).get("nodeName")))
    e.wait(e.idle)
    assert rs_ctl.metrics.reconciles == syncs and rs_ctl.queue.waiting() == 0
    # Readiness changes of a ReplicaSet this size wait n ms and are reported in one sync.
    assert e.make_ready() == n
    e.wait(lambda: cached_all(lambda p: p.get("status", {}).get("phase") == "Running"))
    assert rs_ctl.queue.waiting() == 1 and rs_ctl.metrics.reconciles == syncs
    ready = e.settle(
        lambda: e.client.get("ReplicaSet", "rs").get("status", {}).get("readyReplicas") == n,
        step=0.01,
    )
    assert ready
    e.wait(e.idle)
    # One sync for the pods, and one when its own status write comes back.
    assert rs_ctl.metrics.reconciles <= syncs + 2


def test_small_replicaset_reports_readiness_at_once(env):
    e = env("replicaset")
    e.client.create("ReplicaSet", replicaset(replicas=2))
    e.wait(lambda: len(e.pods()) == 2)
    e.make_ready()
    # No clock step needed: fewer pods than STATUS_BATCH_MIN_PODS are not batched.
    e.wait(lambda: e.client.get("ReplicaSet", "rs").get("status", {}).get("readyReplicas") == 2)
