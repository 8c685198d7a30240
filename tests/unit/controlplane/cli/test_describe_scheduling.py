"""`skiffctl describe pod` shows why a pod is pending and how its node was chosen."""

import json

from tests.fakes.skiffctl import Ctl


def test_describe_pending_pod_shows_scheduler_reason(ctl: Ctl) -> None:
    ctl.client.create(
        "Pod",
        {
            "metadata": {"name": "big", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.",
                    }
                ],
            },
        },
        "default",
    )
    r = ctl("describe", "pod", "big")
    assert r.code == 0, r.err
    assert "Scheduling:" in r.out
    assert "Unschedulable: 0/5 nodes are available: 3 Insufficient cpu" in r.out


def test_describe_bound_pod_shows_score_breakdown(ctl: Ctl) -> None:
    scores = {"node": "n2", "total": 180, "plugins": {"NodeResourcesFit": 90, "ImageLocality": 90}}
    ctl.client.create(
        "Pod",
        {
            "metadata": {
                "name": "web",
                "namespace": "default",
                "annotations": {"scheduler.skiff.dev/scores": json.dumps(scores)},
            },
            "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "busybox"}]},
        },
        "default",
    )
    r = ctl("describe", "pod", "web")
    assert r.code == 0, r.err
    assert "Scheduling:" in r.out and "n2" in r.out.split("Scheduling:")[1]
