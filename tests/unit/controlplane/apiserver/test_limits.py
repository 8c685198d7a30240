"""Request limits (issue 16): size, depth, stored size, watches, in-flight lanes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controlplane.api.limits import MAX_DEPTH, check_body, json_depth
from controlplane.apiserver.auth import Identity
from controlplane.apiserver.flowcontrol import FlowControl, Limits, digest
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


def test_priority_levels_are_separate_so_a_user_flood_leaves_heartbeats_their_seats() -> None:
    """The bootstrap configuration (one seat per share here): a user filling
    global-default is refused while a node's Lease renewals (node-high) and
    the admin (exempt) still get through."""
    flow = FlowControl(Limits(concurrency=245, queued_total=0))
    alice = Identity("alice")
    node = Identity("system:node:n1", node="n1")
    # global-default: 20 shares, and what idle levels lend it (apf_borrowing)
    limits = flow.level_limits()["global-default"]
    assert (limits.nominal, limits.lower) == (20, 10) and limits.current >= 20
    for _ in range(limits.current):
        flow.acquire(digest(alice, "create", "Pod", "default"))
    with pytest.raises(TooManyRequests, match=r"Too many requests, please try again later\."):
        flow.acquire(digest(alice, "create", "Pod", "default"))
    seats = [flow.acquire(digest(node, "update", "Lease", "kube-node-lease")) for _ in range(40)]
    assert {s.level for s in seats} == {"node-high"}
    assert flow.acquire(digest(Identity("root", admin=True), "create", "Pod", "default")).exempt


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
