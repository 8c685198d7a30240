import http.server
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, Future
from typing import Any

import pytest

from agent.probes import ProbeManager, ProbeTarget, RealProbeRunner, resolve_port
from machinery.clock import FakeClock


class InlineExecutor(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        f: Future[Any] = Future()
        f.set_result(fn(*args, **kwargs))
        return f


class ScriptedRunner:
    """Answers each probe kind from a list of outcomes (last one repeats)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, list[bool]] = {}
        self.calls: list[str] = []

    def run(
        self, handler: Mapping[str, Any], target: ProbeTarget, timeout: float
    ) -> tuple[bool, str]:
        kind = handler["exec"]["command"][0]
        self.calls.append(kind)
        seq = self.outcomes.setdefault(kind, [True])
        ok = seq.pop(0) if len(seq) > 1 else seq[0]
        return ok, "" if ok else f"{kind} failed"


def probe(kind: str, **kw: Any) -> dict[str, Any]:
    return {"exec": {"command": [kind]}, "periodSeconds": 10, **kw}


TARGET = ProbeTarget(container_id="c1", pod_ip="127.0.0.1", ports={})


@pytest.fixture
def env() -> tuple[FakeClock, ScriptedRunner, list[str], ProbeManager]:
    clock = FakeClock()
    runner = ScriptedRunner()
    changes: list[str] = []
    return clock, runner, changes, ProbeManager(runner, clock, InlineExecutor(), changes.append)


def test_readiness_waits_for_initial_delay_and_threshold(env: Any) -> None:
    clock, runner, changes, mgr = env
    c = {"name": "web", "readinessProbe": probe("ready", initialDelaySeconds=5, successThreshold=2)}
    mgr.sync_container("u", c, TARGET, started_at=clock.now())
    assert mgr.results("u", [c])[0] == frozenset()
    clock.step(4)
    assert runner.calls == []
    clock.step(1)
    assert runner.calls == ["ready"] and mgr.results("u", [c])[0] == frozenset()
    clock.step(10)
    assert mgr.results("u", [c])[0] == {"web"} and changes == ["u"]


def test_liveness_failure_threshold(env: Any) -> None:
    clock, runner, changes, mgr = env
    runner.outcomes["live"] = [True, False, False, False]
    c = {"name": "web", "livenessProbe": probe("live", failureThreshold=3)}
    mgr.sync_container("u", c, TARGET, started_at=clock.now())
    clock.step(0)
    clock.step(10)
    clock.step(10)
    assert mgr.results("u", [c])[2] == frozenset()
    clock.step(10)
    assert mgr.results("u", [c])[2] == {"web"} and changes == ["u"]
    assert mgr.message("u", "web", "livenessProbe") == "live failed"


def test_startup_gates_liveness_and_readiness(env: Any) -> None:
    clock, runner, _, mgr = env
    runner.outcomes["start"] = [False, True]
    c = {
        "name": "web",
        "startupProbe": probe("start", failureThreshold=30),
        "livenessProbe": probe("live"),
        "readinessProbe": probe("ready"),
    }
    mgr.sync_container("u", c, TARGET, started_at=clock.now())
    clock.step(0)
    ready, started, _ = mgr.results("u", [c])
    assert not ready and not started
    assert "live" not in runner.calls and "ready" not in runner.calls
    clock.step(10)
    ready, started, _ = mgr.results("u", [c])
    assert started == {"web"}
    clock.step(10)
    assert "live" in runner.calls and mgr.results("u", [c])[0] == {"web"}
    n = runner.calls.count("start")
    clock.step(30)
    assert runner.calls.count("start") == n  # a passed startup probe stops


def test_startup_failure_counts_as_liveness_failure(env: Any) -> None:
    clock, runner, _, mgr = env
    runner.outcomes["start"] = [False]
    c = {"name": "web", "startupProbe": probe("start", failureThreshold=2)}
    mgr.sync_container("u", c, TARGET, started_at=clock.now())
    clock.step(0)
    clock.step(10)
    assert mgr.results("u", [c])[2] == {"web"}


def test_new_container_id_resets_and_remove_stops(env: Any) -> None:
    clock, runner, _, mgr = env
    runner.outcomes["live"] = [False]
    c = {"name": "web", "livenessProbe": probe("live", failureThreshold=1)}
    mgr.sync_container("u", c, TARGET, started_at=clock.now())
    clock.step(0)
    assert mgr.results("u", [c])[2] == {"web"}
    runner.outcomes["live"] = [True]
    mgr.sync_container("u", c, ProbeTarget("c2", "127.0.0.1", {}), started_at=clock.now())
    assert mgr.results("u", [c])[2] == frozenset()
    mgr.remove_pod("u")
    before = len(runner.calls)
    clock.step(100)
    assert len(runner.calls) == before


def test_no_probes_means_ready_and_started(env: Any) -> None:
    _, _, _, mgr = env
    c = {"name": "web"}
    assert mgr.results("u", [c]) == ({"web"}, {"web"}, frozenset())


@pytest.fixture
def http_server() -> Iterator[int]:
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/ok" else 503)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()


def test_real_runner_http_and_tcp(http_server: int) -> None:
    runner = RealProbeRunner(cri=None)  # type: ignore[arg-type]
    target = ProbeTarget("c", "127.0.0.1", {"web": http_server})
    assert runner.run({"httpGet": {"path": "/ok", "port": "web"}}, target, 2) == (True, "")
    ok, msg = runner.run({"httpGet": {"path": "/bad", "port": http_server}}, target, 2)
    assert not ok and "statuscode: 503" in msg
    assert runner.run({"tcpSocket": {"port": http_server}}, target, 2)[0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    ok, msg = runner.run({"tcpSocket": {"port": closed}}, target, 2)
    assert not ok and "refused" in msg.lower()
    with pytest.raises(ValueError, match="named container port"):
        resolve_port("nope", {})
