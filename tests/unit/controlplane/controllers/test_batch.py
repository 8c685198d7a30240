"""Job and CronJob controllers on the in-memory API, time on a FakeClock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def job(name="work", **spec):
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox"}],
                }
            }
        },
    }
    body["spec"].update(spec)
    return body


def finish(e, pod, phase):
    e.set_pod_status(pod, phase=phase, ready=False)


def job_cond(e, name="work"):
    for c in e.client.get("Job", name).get("status", {}).get("conditions", []):
        if c["status"] == "True":
            return c["type"], c["reason"]
    return None


def test_job_completions_and_parallelism(env):
    e = env("job")
    e.client.create("Job", job(completions=3, parallelism=2))
    e.wait(lambda: len(e.pods()) == 2)
    assert all(p["metadata"]["labels"]["job-name"] == "work" for p in e.pods())
    for p in e.pods():
        finish(e, p, "Succeeded")
    e.wait(
        lambda: len([p for p in e.pods() if p.get("status", {}).get("phase") != "Succeeded"]) == 1
    )
    [last] = [p for p in e.pods() if p.get("status", {}).get("phase") != "Succeeded"]
    finish(e, last, "Succeeded")
    e.wait(lambda: job_cond(e) == ("Complete", "Completed"))
    st = e.client.get("Job", "work")["status"]
    assert st["succeeded"] == 3 and "completionTime" in st and "startTime" in st
    assert len(e.client.calls_of("create", "Pod")) == 3


def test_a_suspended_job_says_so_and_prints_suspended(env):
    """The Suspended condition, as Kubernetes' job controller keeps it, which
    kubectl's and skiffctl's STATUS column read."""
    from controlplane.api.columns import row_for

    e = env("job")
    e.client.create("Job", job(suspend=True))
    e.wait(lambda: job_cond(e) == ("Suspended", "JobSuspended"))
    assert e.pods() == []
    assert row_for("Job", e.client.get("Job", "work"), 0, False)[1] == "Suspended"
    e.client.patch("Job", "work", {"spec": {"suspend": False}})
    e.wait(lambda: len(e.pods()) == 1)
    conds = e.client.get("Job", "work")["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in conds] == [
        ("Suspended", "False", "JobResumed")
    ]
    assert row_for("Job", e.client.get("Job", "work"), 0, False)[1] == "Running"


def test_job_backoff_limit_with_exponential_backoff(env):
    e = env("job")
    e.client.create("Job", job(completions=1, backoffLimit=2))
    e.wait(lambda: len(e.pods()) == 1)
    finish(e, e.pods()[0], "Failed")
    e.wait(lambda: e.client.get("Job", "work").get("status", {}).get("failed") == 1)
    e.wait(e.idle)
    # 10 s backoff before the replacement
    e.clock.step(5)
    e.wait(e.idle)
    assert len(e.client.calls_of("create", "Pod")) == 1
    e.clock.step(6)
    e.wait(lambda: len(e.client.calls_of("create", "Pod")) == 2)
    failing = [p for p in e.pods() if p.get("status", {}).get("phase") != "Failed"]
    finish(e, failing[0], "Failed")
    e.wait(lambda: e.client.get("Job", "work").get("status", {}).get("failed") == 2)
    e.clock.step(21)  # 20 s backoff now
    e.wait(lambda: len(e.client.calls_of("create", "Pod")) == 3)
    failing = [p for p in e.pods() if p.get("status", {}).get("phase") != "Failed"]
    finish(e, failing[0], "Failed")
    e.wait(lambda: job_cond(e) == ("Failed", "BackoffLimitExceeded"))


def test_job_active_deadline(env):
    e = env("job")
    e.client.create("Job", job(parallelism=2, completions=4, activeDeadlineSeconds=30))
    e.wait(lambda: len(e.pods()) == 2)
    e.wait(e.idle)
    e.wait(lambda: (e.cached("Job", "work") or {}).get("status", {}).get("startTime"))
    e.clock.step(31)
    e.settle(lambda: job_cond(e) == ("Failed", "DeadlineExceeded"), step=0.1)
    e.settle(lambda: len(e.pods()) == 0, step=0.1)


def test_job_ttl_after_finished(env):
    e = env("job")
    e.client.create("Job", job(ttlSecondsAfterFinished=100))
    e.wait(lambda: len(e.pods()) == 1)
    finish(e, e.pods()[0], "Succeeded")
    e.wait(lambda: job_cond(e) is not None)
    e.clock.step(101)
    e.wait(lambda: not e.client.objects("Job"))


def cronjob(schedule="*/5 * * * *", **spec):
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox"}],
                        }
                    }
                }
            },
        },
    }
    body["spec"].update(spec)
    return body


def start_clock(e):
    # start on a round hour so schedules are easy to reason about
    e.clock.set(datetime(2030, 1, 1, tzinfo=UTC).timestamp())


def test_cronjob_runs_on_schedule(env):
    e = env("cronjob,job")
    start_clock(e)
    e.client.create("CronJob", cronjob())
    e.wait(e.idle)
    assert e.client.objects("Job") == []
    e.clock.step(300)
    e.wait(lambda: len(e.client.objects("Job")) == 1)
    j = e.client.objects("Job")[0]
    assert j["metadata"]["name"] == f"tick-{int(e.clock.now()) // 60}"
    assert j["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    e.wait(lambda: e.client.get("CronJob", "tick").get("status", {}).get("active"))
    e.clock.step(300)
    e.wait(lambda: len(e.client.objects("Job")) == 2)


def test_cronjob_forbid_and_replace(env):
    e = env("cronjob")
    start_clock(e)
    e.client.create("CronJob", cronjob(concurrencyPolicy="Forbid"))
    e.clock.step(300)
    e.wait(lambda: len(e.client.objects("Job")) == 1)
    e.wait(lambda: e.cached("Job", e.client.objects("Job")[0]["metadata"]["name"]))
    e.wait(e.idle)
    e.clock.step(300)
    e.wait(e.idle)
    assert len(e.client.objects("Job")) == 1  # the first is still running
    e.client.patch("CronJob", "tick", {"spec": {"concurrencyPolicy": "Replace"}})
    e.wait(e.idle)
    e.clock.step(300)
    e.wait(
        lambda: (
            len(e.client.objects("Job")) == 1
            and e.client.objects("Job")[0]["metadata"]["name"] == f"tick-{int(e.clock.now()) // 60}"
        )
    )


def test_cronjob_history_limit_and_suspend(env):
    e = env("cronjob")
    start_clock(e)
    e.client.create("CronJob", cronjob(successfulJobsHistoryLimit=1, suspend=True))
    e.clock.step(600)
    e.wait(e.idle)
    assert e.client.objects("Job") == []
    e.client.patch("CronJob", "tick", {"spec": {"suspend": False}})
    for _ in range(3):
        e.clock.step(300)
        e.wait(lambda: len([j for j in e.client.objects("Job") if not j.get("status")]) == 1)
        for j in e.client.objects("Job"):
            if not j.get("status"):
                j["status"] = {
                    "conditions": [{"type": "Complete", "status": "True"}],
                    "completionTime": "2030-01-01T00:00:00Z",
                }
                j["metadata"].pop("resourceVersion")
                e.client.update_status("Job", j)
        e.wait(
            lambda: all(
                e.cached("Job", j["metadata"]["name"]).get("status")
                for j in e.client.objects("Job")
            )
        )
    e.clock.step(1)
    e.wait(lambda: len(e.client.objects("Job")) == 1)


def test_cronjob_bad_schedule(env):
    e = env("cronjob")
    e.client.create("CronJob", cronjob(schedule="61 * * * *"))
    e.wait(
        lambda: "UnparseableSchedule" in e.controller("cronjob").recorder.reasons("default/tick")
    )


def test_cronjob_runs_in_its_time_zone(env):
    """ "0 9 * * *" in Asia/Tokyo (UTC+9, no DST) fires at 00:00 UTC, not 09:00;
    the scheduled-timestamp annotation is written in the zone."""
    e = env("cronjob")
    e.clock.set(datetime(2030, 1, 1, 23, 0, tzinfo=UTC).timestamp())
    e.client.create("CronJob", cronjob(schedule="0 9 * * *", timeZone="Asia/Tokyo"))
    e.wait(e.idle)
    e.clock.step(3600)  # 2030-01-02 00:00 UTC = 09:00 in Tokyo
    e.wait(lambda: len(e.client.objects("Job")) == 1)
    (j,) = e.client.objects("Job")
    stamp = j["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert stamp == "2030-01-02T09:00:00+09:00"


def test_cronjob_unknown_time_zone(env):
    e = env("cronjob")
    start_clock(e)
    e.client.create("CronJob", cronjob(timeZone="Mars/Olympus_Mons"))
    e.wait(lambda: "UnknownTimeZone" in e.controller("cronjob").recorder.reasons("default/tick"))
    e.clock.step(600)
    e.wait(e.idle)
    assert e.client.objects("Job") == []
