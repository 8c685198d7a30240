"""The agent endpoint's webhook authn/authz (agent/webhook_auth.py) with a fake
reviewer and clock: the kubelet's request attributes, its cache lifetimes,
bounded caches, and reviews bounded under a flood of random tokens."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agent.request_target import parse
from agent.webhook_auth import Caller, WebhookAuth, WebhookSettings, request_attributes
from tests.harness.wait import wait_for

ALICE = "alice-token"


class FakeReviewer:
    def __init__(self, allowed: set[tuple[str, str, str]]) -> None:
        self.allowed = allowed
        self.token_reviews = 0
        self.access_reviews = 0
        self.gate: threading.Event | None = None
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def token_review(self, token: str) -> Caller | None:
        with self.lock:
            self.token_reviews += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                self.gate.wait(5)
            return Caller("alice", ("system:authenticated",)) if token == ALICE else None
        finally:
            with self.lock:
                self.in_flight -= 1

    def access_review(self, caller: Caller, verb: str, subresource: str, node: str) -> bool:
        self.access_reviews += 1
        return (caller.user, verb, subresource) in self.allowed and node == "n1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(settings: WebhookSettings | None = None) -> tuple[WebhookAuth, FakeReviewer, Clock]:
    reviewer, clock = FakeReviewer({("alice", "get", "stats")}), Clock()
    return WebhookAuth(reviewer, "n1", settings, clock), reviewer, clock


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/stats/summary", ("get", "stats")),
        ("GET", "/stats", ("get", "stats")),
        ("GET", "/metrics/cadvisor", ("get", "metrics")),
        ("GET", "/logs/syslog", ("get", "log")),
        ("POST", "/exec/ns/pod/c?command=sh", ("create", "proxy")),
        ("GET", "/pods", ("get", "proxy")),
        ("HEAD", "/statsx", ("get", "proxy")),
        ("DELETE", "/run/x", ("delete", "proxy")),
        ("PUT", "/x", ("update", "proxy")),
        ("PATCH", "/x", ("patch", "proxy")),
    ],
)
def test_kubelet_request_attributes(method: str, path: str, expected: tuple[str, str]) -> None:
    assert request_attributes(method, parse(path)) == expected


def test_refusals_in_the_kubelets_words() -> None:
    auth, _, _ = make()
    assert auth.check("", "GET", parse("/stats/summary")).code == 401
    assert auth.check("Bearer nope", "GET", parse("/stats/summary")).code == 401
    assert auth.check(f"Bearer {ALICE}", "GET", parse("/stats/summary")).code == 200
    denied = auth.check(f"Bearer {ALICE}", "POST", parse("/exec/a/b/c"))
    assert (denied.code, denied.message) == (
        403,
        "Forbidden (user=alice, verb=create, resource=nodes, subresource=proxy)",
    )


def test_answers_are_cached_for_the_kubelets_lifetimes() -> None:
    auth, reviewer, clock = make()
    for _ in range(3):
        auth.check(f"Bearer {ALICE}", "GET", parse("/stats/summary"))
        auth.check(f"Bearer {ALICE}", "GET", parse("/logs/"))
        auth.check("Bearer bad", "GET", parse("/stats/summary"))
    assert (reviewer.token_reviews, reviewer.access_reviews) == (2, 2)
    clock.now += 31  # past the unauthenticated and unauthorized lifetimes (30 s)
    auth.check(f"Bearer {ALICE}", "GET", parse("/stats/summary"))
    auth.check(f"Bearer {ALICE}", "GET", parse("/logs/"))
    auth.check("Bearer bad", "GET", parse("/stats/summary"))
    assert (reviewer.token_reviews, reviewer.access_reviews) == (3, 3)
    clock.now += 90  # 121 s: past the authenticated lifetime (2 min), not the authorized (5 min)
    auth.check(f"Bearer {ALICE}", "GET", parse("/stats/summary"))
    assert (reviewer.token_reviews, reviewer.access_reviews) == (4, 3)
    clock.now += 180  # 301 s after the first allow
    auth.check(f"Bearer {ALICE}", "GET", parse("/stats/summary"))
    assert reviewer.access_reviews == 4


def test_caches_are_bounded() -> None:
    auth, reviewer, _ = make(WebhookSettings(max_entries=10, burst=1000))
    for i in range(100):
        auth.check(f"Bearer bad-{i}", "GET", parse("/stats/summary"))
    assert len(auth._tokens) == 10
    reviews = reviewer.token_reviews
    auth.check("Bearer bad-99", "GET", parse("/stats/summary"))  # recent: still cached
    auth.check("Bearer bad-0", "GET", parse("/stats/summary"))  # dropped: reviewed again
    assert reviewer.token_reviews == reviews + 1


def test_a_flood_of_random_tokens_costs_at_most_the_budget() -> None:
    auth, reviewer, clock = make(WebhookSettings(burst=20, reviews_per_second=5))
    codes = [auth.check(f"Bearer r{i}", "GET", parse("/stats/summary")).code for i in range(1000)]
    assert reviewer.token_reviews == 20
    assert codes.count(401) == 20 and codes.count(429) == 980
    clock.now += 2  # refilled: 10 more
    codes = [auth.check(f"Bearer s{i}", "GET", parse("/stats/summary")).code for i in range(1000)]
    assert reviewer.token_reviews == 30 and codes.count(401) == 10
    # A token already known is answered from the cache, flood or not.
    assert auth.check("Bearer r0", "GET", parse("/stats/summary")).code == 401


def test_reviews_in_flight_are_bounded() -> None:
    auth, reviewer, _ = make(WebhookSettings(max_in_flight=3, burst=1000))
    reviewer.gate = threading.Event()
    with ThreadPoolExecutor(3) as pool:
        held = [pool.submit(auth.check, f"Bearer t{i}", "GET", parse("/stats")) for i in range(3)]
        wait_for(lambda: reviewer.in_flight == 3, timeout=5)
        # Three reviews wait on the API server: the next caller is refused at once.
        assert auth.check("Bearer t3", "GET", parse("/stats")).code == 429
        reviewer.gate.set()
        assert [f.result(5).code for f in held] == [401, 401, 401]
    assert reviewer.most_in_flight == 3 and reviewer.token_reviews == 3
    assert auth.check("Bearer t3", "GET", parse("/stats")).code == 401  # a slot is free again
