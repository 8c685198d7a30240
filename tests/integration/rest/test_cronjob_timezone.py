"""CronJob `timeZone` through kubectl 1.33 (issue 33): a tz database name is
stored as given; an unknown zone, `Local`, and a `TZ=` prefix in the
schedule are Kubernetes' validation errors, word for word. Before, any
zone was accepted and schedules ran in UTC (the controller's scheduling in
the zone: tests/unit/controlplane/controllers/test_batch.py and
test_pure_decisions.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.rest.conftest import Cluster

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("need_kubectl")]


def cronjob(name: str, schedule: str = "0 9 * * *", **spec: Any) -> str:
    return json.dumps({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": schedule, **spec, "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}}}},
    })  # fmt: skip


def test_a_known_zone_is_kept_and_an_unknown_one_is_refused(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=cronjob("tokyo", timeZone="Asia/Tokyo"))
    got = json.loads(cluster.kubectl("get", "cronjob", "tokyo", "-o", "json").stdout)
    assert got["spec"]["timeZone"] == "Asia/Tokyo"

    bad = cluster.kubectl("apply", "-f", "-", input=cronjob("mars", timeZone="Mars/Olympus"),
                          check=False)  # fmt: skip
    assert bad.returncode != 0
    assert (
        'The CronJob "mars" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": '
        "unknown time zone Mars/Olympus"
    ) in bad.stderr, bad.stderr
    local = cluster.kubectl("apply", "-f", "-", input=cronjob("local", timeZone="Local"),
                            check=False)  # fmt: skip
    assert local.returncode != 0 and "spec.timeZone" in local.stderr, local.stderr
    prefixed = cluster.kubectl("apply", "-f", "-", check=False,
                               input=cronjob("prefixed", schedule="TZ=UTC 0 9 * * *"))  # fmt: skip
    assert prefixed.returncode != 0 and "spec.schedule" in prefixed.stderr, prefixed.stderr
    names = cluster.kubectl("get", "cronjobs", "-o", "name").stdout.split()
    assert names == ["cronjob.batch/tokyo"], names
    cluster.kubectl("delete", "cronjob", "tokyo")
