"""watch=true over raw HTTPS: chunked JSON lines, bookmarks, timeoutSeconds, selectors."""

from __future__ import annotations

import json
import ssl
import time
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
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert kinds[0] == ("ADDED", "bm2")  # "other" does not match the selector
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[-1]["object"]["kind"] == "ConfigMap"
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) > int(rv)
