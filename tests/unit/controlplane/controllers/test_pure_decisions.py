"""Table tests: pod ranking, Job plans, cron schedules, node health, CIDR allocation."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from controlplane.controllers import cron, ipam, job_calc, node_health, ranking
from controlplane.controllers.job_calc import JobCounts


def pod(
    name,
    node="",
    phase="Running",
    ready=False,
    ready_at="2024-01-01T00:00:00Z",
    created="2024-01-01T00:00:00Z",
    restarts=0,
):
    conds = [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": ready_at}
    ]
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": conds,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def test_ranking_order():
    pods = [
        pod(
            "ready-old",
            "n1",
            ready=True,
            ready_at="2024-01-01T00:00:00Z",
            created="2024-01-01T00:00:00Z",
        ),
        pod(
            "ready-new",
            "n2",
            ready=True,
            ready_at="2024-01-01T01:00:00Z",
            created="2024-01-01T00:30:00Z",
        ),
        pod("notready", "n3", ready=False),
        pod("pending", "n4", phase="Pending"),
        pod("unscheduled", "", phase="Pending"),
        pod("unknown", "n5", phase="Unknown"),
    ]
    names = [p["metadata"]["name"] for p in ranking.rank(pods)]
    assert names == ["unscheduled", "pending", "unknown", "notready", "ready-new", "ready-old"]


def test_ranking_restarts_and_age_and_colocation():
    a = pod("a", "n1", ready=True, restarts=5)
    b = pod("b", "n2", ready=True, restarts=0)
    assert [p["metadata"]["name"] for p in ranking.rank([b, a])] == ["a", "b"]
    older = pod("older", "n1", ready=True, created="2024-01-01T00:00:00Z")
    newer = pod("newer", "n2", ready=True, created="2024-02-01T00:00:00Z")
    assert [p["metadata"]["name"] for p in ranking.rank([older, newer])] == ["newer", "older"]
    # two on n1 vs one on n2: a pod from the crowded node goes first
    c1, c2, c3 = (
        pod("c1", "n1", ready=True),
        pod("c2", "n1", ready=True),
        pod("c3", "n2", ready=True),
    )
    assert ranking.pods_to_delete([c3, c1, c2], 1)[0]["metadata"]["name"] in ("c1", "c2")
    assert ranking.pods_to_delete([c1], 0) == []


@pytest.mark.parametrize(
    ("spec", "counts", "start", "now", "want"),
    [
        ({"completions": 3, "parallelism": 2}, JobCounts(0, 0, 0), 0, 0, dict(create=2)),
        ({"completions": 3, "parallelism": 2}, JobCounts(1, 2, 0), 0, 0, dict(create=0)),
        ({"completions": 3, "parallelism": 2}, JobCounts(0, 3, 0), 0, 0, dict(finished="Complete")),
        ({"parallelism": 3}, JobCounts(0, 0, 0), 0, 0, dict(create=3)),
        ({"parallelism": 3}, JobCounts(2, 1, 0), 0, 0, dict(create=0)),
        ({"parallelism": 3}, JobCounts(0, 1, 0), 0, 0, dict(finished="Complete")),
        (
            {"completions": 5, "parallelism": 5, "backoffLimit": 2},
            JobCounts(2, 0, 3),
            0,
            0,
            dict(finished="Failed", reason="BackoffLimitExceeded", delete=2),
        ),
        (
            {"completions": 5, "activeDeadlineSeconds": 30},
            JobCounts(1, 0, 0),
            0,
            30,
            dict(finished="Failed", reason="DeadlineExceeded", delete=1),
        ),
        (
            {"completions": 5, "activeDeadlineSeconds": 30},
            JobCounts(1, 0, 0),
            0,
            10,
            dict(requeue_after=20),
        ),
        ({"completions": 2, "parallelism": 4}, JobCounts(4, 0, 0), 0, 0, dict(delete=2)),
        ({"completions": 2, "suspend": True}, JobCounts(1, 0, 0), 0, 0, dict(delete=1)),
    ],
)
def test_job_plan(spec, counts, start, now, want):
    plan = job_calc.plan_job(spec, counts, start, now)
    for k, v in want.items():
        assert getattr(plan, k) == v, (k, plan)


def test_job_backoff():
    assert [job_calc.backoff_delay(n) for n in range(0, 8)] == [0, 10, 20, 40, 80, 160, 320, 360]
    spec = {"completions": 1, "backoffLimit": 6}
    plan = job_calc.plan_job(spec, JobCounts(0, 0, 2, last_failure=100.0), 0, 110.0)
    assert plan.create == 0 and plan.requeue_after == 10.0
    plan = job_calc.plan_job(spec, JobCounts(0, 0, 2, last_failure=100.0), 0, 120.0)
    assert plan.create == 1


def test_job_ttl():
    plan = job_calc.plan_job(
        {"ttlSecondsAfterFinished": 60},
        JobCounts(0, 1, 0),
        0,
        100.0,
        finished_at=50.0,
        finished="Complete",
    )
    assert plan.requeue_after == 10.0 and not plan.delete_job
    plan = job_calc.plan_job(
        {"ttlSecondsAfterFinished": 60},
        JobCounts(0, 1, 0),
        0,
        110.0,
        finished_at=50.0,
        finished="Complete",
    )
    assert plan.delete_job


def utc(*a: int) -> datetime:
    return datetime(*a).replace(tzinfo=UTC)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("expr", "after", "want"),
    [
        ("*/15 * * * *", utc(2024, 1, 1, 0, 7), utc(2024, 1, 1, 0, 15)),
        ("0 * * * *", utc(2024, 1, 1, 0, 0), utc(2024, 1, 1, 1, 0)),
        ("30 2 * * *", utc(2024, 1, 1, 3, 0), utc(2024, 1, 2, 2, 30)),
        ("0 0 1 * *", utc(2024, 1, 15), utc(2024, 2, 1)),
        ("0 9 * * MON-FRI", utc(2024, 1, 6, 10), utc(2024, 1, 8, 9)),  # Sat -> Mon
        ("0 9 * * 7", utc(2024, 1, 1), utc(2024, 1, 7, 9)),  # Sunday as 7
        ("0 0 1,15 FEB *", utc(2024, 1, 1), utc(2024, 2, 1)),
        ("0 0 13 * 5", utc(2024, 1, 1), utc(2024, 1, 5)),  # dom OR dow when both restricted
        ("10-20/5 1 * * *", utc(2024, 1, 1, 1, 11), utc(2024, 1, 1, 1, 15)),
        ("@daily", utc(2024, 1, 1, 5), utc(2024, 1, 2)),
        ("@hourly", utc(2024, 1, 1, 5, 1), utc(2024, 1, 1, 6)),
        ("0 0 29 2 *", utc(2024, 3, 1), utc(2028, 2, 29)),
    ],
)
def test_cron_next(expr, after, want):
    assert cron.Schedule.parse(expr).next_after(after) == want


def test_cron_in_a_time_zone_follows_its_daylight_saving_time():
    berlin = ZoneInfo("Europe/Berlin")
    nine = cron.Schedule.parse("0 9 * * *")
    assert nine.next_after(utc(2024, 1, 10), berlin) == utc(2024, 1, 10, 8)  # CET, UTC+1
    assert nine.next_after(utc(2024, 7, 10), berlin) == utc(2024, 7, 10, 7)  # CEST, UTC+2
    # 02:30 does not exist on 2024-03-31 in Berlin (02:00 -> 03:00): no run that day.
    half_two = cron.Schedule.parse("30 2 * * *")
    assert half_two.next_after(utc(2024, 3, 30, 12), berlin) == utc(2024, 4, 1, 0, 30)
    # 02:30 happens twice on 2024-10-27 (03:00 -> 02:00): it runs once, the first.
    assert half_two.next_after(utc(2024, 10, 26, 12), berlin) == utc(2024, 10, 27, 0, 30)
    assert half_two.next_after(utc(2024, 10, 27, 0, 30), berlin) == utc(2024, 10, 28, 1, 30)


@pytest.mark.parametrize(
    "bad",
    [
        "* * * *",
        "60 * * * *",
        "* 24 * * *",
        "*/0 * * * *",
        "5-1 * * * *",
        "x * * * *",
        "TZ=UTC * * * * *",
    ],
)
def test_cron_refuses(bad):
    with pytest.raises(cron.ScheduleError):
        cron.Schedule.parse(bad)


def test_cron_plan():
    s = cron.Schedule.parse("*/5 * * * *")
    t0 = utc(2024, 1, 1).timestamp()
    # created at t0, now t0+4min: nothing due
    p = cron.plan_cronjob({}, s, t0, None, 0, t0 + 240)
    assert p.run_at is None and p.next_check == t0 + 300
    # now t0+11 min: missed 5 and 10, run the most recent (10)
    p = cron.plan_cronjob({}, s, t0, None, 0, t0 + 660)
    assert p.run_at == t0 + 600
    # already ran at 10
    p = cron.plan_cronjob({}, s, t0, t0 + 600, 0, t0 + 660)
    assert p.run_at is None
    # Forbid with an active job
    p = cron.plan_cronjob({"concurrencyPolicy": "Forbid"}, s, t0, None, 1, t0 + 660)
    assert p.skip_reason == "Forbid"
    p = cron.plan_cronjob({"concurrencyPolicy": "Replace"}, s, t0, None, 1, t0 + 660)
    assert p.run_at == t0 + 600 and p.replace_active
    # startingDeadlineSeconds 30: the 10-min run is 60 s late -> missed
    p = cron.plan_cronjob({"startingDeadlineSeconds": 30}, s, t0, None, 0, t0 + 660)
    assert p.run_at is None
    p = cron.plan_cronjob({"startingDeadlineSeconds": 90}, s, t0, None, 0, t0 + 660)
    assert p.run_at == t0 + 600
    p = cron.plan_cronjob({"suspend": True}, s, t0, None, 0, t0 + 660)
    assert p.skip_reason == "Suspended"
    # very many missed: still the most recent
    p = cron.plan_cronjob({}, cron.Schedule.parse("* * * * *"), t0, None, 0, t0 + 86400)
    assert p.run_at == t0 + 86400
    assert cron.job_name("backup", t0 + 600) == f"backup-{int(t0 + 600) // 60}"


def test_node_health():
    h = node_health.node_health("True", 100.0, 130.0)
    assert h.ready == "True" and not h.mark_unknown and h.next_check == 140.0
    h = node_health.node_health("True", 100.0, 140.0)
    assert h.ready == "Unknown" and h.mark_unknown
    assert not node_health.node_health("Unknown", 100.0, 200.0).mark_unknown


def test_taints():
    assert node_health.wanted_taints("True", False) == []
    keys = {(t["key"], t["effect"]) for t in node_health.wanted_taints("Unknown", True)}
    assert keys == {
        (node_health.UNREACHABLE, "NoSchedule"),
        (node_health.UNREACHABLE, "NoExecute"),
        (node_health.UNSCHEDULABLE, "NoSchedule"),
    }
    cur = [{"key": "custom", "effect": "NoSchedule"}]
    merged = node_health.merge_taints(cur, node_health.wanted_taints("False", False), "T")
    assert merged is not None and {"key": "custom", "effect": "NoSchedule"} in merged
    assert any(t.get("timeAdded") == "T" for t in merged)
    assert node_health.merge_taints(merged, node_health.wanted_taints("False", False), "T2") is None
    assert node_health.merge_taints(merged, [], "T") == cur


@pytest.mark.parametrize(
    ("tolerations", "want"),
    [
        ([], 300.0),  # the default toleration
        (
            [
                {
                    "key": node_health.UNREACHABLE,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 20,
                }
            ],
            20.0,
        ),
        ([{"key": node_health.UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}], None),
        ([{"operator": "Exists"}], None),
        ([{"key": node_health.UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"}], 300.0),
    ],
)
def test_eviction_delay(tolerations, want):
    taints = [{"key": node_health.UNREACHABLE, "effect": "NoExecute"}]
    assert node_health.eviction_delay(tolerations, taints) == want


def test_eviction_delay_untolerated_custom_taint():
    assert node_health.eviction_delay([], [{"key": "x", "effect": "NoExecute"}]) == 0.0
    assert node_health.eviction_delay([], [{"key": "x", "effect": "NoSchedule"}]) is None


def test_zone_state():
    assert node_health.zone_state(10, 0) == "Normal"
    assert node_health.zone_state(0, 3) == "FullDisruption"
    assert node_health.zone_state(2, 3) == "PartialDisruption"
    assert node_health.zone_state(8, 2) == "Normal"
    assert node_health.eviction_qps("Normal", 10) == 0.1
    assert node_health.eviction_qps("PartialDisruption", 10) == 0.0
    assert node_health.eviction_qps("PartialDisruption", 100) == 0.01
    assert node_health.eviction_qps("FullDisruption", 100) == 0.0


def test_cidr_allocator():
    a = ipam.CidrAllocator("10.244.0.0/16", 24)
    assert a.allocate() == "10.244.0.0/24"
    assert a.occupy("10.244.1.0/24")
    assert not a.occupy("10.99.0.0/24")
    assert a.allocate() == "10.244.2.0/24"
    a.release("10.244.0.0/24")
    assert a.used() == 2
    small = ipam.CidrAllocator("10.0.0.0/23", 24)
    small.allocate()
    small.allocate()
    with pytest.raises(ipam.CidrExhausted):
        small.allocate()
    small.release("10.0.1.0/24")
    assert small.allocate() == "10.0.1.0/24"
    with pytest.raises(ValueError):
        ipam.CidrAllocator("10.0.0.0/16", 8)
