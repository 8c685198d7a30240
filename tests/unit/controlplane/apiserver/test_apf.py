"""API priority and fairness driven by FlowSchemas and
PriorityLevelConfigurations: classification, shares, reject, queuing."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controlplane.api import apf_bootstrap
from controlplane.apiserver import apf_match
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import (
    FLOW_SCHEMA_HEADER,
    PRIORITY_LEVEL_HEADER,
    TOO_MANY,
    FlowControl,
    Limits,
    Pending,
    Refused,
    digest,
)

ADMIN = Identity("admin", admin=True)
NODE = Identity("system:node:n1", node="n1", groups=("system:nodes",))
SCHEDULER = Identity("system:kube-scheduler")
ALICE = Identity("alice", groups=("dev",))
BOB = Identity("bob")
KUBE_SYSTEM_SA = Identity("system:serviceaccount:kube-system:coredns",
                          groups=("system:serviceaccounts",))  # fmt: skip
SA = Identity("system:serviceaccount:apps:web", groups=("system:serviceaccounts",))


def level_of(flow: FlowControl, who: Identity, verb: str, kind: str, ns: str = "") -> str:
    return flow.classify(digest(who, verb, kind, ns))[1].name


def test_the_bootstrap_configuration_gives_the_old_lanes() -> None:
    """Kubernetes' defaults: what skiff's fixed lanes did (heartbeats apart
    from the rest of a node's traffic, the admin unhindered, users capped)."""
    flow = FlowControl(Limits())
    assert level_of(flow, ADMIN, "create", "Pod", "default") == "exempt"
    assert level_of(flow, NODE, "update", "Lease", "kube-node-lease") == "node-high"
    assert level_of(flow, NODE, "patch", "Node") == "node-high"
    assert level_of(flow, NODE, "get", "Secret", "default") == "system"
    assert level_of(flow, SCHEDULER, "create", "Pod", "default") == "workload-high"
    assert level_of(flow, SCHEDULER, "update", "Lease", "kube-system") == "leader-election"
    assert level_of(flow, KUBE_SYSTEM_SA, "list", "Service", "kube-system") == "workload-high"
    assert level_of(flow, SA, "list", "Pod", "apps") == "workload-low"
    assert level_of(flow, ALICE, "create", "Pod", "default") == "global-default"


def plc(name: str, shares: int, reject: bool = False, queues: int = 4, hand: int = 1,
        length: int = 2, uid: str = "") -> dict[str, Any]:  # fmt: skip
    response: dict[str, Any] = {"type": "Reject"} if reject else {"type": "Queue", "queuing": {
        "queues": queues, "handSize": hand, "queueLengthLimit": length}}  # fmt: skip
    return {"metadata": {"name": name, "uid": uid or f"uid-{name}"},
            "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": shares, "lendablePercent": 0,
                "limitResponse": response}}}  # fmt: skip


def fs(name: str, level: str, precedence: int, subjects: list[dict[str, Any]],
       method: str = "ByUser", **rule: Any) -> dict[str, Any]:  # fmt: skip
    resource = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                "namespaces": ["*"], "clusterScope": True}  # fmt: skip
    resource.update(rule)
    return {"metadata": {"name": name, "uid": f"uid-{name}"},
            "spec": {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence,
                     "distinguisherMethod": {"type": method},
                     "rules": [{"subjects": subjects, "resourceRules": [resource]}]}}  # fmt: skip


def user(name: str) -> dict[str, Any]:
    return {"kind": "User", "user": {"name": name}}


def group(name: str) -> dict[str, Any]:
    return {"kind": "Group", "group": {"name": name}}


def mandatory() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objs = [o for o, m in apf_bootstrap.bootstrap_objects() if m]
    return ([o for o in objs if o["kind"] == "FlowSchema"],
            [o for o in objs if o["kind"] == "PriorityLevelConfiguration"])  # fmt: skip


def test_precedence_subjects_rules_and_dangling_schemas() -> None:
    schemas, levels = mandatory()
    flow = FlowControl(Limits(concurrency=100))
    flow.configure(
        [*schemas,
         fs("alice-pods", "slow", 50, [user("alice")], resources=["pods"]),
         fs("devs", "fast", 60, [group("dev")]),
         fs("ghost", "missing-level", 10, [group("*")])],  # Dangling: skipped
        [*levels, plc("slow", 10), plc("fast", 10)],
    )  # fmt: skip
    assert level_of(flow, ALICE, "create", "Pod", "default") == "slow"
    assert level_of(flow, ALICE, "create", "ConfigMap", "default") == "fast"
    assert level_of(flow, ALICE, "get", "Pod", "default") == "slow"
    assert level_of(flow, BOB, "get", "Pod", "default") == "catch-all"
    # clusterScope: a rule without it does not match cluster-scoped requests.
    flow.configure([*schemas, fs("ns-only", "fast", 50, [user("bob")], clusterScope=False)],
                   [*levels, plc("fast", 10)])  # fmt: skip
    assert level_of(flow, BOB, "get", "Pod", "default") == "fast"
    assert level_of(flow, BOB, "get", "Node") == "catch-all"


