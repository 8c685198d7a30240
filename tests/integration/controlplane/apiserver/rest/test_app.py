"""The request wrapper: authentication and the FlowControl lanes (429 + Retry-After)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from controlplane.api import openapi
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.flowcontrol import FlowControl, Limits
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rest.app import make_app
from controlplane.apiserver.rest.context import Server
from controlplane.apiserver.rest.watch import LoopFeed
from controlplane.apiserver.watch import Broadcaster
from controlplane.storage.sqlite import SqliteStore

pf_headers: list[dict[str, str]] = []  # each answer's APF headers, of the last run
answer_headers: list[Mapping[str, str]] = []  # each answer's headers, of the last run


def run(
    tmp_path: Path, readonly: int, requests: list[tuple[str, str]], limits: Limits | None = None,
    audit: AuditLog | None = None, method: str = "GET", body: bytes = b"",
    accept: str = "", headers: dict[str, str] | None = None,
) -> list[Any]:  # fmt: skip
    pf_headers.clear()
    answer_headers.clear()
    store = SqliteStore(tmp_path / "state.db")
    registry = Registry(store)
    registry.create("Namespace", {"metadata": {"name": "default"}})
    authority = TokenAuthority(b"0123456789abcdef0123")
    executor = ThreadPoolExecutor(2)

    async def go() -> list[Any]:
        flow = FlowControl(limits or Limits())
        if readonly == 0:  # one level for everyone, with no seat at all
            flow.configure(
                [{"metadata": {"name": "all", "uid": "fs-uid"}, "spec": {
                    "priorityLevelConfiguration": {"name": "none"}, "matchingPrecedence": 1,
                    "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                               "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"],
                                                  "resources": ["*"], "clusterScope": True,
                                                  "namespaces": ["*"]}]}]}}],
                [{"metadata": {"name": "none", "uid": "pl-uid"}, "spec": {
                    "type": "Limited", "limited": {"nominalConcurrencyShares": 0,
                                                   "limitResponse": {"type": "Reject"}}}}],
            )  # fmt: skip
        server = Server(registry, Broadcaster(store), executor, flow, audit)
        app = make_app(server, authority, LoopFeed(asyncio.get_running_loop()))
        async with TestClient(TestServer(app)) as client:
            answers = []
            for path, token in requests:
                sent = {"Authorization": f"Bearer {token}"} if token else {}
                if accept:
                    sent["Accept"] = accept
                response = await client.request(method, path, headers={**sent, **(headers or {})},
                                                data=body or None, allow_redirects=False)  # fmt: skip
                if response.content_type == "application/json":
                    doc = await response.json()
                else:
                    doc = (response.content_type, await response.read())
                answers.append((response.status, response.headers.get("Retry-After"), doc))
                pf_headers.append({k: v for k, v in response.headers.items()
                                   if k.startswith("X-Kubernetes-PF-")})  # fmt: skip
                answer_headers.append(response.headers.copy())  # case-insensitive
            return answers

    try:
        return asyncio.run(go())
    finally:
        executor.shutdown()
        store.close()


def test_tokens_are_checked(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    answers = run(tmp_path, 10, [("/api/v1/namespaces", ""), ("/api/v1/namespaces", "bad"),
                                 ("/api/v1/namespaces", admin), ("/version", "")])  # fmt: skip
    assert [a[0] for a in answers] == [401, 401, 200, 200]
    assert answers[0][2]["reason"] == "Unauthorized"
    assert answers[2][2]["kind"] == "NamespaceList"


def test_a_full_lane_is_429_with_retry_after(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    ((code, retry, status),) = run(tmp_path, 0, [("/api/v1/namespaces", admin)])
    assert (code, retry, status["reason"]) == (429, "1", "TooManyRequests")
    assert status["message"] == "Too many requests, please try again later."
    # The FlowSchema and priority level that refused it, as kube-apiserver says.
    assert pf_headers == [{"X-Kubernetes-PF-FlowSchema-UID": "fs-uid",
                           "X-Kubernetes-PF-PriorityLevel-UID": "pl-uid"}]  # fmt: skip


def test_watches_count_against_the_watch_caps(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    ((code, retry, status),) = run(tmp_path, 10, [("/api/v1/namespaces?watch=true", admin)],
                                   limits=Limits(watches_total=0))  # fmt: skip
    assert (code, retry, status["reason"]) == (429, "1", "TooManyRequests")
    assert "watches" in status["message"]


def test_deep_body_refused_before_decoding_and_audited(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    audit = AuditLog(tmp_path / "audit.log")
    deep = b'{"metadata": {"name": "deep"}, "data": ' + b"[" * 150 + b"]" * 150 + b"}"
    ((code, _, status),) = run(tmp_path, 10, [("/api/v1/namespaces/default/configmaps", admin)],
                               audit=audit, method="POST", body=deep)  # fmt: skip
    assert code == 422 and "nested" in status["message"]
    (event,) = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert event["verb"] == "create" and event["objectRef"]["resource"] == "configmaps"
    assert event["responseStatus"]["code"] == 422 and event["user"]["username"] == "admin"


def test_openapi_v2_as_protobuf_when_asked(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    ((code, _, (media, data)),) = run(tmp_path, 10, [("/openapi/v2", admin)],
                                      accept=openapi.PROTOBUF_ACCEPT)  # fmt: skip
    assert code == 200 and media == openapi.PROTOBUF_CONTENT_TYPE
    assert data == openapi.v2_protobuf()


def test_openapi_v3_documents_are_sent_as_kube_openapi_sends_them(tmp_path: Path) -> None:
    admin = TokenAuthority(b"0123456789abcdef0123").admin_token()
    served = openapi.v3_served("apps", "v1")
    url = openapi.v3_paths()["paths"]["apis/apps/v1"]["serverRelativeURL"]
    stale = "/openapi/v3/apis/apps/v1?hash=" + "0" * 128
    answers = run(tmp_path, 10, [("/openapi/v3/apis/apps/v1", admin), (url, admin),
                                 (stale, admin), ("/openapi/v3", admin)])  # fmt: skip
    (plain, by_hash, moved, index) = answers
    (plain_h, by_hash_h, moved_h, index_h) = list(answer_headers)
    assert plain[0] == 200 and plain[2] == openapi.v3("apps", "v1")
    assert plain_h["ETag"] == f'"{served.etag}"' and "Cache-Control" not in plain_h
    # By the index's URL: immutable, so kubectl's disk cache keeps it.
    assert by_hash[0] == 200 and by_hash_h["Cache-Control"] == "public, immutable"
    assert by_hash_h["Expires"].endswith(" GMT") and by_hash_h["Vary"] == "Accept"
    # By a hash that is not the document's (any more): to the current URL.
    assert moved[0] == 301 and moved_h["Location"] == url
    assert index[0] == 200 and index[2]["paths"]["apis/apps/v1"]["serverRelativeURL"] == url
    # A client that has the document (If-None-Match: its ETag) is told so.
    (tmp_path / "again").mkdir()
    answers = run(tmp_path / "again", 10, [(url, admin), ("/openapi/v3", admin)],
                  headers={"If-None-Match": f'"{served.etag}", {index_h["ETag"]}'})  # fmt: skip
    assert [a[0] for a in answers] == [304, 304]
    assert answer_headers[0]["ETag"] == f'"{served.etag}"'
    (tmp_path / "other").mkdir()
    answers = run(tmp_path / "other", 10, [(url, admin)], headers={"If-None-Match": '"other"'})
    assert answers[0][0] == 200
