"""skiffctl rollout status/history/undo/pause/resume/restart against the fake API client.

The Deployment controller is not running here: tests write the ReplicaSets
it would keep (one per template, revision annotation, controller owner
reference) and the status it would report.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from controlplane.cli.rollout import (
    RolloutFailed,
    daemonset_status,
    deployment_status,
    statefulset_status,
)
from controlplane.controllers.rollout import POD_TEMPLATE_HASH, REVISION, template_hash
from tests.fakes.skiffctl import Ctl, Result
from tests.harness.wait import wait_for


def template(image: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "nginx"}},
        "spec": {
            "containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]
        },
    }


def deployment(ctl: Ctl, image: str = "nginx:1.14.2", **spec: Any) -> dict[str, Any]:
    return ctl.client.create(
        "Deployment",
        {
            "apiVersion": "apps/v1",
            "metadata": {"name": "nginx", "annotations": {"team": "web"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": template(image),
                **spec,
            },
        },
        "default",
    )


def replicaset(
    ctl: Ctl, d: dict[str, Any], image: str, revision: int, cause: str = ""
) -> dict[str, Any]:
    """The ReplicaSet the controller keeps for one template and revision."""
    t = template(image)
    h = template_hash(t)
    t["metadata"]["labels"][POD_TEMPLATE_HASH] = h
    ann = {
        REVISION: str(revision),
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
        "team": "web",
    }
    if cause:
        ann["kubernetes.io/change-cause"] = cause
    return ctl.client.create(
        "ReplicaSet",
        {
            "metadata": {
                "name": f"nginx-{h}",
                "labels": dict(t["metadata"]["labels"]),
                "annotations": ann,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "name": "nginx",
                        "uid": d["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "nginx", POD_TEMPLATE_HASH: h}},
                "template": t,
            },
        },
        "default",
    )


def two_revisions(ctl: Ctl) -> dict[str, Any]:
    """nginx at revision 2 (1.16.1) after revision 1 (1.14.2)."""
    d = deployment(ctl, "nginx:1.16.1")
    replicaset(ctl, d, "nginx:1.14.2", 1, cause="first")
    replicaset(ctl, d, "nginx:1.16.1", 2)
    ctl.client.patch(
        "Deployment", "nginx", {"metadata": {"annotations": {REVISION: "2"}}}, "default"
    )
    return d


def set_status(ctl: Ctl, kind: str = "Deployment", name: str = "nginx", **status: Any) -> None:
    obj = ctl.client.get(kind, name, "default")
    obj["status"] = status
    ctl.client.update_status(kind, obj)


def run_async(ctl: Ctl, *argv: str) -> tuple[threading.Thread, list[Result]]:
    out: list[Result] = []
    t = threading.Thread(target=lambda: out.append(ctl(*argv)), daemon=True)
    t.start()
    return t, out


# ---- history ----------------------------------------------------------------------


def test_history_lists_revisions_with_change_cause(ctl: Ctl) -> None:
    d = two_revisions(ctl)
    # A ReplicaSet the Deployment does not control is no revision of it.
    stranger = copy.deepcopy(d)
    stranger["metadata"]["uid"] = "someone-else"
    replicaset(ctl, stranger, "nginx:9", 7)
    r = ctl("rollout", "history", "deployment/nginx")
    assert r.code == 0, r.err
    assert r.out == (
        "deployment.apps/nginx \nREVISION   CHANGE-CAUSE\n1          first\n2          <none>\n\n"
    )
    r = ctl("rollout", "history", "deploy", "nginx", "--revision", "1")
    assert r.code == 0, r.err
    assert r.out.startswith("deployment.apps/nginx with revision #1\nPod Template:\n")
    assert "Image:" in r.out and "nginx:1.14.2" in r.out
    assert "kubernetes.io/change-cause=first" in r.out
    r = ctl("rollout", "history", "deployment/nginx", "--revision=5")
    assert (r.code, r.err) == (1, "error: unable to find the specified revision\n")


def test_history_errors(ctl: Ctl) -> None:
    r = ctl("rollout", "history", "deployment/nope")
    assert r.code == 1 and "NotFound" in r.err and "nope" in r.err
    r = ctl("rollout", "history", "pod/x")
    assert r.code == 1 and "only Deployments" in r.err
    r = ctl("rollout", "sideways", "deployment/nginx")
    assert r.code == 2
    deployment(ctl)
    assert ctl("rollout", "history", "deployment/nginx").out == (
        "No rollout history found in deployment.apps/nginx\n"
    )


# ---- undo ------------------------------------------------------------------------------


def test_undo_to_previous_revision_copies_template_and_annotations(ctl: Ctl) -> None:
    two_revisions(ctl)
    r = ctl("rollout", "undo", "deployment/nginx")
    assert (r.code, r.out) == (0, "deployment.apps/nginx rolled back\n"), r.err
    d = ctl.client.get("Deployment", "nginx", "default")
    assert d["spec"]["template"] == template("nginx:1.14.2")  # no pod-template-hash label
    ann = d["metadata"]["annotations"]
    assert ann["kubernetes.io/change-cause"] == "first"
    assert ann[REVISION] == "2"  # kept from the Deployment; the controller moves it
    assert "deployment.kubernetes.io/desired-replicas" not in ann
    assert d["metadata"]["generation"] == 2
    [update] = ctl.client.calls_of("update", "Deployment")
    assert update.body is not None and update.body["metadata"]["resourceVersion"]


def test_undo_to_revision_skip_and_unknown(ctl: Ctl) -> None:
    two_revisions(ctl)
    r = ctl("rollout", "undo", "deployment/nginx", "--to-revision=2")
    assert r.code == 0
    assert r.out == (
        "deployment.apps/nginx skipped rollback (current template already matches revision 2)\n"
    )
    assert not ctl.client.calls_of("update", "Deployment")
    r = ctl("rollout", "undo", "deployment/nginx", "--to-revision", "9")
    assert (r.code, r.err) == (1, "error: unable to find specified revision 9 in history\n")
    r = ctl("rollout", "undo", "deployment/nginx", "--to-revision", "1")
    assert (r.code, r.out) == (0, "deployment.apps/nginx rolled back\n")
    image = ctl.client.get("Deployment", "nginx", "default")["spec"]["template"]["spec"]
    assert image["containers"][0]["image"] == "nginx:1.14.2"


def test_undo_without_history_or_paused(ctl: Ctl) -> None:
    d = deployment(ctl)
    replicaset(ctl, d, "nginx:1.14.2", 1)
    r = ctl("rollout", "undo", "deployment/nginx")
    assert (r.code, r.err) == (1, 'error: no rollout history found for deployment "nginx"\n')
    ctl.client.patch("Deployment", "nginx", {"spec": {"paused": True}}, "default")
    r = ctl("rollout", "undo", "deployment/nginx")
    assert r.code == 1 and "cannot rollback a paused deployment" in r.err


def test_undo_retries_on_conflict(ctl: Ctl) -> None:
    from controlplane.client import errors

    two_revisions(ctl)
    ctl.client.fail("update", errors.Conflict("modified"), kind="Deployment")
    r = ctl("rollout", "undo", "deployment/nginx")
    assert r.code == 0, r.err
    assert len(ctl.client.calls_of("update", "Deployment")) == 2


# ---- pause, resume, restart ---------------------------------------------------------------


def test_pause_resume(ctl: Ctl) -> None:
    deployment(ctl)
    assert ctl("rollout", "pause", "deployment/nginx").out == "deployment.apps/nginx paused\n"
    assert ctl.client.get("Deployment", "nginx", "default")["spec"]["paused"] is True
    r = ctl("rollout", "pause", "deployment/nginx")
    assert (r.code, r.err) == (1, 'error: deployments.apps "nginx" is already paused\n')
    r = ctl("rollout", "restart", "deployment/nginx")
    assert r.code == 1 and "can't restart paused deployment" in r.err
    assert ctl("rollout", "resume", "deploy", "nginx").out == "deployment.apps/nginx resumed\n"
    assert ctl.client.get("Deployment", "nginx", "default")["spec"]["paused"] is False
    r = ctl("rollout", "resume", "deployment/nginx")
    assert (r.code, r.err) == (1, 'error: deployments.apps "nginx" is not paused\n')
    r = ctl("rollout", "pause", "statefulset/x")
    assert r.code == 1 and "only Deployments" in r.err


def test_restart_stamps_the_template(ctl: Ctl) -> None:
    deployment(ctl)
    r = ctl("rollout", "restart", "deployment/nginx")
    assert (r.code, r.out) == (0, "deployment.apps/nginx restarted\n")
    d = ctl.client.get("Deployment", "nginx", "default")
    stamp = d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
    assert stamp == "2023-11-14T22:13:20Z"  # the fake clock's time
    assert d["metadata"]["generation"] == 2
    r = ctl("rollout", "restart", "pod/x")
    assert r.code == 1 and "not supported" in r.err


# ---- status --------------------------------------------------------------------------------


def dep(generation: int = 1, desired: int = 3, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "generation": generation, "annotations": {REVISION: "2"}},
        "spec": {"replicas": desired},
        "status": status,
    }


@pytest.mark.parametrize(
    ("obj", "message", "done"),
    [
        (
            dep(2, observedGeneration=1),
            "Waiting for deployment spec update to be observed...",
            False,
        ),
        (
            dep(observedGeneration=1, updatedReplicas=1, replicas=4),
            'Waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated...',
            False,
        ),
        (
            dep(observedGeneration=1, updatedReplicas=3, replicas=4, availableReplicas=3),
            'Waiting for deployment "web" rollout to finish: 1 old replicas are pending termination...',
            False,
        ),
        (
            dep(observedGeneration=1, updatedReplicas=3, replicas=3, availableReplicas=2),
            'Waiting for deployment "web" rollout to finish: 2 of 3 updated replicas are available...',
            False,
        ),
        (
            dep(observedGeneration=1, updatedReplicas=3, replicas=3, availableReplicas=3),
            'deployment "web" successfully rolled out',
            True,
        ),
    ],
)
def test_deployment_status_table(obj: dict[str, Any], message: str, done: bool) -> None:
    p = deployment_status(obj)
    assert (p.message, p.done) == (message, done)


def test_status_failures_and_other_kinds() -> None:
    stuck = dep(
        observedGeneration=1,
        conditions=[{"type": "Progressing", "reason": "ProgressDeadlineExceeded"}],
    )
    with pytest.raises(RolloutFailed, match="exceeded its progress deadline"):
        deployment_status(stuck)
    with pytest.raises(RolloutFailed, match=r"desired revision \(3\)"):
        deployment_status(dep(observedGeneration=1), revision=3)
    sts: dict[str, Any] = {
        "metadata": {"name": "db", "generation": 2},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 2, "readyReplicas": 1},
    }
    assert statefulset_status(sts).message == "Waiting for 1 pods to be ready..."
    sts["status"].update(
        readyReplicas=2, updatedReplicas=1, currentRevision="a", updateRevision="b"
    )
    assert not statefulset_status(sts).done
    sts["status"].update(updatedReplicas=2, currentRevision="b")
    assert statefulset_status(sts).done
    sts["spec"]["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}
    assert statefulset_status(sts).message.startswith("partitioned roll out complete")
    ds: dict[str, Any] = {
        "metadata": {"name": "agent", "generation": 1},
        "spec": {},
        "status": {
            "observedGeneration": 1,
            "desiredNumberScheduled": 2,
            "updatedNumberScheduled": 1,
        },
    }
    assert "1 out of 2 new pods" in daemonset_status(ds).message
    ds["status"].update(updatedNumberScheduled=2, numberAvailable=2)
    assert daemonset_status(ds).message == 'daemon set "agent" successfully rolled out'
    ds["spec"]["updateStrategy"] = {"type": "OnDelete"}
    with pytest.raises(RolloutFailed):
        daemonset_status(ds)


def test_status_follows_watch_until_done(ctl: Ctl) -> None:
    deployment(ctl)
    set_status(ctl, observedGeneration=1, updatedReplicas=1, replicas=3)
    t, out = run_async(ctl, "rollout", "status", "deployment/nginx")
    wait_for(lambda: ctl.client.open_watches("Deployment") == 1)
    set_status(ctl, observedGeneration=1, updatedReplicas=1, replicas=3)  # same line again
    set_status(ctl, observedGeneration=1, updatedReplicas=3, replicas=4, availableReplicas=2)
    set_status(ctl, observedGeneration=1, updatedReplicas=3, replicas=3, availableReplicas=3)
    t.join(5)
    assert out and out[0].code == 0, out
    assert out[0].out == (
        'Waiting for deployment "nginx" rollout to finish: 1 out of 3 new replicas have been updated...\n'
        'Waiting for deployment "nginx" rollout to finish: 1 old replicas are pending termination...\n'
        'deployment "nginx" successfully rolled out\n'
    )
    assert ctl.client.open_watches("Deployment") == 0


def test_status_times_out_on_the_clock_and_no_watch(ctl: Ctl) -> None:
    deployment(ctl)
    r = ctl("rollout", "status", "deployment/nginx", "--watch=false")
    assert (r.code, r.out) == (0, "Waiting for deployment spec update to be observed...\n")
    t, out = run_async(ctl, "rollout", "status", "deployment/nginx", "--timeout", "2m")
    wait_for(lambda: ctl.client.open_watches("Deployment") == 1)
    ctl.clock.step(120)
    t.join(5)
    assert out and out[0].code == 1
    assert out[0].err == "error: timed out waiting for the condition\n"


def test_status_rewatches_after_server_closes_and_fails_on_delete(ctl: Ctl) -> None:
    deployment(ctl)
    t, out = run_async(ctl, "rollout", "status", "deployment/nginx")
    wait_for(lambda: ctl.client.open_watches("Deployment") == 1)
    ctl.client.end_watches()
    wait_for(lambda: ctl.client.open_watches("Deployment") == 1)
    ctl.client.delete("Deployment", "nginx", "default")
    t.join(5)
    assert out and out[0].code == 1 and out[0].err == "error: object has been deleted\n"


def test_status_of_daemonset_and_unsupported_kind(ctl: Ctl) -> None:
    ctl.client.create("DaemonSet", {"metadata": {"name": "agent"}, "spec": {}}, "default")
    set_status(
        ctl,
        "DaemonSet",
        "agent",
        observedGeneration=1,
        desiredNumberScheduled=1,
        updatedNumberScheduled=1,
        numberAvailable=1,
    )
    r = ctl("rollout", "status", "ds/agent")
    assert (r.code, r.out) == (0, 'daemon set "agent" successfully rolled out\n')
    r = ctl("rollout", "status", "pod/x")
    assert r.code == 1 and "no status viewer" in r.err


def test_status_relists_when_its_version_is_too_old(ctl: Ctl) -> None:
    from controlplane.client import errors

    deployment(ctl)
    set_status(ctl, observedGeneration=1, updatedReplicas=1, replicas=3)
    ctl.client.fail("watch", errors.Gone("too old resource version"), kind="Deployment")
    t, out = run_async(ctl, "rollout", "status", "deployment/nginx")
    wait_for(lambda: ctl.client.open_watches("Deployment") == 1)
    assert len(ctl.client.calls_of("watch", "Deployment")) == 2
    set_status(ctl, observedGeneration=1, updatedReplicas=3, replicas=3, availableReplicas=3)
    t.join(5)
    assert out and out[0].code == 0, out
    assert out[0].out.endswith('deployment "nginx" successfully rolled out\n')
