"""machinery.metrics.serve answers as prometheus_client's start_http_server
did: the text format at any path but /favicon.ico, gzip when accepted, 405
for other methods."""

from __future__ import annotations

import gzip
import urllib.error
import urllib.request

import pytest

from machinery import metrics


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=10
        ) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_server_answers_as_prometheus_clients_did() -> None:
    found = metrics.registry()
    metrics.Counter("served_total", "Served.", registry=found).inc()
    server = metrics.serve(found, "127.0.0.1:0")
    try:
        base = f"http://127.0.0.1:{server.port}"
        code, headers, body = _get(base + "/metrics")
        assert code == 200
        assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert "served_total 1.0\n" in body.decode()
        assert "process_resident_memory_bytes" in body.decode()
        code, headers, zipped = _get(base + "/metrics", {"Accept-Encoding": "gzip"})
        assert headers.get("Content-Encoding") == "gzip"
        assert "served_total 1.0\n" in gzip.decompress(zipped).decode()
        assert _get(base + "/favicon.ico")[0:3:2] == (200, b"")
        request = urllib.request.Request(base + "/metrics", data=b"x", method="POST")
        try:
            urllib.request.urlopen(request, timeout=10)
            raise AssertionError("POST was answered")
        except urllib.error.HTTPError as e:
            assert e.code == 405
            assert e.headers["Allow"] == "OPTIONS,GET"
    finally:
        server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(base + "/metrics", timeout=2)
