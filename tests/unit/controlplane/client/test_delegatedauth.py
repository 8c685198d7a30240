"""The decisions of a component's secure port (controlplane/client/
delegatedauth.py), with a stand-in API server that answers reviews: who a
caller is, what is cached, what is always allowed, and the bound on reviews
sent (the real API server's answers: tests/integration/controlplane/ops/
test_secure_port.py)."""

from __future__ import annotations

from typing import Any

from controlplane.client import errors
from controlplane.client.delegatedauth import DelegatedAuth, DelegationSettings, User

MONITOR = "monitor-token"


class Reviews:
    """TokenReview: MONITOR is `prom` in system:monitoring. SubjectAccessReview:
    system:monitoring may get /metrics."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail = False

    def create(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(body)
        if self.fail:
            raise errors.Unavailable("the API server is away")
        spec = body["spec"]
        if kind == "TokenReview":
            if spec["token"] != MONITOR:
                return {"status": {"authenticated": False}}
            return {"status": {"authenticated": True, "user": {
                "username": "prom", "uid": "u1", "groups": ["system:monitoring"]}}}  # fmt: skip
        attrs = spec["nonResourceAttributes"]
        allowed = "system:monitoring" in spec["groups"] and attrs == {"path": "/metrics",
                                                                     "verb": "get"}  # fmt: skip
        return {"status": {"allowed": allowed}}


def auth(reviews: Reviews, clock: list[float], **settings: Any) -> DelegatedAuth:
    return DelegatedAuth(reviews, reviews, DelegationSettings(**settings), lambda: clock[0])


def test_a_token_is_reviewed_once_per_ttl_and_never_kept_in_clear() -> None:
    reviews, clock = Reviews(), [0.0]
    check = auth(reviews, clock).check
    for _ in range(3):
        verdict = check("GET", "/metrics", f"Bearer {MONITOR}", None)
        assert verdict.code == 200 and verdict.user == User("prom", ("system:monitoring",), "u1")
    assert [b["kind"] for b in reviews.sent] == ["TokenReview", "SubjectAccessReview"]
    clock[0] += 11  # past both 10 s caches
    assert check("GET", "/metrics", f"Bearer {MONITOR}", None).code == 200
    assert len(reviews.sent) == 4
    checker = auth(reviews, clock)
    checker.check("GET", "/metrics", f"Bearer {MONITOR}", None)
    assert MONITOR not in repr(checker._tokens._entries)


def test_who_the_caller_is() -> None:
    reviews, clock = Reviews(), [0.0]
    check = auth(reviews, clock).check
    assert check("GET", "/metrics", "Bearer wrong", None).code == 401
    assert check("GET", "/metrics", "Basic cHJvbTpwdw==", None).code == 401
    assert check("GET", "/metrics", "Bearer ", None).code == 401
    anonymous = check("GET", "/metrics", "", None)
    assert anonymous.code == 403
    assert anonymous.message == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    cert = {"subject": ((("organizationName", "system:monitoring"),), (("commonName", "scraper"),))}
    by_cert = check("GET", "/metrics", "Bearer ignored-with-a-certificate", cert)
    assert by_cert.code == 200 and by_cert.user is not None
    assert by_cert.user.name == "scraper"
    assert check("POST", "/metrics", f"Bearer {MONITOR}", None).message == (
        'forbidden: User "prom" cannot post path "/metrics"')  # fmt: skip


def test_health_paths_are_allowed_without_a_review() -> None:
    reviews, clock = Reviews(), [0.0]
    check = auth(reviews, clock, always_allow_paths=("/healthz", "/livez", "/debug/*")).check
    assert check("GET", "/healthz", "", None).code == 200
    assert check("GET", "/debug/pprof", "", None).code == 200
    assert check("GET", "/readyz", "", None).code == 403  # not in this list
    assert [b["kind"] for b in reviews.sent] == ["SubjectAccessReview"]
    assert check("GET", "/healthz", "Bearer wrong", None).code == 401  # authentication first


def test_reviews_past_the_budget_are_429_not_sent() -> None:
    reviews, clock = Reviews(), [0.0]
    check = auth(reviews, clock, burst=3, reviews_per_second=1.0).check
    codes = [check("GET", "/metrics", f"Bearer random-{i}", None).code for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    assert len(reviews.sent) == 3
    clock[0] += 1.0  # one more allowed a second later
    assert check("GET", "/metrics", "Bearer random-9", None).code == 401
    assert check("GET", "/metrics", "Bearer random-10", None).code == 429


def test_an_api_server_that_does_not_answer_refuses() -> None:
    reviews, clock = Reviews(), [0.0]
    reviews.fail = True
    check = auth(reviews, clock).check
    assert check("GET", "/metrics", f"Bearer {MONITOR}", None).code == 401
    denied = check("GET", "/metrics", "", None)
    assert denied.code == 403 and "authorization failed" in denied.message
