"""Kubernetes' pod rules for ephemeral containers and native sidecars."""

from typing import Any

from controlplane.api.ephemeral import (
    ephemeral_problems,
    ephemeral_update,
    ephemeral_update_problems,
    init_container_problems,
)


def pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox"}]}
    base.update(spec)
    return {"metadata": {"name": "p"}, "spec": base}


def test_ephemeral_containers_may_not_have_ports_probes_resources_or_lifecycle() -> None:
    p = pod(ephemeralContainers=[{
        "name": "dbg", "image": "busybox", "ports": [{"containerPort": 80}],
        "readinessProbe": {"exec": {"command": ["true"]}}, "resources": {"limits": {"cpu": "1"}},
        "lifecycle": {"postStart": {"exec": {"command": ["true"]}}},
        "volumeMounts": [{"name": "v", "mountPath": "/v", "subPath": "x"}],
    }])  # fmt: skip
    got = dict(ephemeral_problems(p))
    for field in ("ports", "readinessProbe", "resources", "lifecycle", "volumeMounts[0].subPath"):
        assert got[f"spec.ephemeralContainers[0].{field}"] == (
            "Forbidden: cannot be set for an Ephemeral Container"
        )


def test_names_unique_and_the_target_must_exist() -> None:
    p = pod(ephemeralContainers=[
        {"name": "app", "image": "busybox"},
        {"name": "dbg", "image": "busybox", "targetContainerName": "nosuch"},
        {"name": "ok", "image": "busybox", "targetContainerName": "app"},
    ])  # fmt: skip
    assert ephemeral_problems(p) == [
        ("spec.ephemeralContainers[0].name", 'Duplicate value: "app"'),
        ("spec.ephemeralContainers[1].targetContainerName", 'Not found: "nosuch"'),
    ]


def test_the_subresource_changes_only_ephemeral_containers_and_never_an_existing_one() -> None:
    old = pod(ephemeralContainers=[{"name": "a", "image": "busybox"}])
    req = pod(ephemeralContainers=[{"name": "a", "image": "busybox"},
                                   {"name": "b", "image": "busybox"}])  # fmt: skip
    req["spec"]["containers"][0]["image"] = "nginx"  # ignored by the subresource
    new = ephemeral_update(old, req)
    assert [c["name"] for c in new["spec"]["ephemeralContainers"]] == ["a", "b"]
    assert new["spec"]["containers"][0]["image"] == "busybox"
    assert ephemeral_update_problems(old, new) == []
    changed = ephemeral_update(old, pod(ephemeralContainers=[{"name": "a", "image": "alpine"}]))
    assert ephemeral_update_problems(old, changed) == [
        (
            "spec.ephemeralContainers[a]",
            'Forbidden: existing ephemeral containers "a" may not be changed',
        )
    ]
    removed = ephemeral_update(old, pod())
    assert "ephemeralContainers" not in removed["spec"]
    assert ephemeral_update_problems(old, removed)[0][1].endswith('"a" may not be removed')


def test_init_containers_restart_policy_and_probes() -> None:
    p = pod(initContainers=[
        {"name": "side", "image": "b", "restartPolicy": "Always", "readinessProbe": {}},
        {"name": "once", "image": "b", "restartPolicy": "Never"},
        {"name": "probed", "image": "b", "livenessProbe": {"exec": {"command": ["true"]}}},
    ])  # fmt: skip
    assert init_container_problems(p) == [
        ("spec.initContainers[1].restartPolicy", 'Unsupported value: "Never": supported values: "Always"'),
        ("spec.initContainers[2].livenessProbe",
         "Forbidden: may not be set for init containers without restartPolicy=Always"),
    ]  # fmt: skip


def cronjob(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick", "namespace": "default"},
        "spec": {"schedule": "0 9 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}},
    }  # fmt: skip
    body["spec"].update(spec)
    return body


def test_cronjob_time_zone_is_validated_against_the_tz_database() -> None:
    from controlplane.api.validation import validate

    assert validate("CronJob", cronjob(timeZone="Europe/Berlin")) == []
    assert validate("CronJob", cronjob(timeZone="Etc/UTC")) == []
    assert validate("CronJob", cronjob(timeZone="Mars/Olympus")) == [
        'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'
    ]
    assert validate("CronJob", cronjob(timeZone="../../etc/passwd")) == [
        'spec.timeZone: Invalid value: "../../etc/passwd": unknown time zone ../../etc/passwd'
    ]
    assert validate("CronJob", cronjob(timeZone="Local"))[0].endswith(
        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    )
    assert validate("CronJob", cronjob(schedule="TZ=UTC 0 9 * * *")) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 9 * * *": cannot use TZ or CRON_TZ in schedule,'
        " use timeZone field instead"
    ]


def test_pod_validation_carries_the_sidecar_and_ephemeral_rules() -> None:
    from controlplane.api.validation import validate

    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         **pod(ephemeralContainers=[{"name": "dbg", "image": "busybox", "targetContainerName": "x"}])}  # fmt: skip
    assert 'spec.ephemeralContainers[0].targetContainerName: Not found: "x"' in validate("Pod", p)
