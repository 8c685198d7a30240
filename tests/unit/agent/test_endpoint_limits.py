"""The agent endpoint's bounds (issue 16): invalid tokens are cached only
briefly and boundedly, questions to the API server are bounded, and
connections past the limit are closed before any work. On the old code
every invalid token was cached forever and every connection got a thread."""

from __future__ import annotations

import socket
import threading

from agent.server import INVALID_TTL, MAX_ASKING, MAX_CACHED, TokenChecker
from agent.stream_proxy import StreamProxy, StreamProxyConfig
from controlplane.client.config import ClientConfig
from tests.harness.wait import wait_for


def test_invalid_tokens_are_cached_briefly_and_boundedly() -> None:
    now = [0.0]
    asked: list[str] = []

    def ask(token: str) -> bool:
        asked.append(token)
        return token == "good"

    checker = TokenChecker(ClientConfig("127.0.0.1:1"), lambda: now[0], ask)
    assert checker.allowed("good") and not checker.allowed("bad")
    assert not checker.allowed("bad") and asked == ["good", "bad"]  # cached
    now[0] += INVALID_TTL + 0.1
    assert not checker.allowed("bad") and asked.count("bad") == 2  # asked again
    assert checker.allowed("good") and asked.count("good") == 1  # still valid
    for i in range(3 * MAX_CACHED):
        checker.allowed(f"made-up-{i}")
    assert checker.cached() <= MAX_CACHED


def test_questions_to_the_api_server_are_bounded() -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def slow(token: str) -> bool:
        started.release()
        release.wait(10)
        return True

    checker = TokenChecker(ClientConfig("127.0.0.1:1"), ask=slow)
    threads = [threading.Thread(target=checker.allowed, args=(f"t{i}",)) for i in range(MAX_ASKING)]
    for t in threads:
        t.start()
    for _ in range(MAX_ASKING):
        assert started.acquire(timeout=10)
    assert not checker.allowed("one-too-many")  # refused at once, not queued
    release.set()
    for t in threads:
        t.join()


def test_connections_past_the_limit_are_closed_at_once() -> None:
    proxy = StreamProxy(lambda ns, n: None, None, None,  # type: ignore[arg-type]
                        StreamProxyConfig(max_connections=2)).start()  # fmt: skip
    held = []
    try:
        for _ in range(2):
            s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            held.append(s)
        wait_for(lambda: proxy._handlers == 2, timeout=5)
        extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        held.append(extra)
        assert extra.recv(1) == b""  # closed without a word
    finally:
        for s in held:
            s.close()
        proxy.stop()