def test_nominal_shares_split_the_server_limit() -> None:
    levels = apf_match.levels_of(
        [plc("a", 30), plc("b", 70), plc("none", 0),
         {"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}}], 200,
    )  # fmt: skip
    assert {n: (lv.limit, lv.exempt) for n, lv in levels.items()} == {
        "a": (60, False), "b": (140, False), "none": (0, False), "exempt": (0, True)}  # fmt: skip


def test_a_full_reject_level_refuses_with_kubernetes_message_and_uids() -> None:
    schemas, levels = mandatory()
    flow = FlowControl(Limits(concurrency=10))
    flow.configure([*schemas, fs("alice", "tight", 50, [user("alice")])],
                   [*levels, plc("tight", 1, reject=True), plc("rest", 9)])  # fmt: skip
    seat = flow.acquire(digest(ALICE, "get", "Pod", "default"))
    assert seat.headers() == {FLOW_SCHEMA_HEADER: "uid-alice", PRIORITY_LEVEL_HEADER: "uid-tight"}
    with pytest.raises(Refused, match=TOO_MANY) as err:
        flow.acquire(digest(ALICE, "get", "Pod", "default"))
    assert err.value.seat.level_uid == "uid-tight" and err.value.retry_after == 1
    flow.release(seat)
    flow.release(flow.acquire(digest(ALICE, "get", "Pod", "default")))
    # The exempt level is never held back.
    seats = [flow.acquire(digest(ADMIN, "get", "Pod", "default")) for _ in range(50)]
    assert all(s.exempt for s in seats)


def test_a_queue_level_holds_requests_and_serves_the_flows_in_turn() -> None:
    schemas, levels = mandatory()
    flow = FlowControl(Limits(concurrency=1, queued_total=10, queue_wait=5.0))
    flow.configure([*schemas, fs("users", "q", 50, [group("system:authenticated")])],
                   [plc("q", 1, queues=8, hand=1, length=2), *levels[:1]])  # fmt: skip
    level = flow.classify(digest(ALICE, "get", "Pod", "default"))[1]
    # Two users whose flows land in different queues.
    names = [f"user{i}" for i in range(40)]
    first = names[0]
    other = next(n for n in names if apf_match.hand(level, f"users/{n}")
                 != apf_match.hand(level, f"users/{first}"))  # fmt: skip
    a, b = Identity(first), Identity(other)
    held = flow.acquire(digest(a, "get", "Pod", "default"))
    a1, a2 = (flow.admit(digest(a, "get", "Pod", "default")) for _ in range(2))
    b1 = flow.admit(digest(b, "get", "Pod", "default"))
    assert all(isinstance(p, Pending) for p in (a1, a2, b1)) and flow.queued() == 3
    with pytest.raises(Refused):  # a's queue is at its queueLengthLimit (2)
        flow.admit(digest(a, "get", "Pod", "default"))
    order: list[str] = []
    lock = threading.Lock()

    def wait(name: str, p: Any) -> None:
        seat = p.wait()
        with lock:
            order.append(name)
        flow.release(seat)

    threads = [threading.Thread(target=wait, args=(n, p)) for n, p in
               (("a1", a1), ("a2", a2), ("b1", b1))]  # fmt: skip
    for t in threads:
        t.start()
    flow.release(held)
    for t in threads:
        t.join(10)
    assert sorted(order) == ["a1", "a2", "b1"]
    assert order.index("b1") < order.index("a2")  # round-robin: b is not behind all of a
    assert flow.queued() == 0 and flow.inflight("q") == 0


def test_a_queued_request_gives_up_after_the_wait_limit() -> None:
    schemas, levels = mandatory()
    flow = FlowControl(Limits(concurrency=1, queued_total=10, queue_wait=0.05))
    flow.configure([*schemas, fs("users", "q", 50, [group("system:authenticated")])],
                   [plc("q", 1), *levels])  # fmt: skip
    held = flow.acquire(digest(ALICE, "get", "Pod", "default"))
    with pytest.raises(Refused, match=TOO_MANY):
        flow.acquire(digest(ALICE, "get", "Pod", "default"))
    assert flow.queued() == 0
    flow.release(held)
    assert flow.inflight("q") == 0


def test_executing_and_refused_requests_are_counted_for_metrics() -> None:
    """What /metrics reports (apiserver_flowcontrol_current_executing_requests,
    apiserver_current_inflight_requests, ..._rejected_requests_total): by the
    stored level and flow schema, mutating apart, refusals by reason."""
    schemas, levels = mandatory()
    flow = FlowControl(Limits(concurrency=10))
    flow.configure([*schemas, fs("alice", "tiny", 50, [user("alice")])],
                   [*levels, plc("tiny", 1, reject=True), plc("rest", 9)])  # fmt: skip
    held = flow.acquire(digest(ALICE, "create", "Pod", "default"))
    admin = flow.acquire(digest(ADMIN, "get", "Pod", "default"))
    running, _ = flow.snapshot()
    assert running == {("tiny", "alice", True): 1, ("exempt", "exempt", False): 1}
    with pytest.raises(Refused):
        flow.acquire(digest(ALICE, "get", "Pod", "default"))
    assert flow.snapshot()[1] == {("tiny", "alice", "concurrency-limit"): 1}
    flow.release(held)
    flow.release(admin)
    flow.release(admin)  # twice: counted once
    assert flow.snapshot()[0] == {}
