"""Request limits (issue 16): size, depth, stored size, watches, in-flight lanes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.api.limits import MAX_DEPTH, check_body, json_depth
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import HEARTBEAT, FlowControl, Limits
from controlplane.client.errors import Invalid, TooManyRequests


def nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    top = inner
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def test_depth_is_counted_without_decoding_and_ignores_brackets_in_strings() -> None:
    assert json_depth(b'{"a":[1,{"b":"[[[{{\\"}"}]}') == 3
    assert json_depth(json.dumps(nested(150)).encode()) == 150
    check_body(json.dumps({"s": "[" * 500}).encode())
    with pytest.raises(Invalid, match=f"limit of {MAX_DEPTH}"):
        check_body(b"[" * 101 + b"]" * 101)


def test_flow_control_lanes_are_separate_and_heartbeats_are_never_refused() -> None:
    flow = FlowControl(Limits(user_mutating=2, user_readonly=1, node_mutating=1))
    alice = Identity("alice")
    node = Identity("system:node:n1", node="n1")
    flow.acquire(alice, "Pod", "default", True)
    flow.acquire(alice, "Pod", "default", True)
    with pytest.raises(TooManyRequests, match="mutating requests in flight in the user"):
        flow.acquire(alice, "Pod", "default", True)
    flow.acquire(alice, "Pod", "default", False)  # read-only counted apart
    flow.acquire(node, "Pod", "default", True)
    with pytest.raises(TooManyRequests, match="node priority level"):
        flow.acquire(node, "Pod", "default", True)
    for _ in range(1000):
        assert flow.acquire(node, "Lease", "kube-node-lease", True) == HEARTBEAT
    flow.release("user", True)
    flow.acquire(alice, "Pod", "default", True)


def test_watches_are_capped_per_identity_with_a_clear_message() -> None:
    flow = FlowControl(Limits(watches_total=5, watches_per_identity=2))
    node = Identity("system:node:n1", node="n1")
    ends = [flow.watch(node), flow.watch(node)]
    with pytest.raises(TooManyRequests, match="system:node:n1 has too many watches open"):
        flow.watch(node)
    ends[0]()
    ends[0]()  # ending twice counts once
    ends.append(flow.watch(node))
    admin = Identity("admin", admin=True)
    ends += [flow.watch(admin) for _ in range(3)]  # the admin has no per-identity cap
    with pytest.raises(TooManyRequests, match="too many watches open on this server"):
        flow.watch(admin)
    for end in ends:
        end()
    assert flow.watch_count() == 0
