"""watch=true over raw HTTPS: chunked JSON lines, bookmarks, timeoutSeconds, selectors."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.integration.rest.conftest import Cluster
from tests.integration.rest.test_bad_input import call

pytestmark = pytest.mark.slow


def open_watch(cluster: Cluster, query: str) -> Any:
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    request = urllib.request.Request(
        f"{cluster.url}/api/v1/namespaces/default/configmaps?watch=true&{query}",
        headers={"Authorization": f"Bearer {cluster.running.admin.token}"},
    )
    return urllib.request.urlopen(request, context=context)


def test_bookmarks_selectors_and_timeout(cluster: Cluster) -> None:
    path = "/api/v1/namespaces/default/configmaps"
    code, made, _ = call(cluster, "POST", path, json.dumps(
        {"metadata": {"name": "bm", "labels": {"w": "yes"}}}).encode())  # fmt: skip
    assert code == 201
    rv = made["metadata"]["resourceVersion"]
    started = time.monotonic()
    with open_watch(cluster, f"resourceVersion={rv}&allowWatchBookmarks=true"
                             "&labelSelector=w%3Dyes&timeoutSeconds=3") as response:  # fmt: skip
        assert response.headers["Content-Type"] == "application/json"
        call(cluster, "POST", path, json.dumps({"metadata": {"name": "other"}}).encode())
        call(cluster, "POST", path, json.dumps(
            {"metadata": {"name": "bm2", "labels": {"w": "yes"}}}).encode())  # fmt: skip
        events = [json.loads(line) for line in response]
    assert time.monotonic() - started < 10  # ended by timeoutSeconds
    # A bookmark may come first when the POSTs are slow (a loaded machine):
    # the events are what the selector matches, bookmarks aside.
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events
             if e["type"] != "BOOKMARK"]  # fmt: skip
    assert kinds == [("ADDED", "bm2")]  # "other" does not match the selector
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[-1]["object"]["kind"] == "ConfigMap"
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) > int(rv)


def test_a_stalled_reader_gets_every_event_and_holds_up_no_one(cluster: Cluster) -> None:
    """Events are written in place to streams whose connection has room; one
    whose client stops reading falls back to waiting for the drain. It loses
    nothing and reorders nothing, and a reading watcher is not held up."""
    path = "/api/v1/namespaces/default/configmaps"
    code, made, _ = call(cluster, "POST", path, json.dumps(
        {"metadata": {"name": "stall-0"}}).encode())  # fmt: skip
    assert code == 201
    rv = made["metadata"]["resourceVersion"]
    names = [f"stall-{i}" for i in range(1, 41)]
    filler = "x" * 200_000  # 40 x 200 kB: more than the sockets buffer, so writing pauses
    query = f"resourceVersion={rv}&labelSelector=stall%3Dyes&timeoutSeconds=60"
    with open_watch(cluster, query) as stalled, open_watch(cluster, query) as reading:
        for name in names:
            code, _, _ = call(cluster, "POST", path, json.dumps({"metadata": {
                "name": name, "labels": {"stall": "yes"}}, "data": {"f": filler}}).encode())  # fmt: skip
            assert code == 201
        # The reading watcher has everything while the stalled one has read nothing.
        seen = [json.loads(reading.readline())["object"]["metadata"]["name"] for _ in names]
        assert seen == names
        late = [json.loads(stalled.readline()) for _ in names]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in late] == [
        ("ADDED", n) for n in names
    ]
    assert all(e["object"]["data"]["f"] == filler for e in late)


def test_a_bad_include_object_is_refused_before_the_stream(cluster: Cluster) -> None:
    context = ssl.create_default_context(cadata=cluster.running.admin.ca_pem.decode())
    context.check_hostname = False
    request = urllib.request.Request(
        f"{cluster.url}/api/v1/namespaces/default/configmaps?watch=true&includeObject=Bogus",
        headers={"Authorization": f"Bearer {cluster.running.admin.token}",
                 "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )  # fmt: skip
    try:
        urllib.request.urlopen(request, context=context, timeout=10)
    except urllib.error.HTTPError as err:
        status = json.loads(err.read())
        assert err.code == 400 and "includeObject" in status["message"]
    else:
        raise AssertionError("the watch started")
