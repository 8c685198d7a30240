"""Table tests for Deployment rollout arithmetic."""

from __future__ import annotations

import pytest

from controlplane.controllers import rollout as r
from controlplane.controllers.rollout import RS


@pytest.mark.parametrize(
    ("value", "total", "up", "want"),
    [
        (2, 10, True, 2),
        ("25%", 10, True, 3),
        ("25%", 10, False, 2),
        ("0%", 10, True, 0),
        ("100%", 3, False, 3),
        ("10", 5, True, 10),
        (None, 5, True, 0),
    ],
)
def test_scaled_value(value, total, up, want):
    assert r.scaled_value(value, total, up) == want


def test_scaled_value_refuses_garbage():
    with pytest.raises(ValueError):
        r.scaled_value("abc%", 10, True)
    with pytest.raises(ValueError):
        r.scaled_value("x", 10, True)


@pytest.mark.parametrize(
    ("surge", "unavail", "desired", "want"),
    [
        ("25%", "25%", 4, (1, 1)),
        ("25%", "25%", 3, (1, 0)),
        (0, 0, 3, (0, 1)),
        ("0%", "0%", 3, (0, 1)),
        (1, 0, 3, (1, 0)),
        ("50%", "50%", 5, (3, 2)),
    ],
)
def test_fenceposts(surge, unavail, desired, want):
    assert r.resolve_fenceposts(surge, unavail, desired) == want


def test_strategy_params_caps_unavailability():
    d = {
        "spec": {
            "replicas": 2,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 5},
            },
        }
    }
    assert r.strategy_params(d) == ("RollingUpdate", 0, 2)
    assert r.strategy_params({"spec": {"replicas": 2, "strategy": {"type": "Recreate"}}}) == (
        "Recreate",
        0,
        0,
    )


def test_template_hash_stable_and_sensitive():
    t = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "x:1"}]},
    }
    t2 = {
        "spec": {"containers": [{"image": "x:1", "name": "c"}]},
        "metadata": {"labels": {"app": "a"}},
    }
    assert r.template_hash(t) == r.template_hash(t2)
    assert r.template_hash(t) != r.template_hash(t, 1)
    t3 = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "x:2"}]},
    }
    assert r.template_hash(t) != r.template_hash(t3)
    assert set(r.template_hash(t)) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_template_equal_ignores_hash_label():
    a = {"metadata": {"labels": {"app": "a", "pod-template-hash": "x"}}, "spec": {}}
    b = {"metadata": {"labels": {"app": "a"}}, "spec": {}}
    assert r.template_equal(a, b)


def test_rolling_update_steps_max_unavailable_zero():
    # 3 replicas, surge 1, unavailable 0: never fewer than 3 available
    desired, surge, unavail = 3, 1, 0
    new = RS("new", 0, 0, created=2)
    old = [RS("old", 3, 3, created=1)]
    assert r.new_rs_replicas(desired, "RollingUpdate", surge, new, [new, *old]) == 1
    new = RS("new", 1, 0, created=2)
    # new not available yet: old cannot go down
    assert r.old_rs_scale_down(desired, unavail, new, old) == {}
    new = RS("new", 1, 1, created=2)
    assert r.old_rs_scale_down(desired, unavail, new, old) == {"old": 2}


def test_rolling_update_cleans_unhealthy_first():
    new = RS("new", 1, 0, created=3)
    old = [RS("a", 2, 0, created=1), RS("b", 2, 2, created=2)]
    # desired 4, unavailable 1: minAvailable 3; all=5, newUnavailable=1 -> maxScaledDown 1
    assert r.old_rs_scale_down(4, 1, new, old) == {"a": 1}


def test_new_rs_respects_surge():
    new = RS("new", 2, 2)
    assert r.new_rs_replicas(10, "RollingUpdate", 3, new, [new, RS("o", 10, 10)]) == 3
    assert r.new_rs_replicas(10, "RollingUpdate", 3, new, [new, RS("o", 11, 10)]) == 2
    assert r.new_rs_replicas(10, "Recreate", 0, new, [new]) == 10


def test_next_revision():
    assert r.next_revision([]) == 1
    assert r.next_revision([RS("a", 0, revision=3), RS("b", 0, revision=7)]) == 8
    assert r.revision_of({r.REVISION: "4"}) == 4
    assert r.revision_of({r.REVISION: "x"}) == 0


def test_proportional_scaling_single_active():
    assert r.proportional_scale(5, 1, RS("n", 3, created=2), [RS("o", 0, created=1)]) == {"n": 5}
    assert r.proportional_scale(5, 1, RS("n", 5, created=2), []) == {}


def test_proportional_scaling_mid_rollout():
    # deployment 10 -> 15 with surge 3 mid-rollout: new 5, old 8 (max-replicas annotations 13)
    new = RS("new", 5, 0, created=2, max_annotation=13, desired_annotation=10)
    old = [RS("old", 8, 8, created=1, max_annotation=13, desired_annotation=10)]
    got = r.proportional_scale(15, 3, new, old)
    # allowed 18, total 13 -> add 5: old 8*18/13=11.07->11 (+3), new 5*18/13=6.9->7 (+2)
    assert got == {"old": 11, "new": 7}
    # scale down to 5 (surge 1 -> allowed 6) -> remove 7
    new = RS("new", 5, 0, created=2, max_annotation=13)
    old = [RS("old", 8, 8, created=1, max_annotation=13)]
    got = r.proportional_scale(5, 1, new, old)
    assert sum(got.values()) == 6 and got["old"] >= got["new"]


def test_saturated_new_scales_old_to_zero():
    new = RS("new", 3, 3, desired_annotation=3)
    old = [RS("old", 1, 1)]
    assert r.proportional_scale(3, 1, new, old) == {"old": 0}


def test_history_to_delete():
    old = [RS(f"r{i}", 0, revision=i, created=i) for i in range(1, 6)] + [RS("live", 2, revision=9)]
    assert r.history_to_delete(old, 2) == ["r1", "r2", "r3"]
    assert r.history_to_delete(old, 10) == []


def test_stale_old_status_never_over_scales_down():
    # old was scaled 3 -> 2 but its status still says 3 available; new has 2 ready.
    # Truly ready: 2 old + 2 new = 4; with minAvailable 3 only one more may go.
    new = RS("new", 2, 2, created=2)
    old = [RS("old", 2, 3, created=1)]
    assert r.old_rs_scale_down(3, 0, new, old) == {"old": 1}
    # and cleanup never turns into a scale-up
    assert all(v <= 2 for v in r.old_rs_scale_down(3, 1, new, old).values())


def test_a_template_sent_with_null_metadata_is_the_same_template() -> None:
    """kubectl writes `creationTimestamp: null` in every template (rollout
    undo's too): the ReplicaSet of that template is found and named the same."""
    stored = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c"}]}}
    sent = {"metadata": {"labels": {"app": "a"}, "creationTimestamp": None},
            "spec": {"containers": [{"name": "c"}]}}  # fmt: skip
    assert r.template_equal(stored, sent)
    assert r.template_hash(stored) == r.template_hash(sent)


def test_revision_history_keeps_the_revisions_a_replicaset_stood_for() -> None:
    assert r.revision_history("", "1") == "1"
    assert r.revision_history("1", "3") == "1,3"
    long = ",".join(str(i) for i in range(1000, 1400))  # 1999 characters
    kept = r.revision_history(long, "5000")
    assert kept is not None and kept.endswith(",5000") and len(kept) <= 2000
    assert not kept.startswith("1000,")
