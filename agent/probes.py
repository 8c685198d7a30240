"""Liveness, readiness and startup probes, as the kubelet runs them.

One worker per (pod, container, probe kind), scheduled on the injected
clock's timer heap and run on a small thread pool (never a thread per
probe). A worker first runs initialDelaySeconds after the container started,
then every periodSeconds, each try bounded by timeoutSeconds; a result flips
after successThreshold successes or failureThreshold failures in a row. Until
a startup probe succeeds, liveness and readiness are not probed. A flip calls
`on_change(pod_uid)` so the pod is synced again (a liveness failure restarts
the container; readiness changes the pod's Ready condition).
"""

from __future__ import annotations

import functools
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Protocol

from agent.cri_client import CRIClient, CRIError
from machinery.clock import Clock, Timer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from urllib.request import OpenerDirector

log = logging.getLogger("skiff.agent.probes")

KINDS = ("startupProbe", "livenessProbe", "readinessProbe")


@dataclass(frozen=True)
class ProbeTarget:
    container_id: str
    pod_ip: str
    ports: Mapping[str, int]  # named container ports


class ProbeRunner(Protocol):
    def run(
        self, handler: Mapping[str, Any], target: ProbeTarget, timeout: float
    ) -> tuple[bool, str]: ...


class RealProbeRunner:
    """exec through CRI ExecSync; httpGet and tcpSocket to the pod IP from
    the node (pod IPs are routable from their node)."""

    def __init__(self, cri: CRIClient) -> None:
        self._cri = cri

    def run(
        self, handler: Mapping[str, Any], target: ProbeTarget, timeout: float
    ) -> tuple[bool, str]:
        try:
            if "exec" in handler:
                resp = self._cri.exec_sync(
                    target.container_id, handler["exec"]["command"], max(1, int(timeout))
                )
                out = (resp.stdout + resp.stderr).decode(errors="replace").strip()
                return resp.exit_code == 0, out or f"exit code {resp.exit_code}"
            if "httpGet" in handler:
                return self._http(handler["httpGet"], target, timeout)
            if "tcpSocket" in handler:
                h = handler["tcpSocket"]
                host = h.get("host") or target.pod_ip
                port = resolve_port(h["port"], target.ports)
                with socket.create_connection((host, port), timeout=timeout):
                    return True, ""
            return False, "probe has no handler (exec, httpGet or tcpSocket)"
        except CRIError as err:
            return False, err.message
        except (OSError, ValueError) as err:
            return False, str(err)

    def _http(self, h: Mapping[str, Any], target: ProbeTarget, timeout: float) -> tuple[bool, str]:
        host = h.get("host") or target.pod_ip
        port = resolve_port(h["port"], target.ports)
        path = h.get("path", "/")
        url = f"{h.get('scheme', 'HTTP').lower()}://{host}:{port}{path if path.startswith('/') else '/' + path}"
        headers = {"User-Agent": "skiff-probe/1.0"}
        for hdr in h.get("httpHeaders") or []:
            headers[hdr["name"]] = hdr["value"]  # urllib capitalizes
        code = http_status(url, timeout, headers)
        ok = 200 <= code < 400
        return ok, "" if ok else f"HTTP probe failed with statuscode: {code}"


@functools.cache
def _direct() -> OpenerDirector:
    import urllib.request

    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_status(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> int:
    """GET `url` straight from the node: the HTTP status code (an error
    status too). Probes and hooks never go through an http_proxy or
    https_proxy from the agent's environment (urlopen would honour them).
    urllib is imported at the first HTTP probe or hook, not at rest."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with _direct().open(req, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


def resolve_port(port: Any, named: Mapping[str, int]) -> int:
    if isinstance(port, int):
        return port
    if str(port).isdigit():
        return int(port)
    if port in named:
        return named[port]
    raise ValueError(f"port {port!r} is not a number nor a named container port")


@dataclass
class _Worker:
    uid: str
    name: str
    kind: str
    probe: Mapping[str, Any]
    target: ProbeTarget
    result: bool
    successes: int = 0
    failures: int = 0
    last_message: str = ""
    timer: Timer | None = None
    stopped: bool = False


def _initial(kind: str) -> bool:
    # Liveness is assumed fine until proven otherwise; readiness and startup not.
    return kind == "livenessProbe"


class ProbeManager:
    def __init__(
        self,
        runner: ProbeRunner,
        clock: Clock,
        pool: Executor,
        on_change: Callable[[str], None],
    ) -> None:
        self._runner = runner
        self._clock = clock
        self._pool = pool
        self._on_change = on_change
        self._lock = threading.Lock()
        self._workers: dict[tuple[str, str, str], _Worker] = {}
        # Told every probe run: (pod uid, container, probe kind, ok) (/metrics/probes).
        self.observed: Callable[[str, str, str, bool], None] | None = None

    def sync_container(
        self, uid: str, container: Mapping[str, Any], target: ProbeTarget, started_at: float
    ) -> None:
        """Make sure the probes of a running container have workers."""
        name = container["name"]
        for kind in KINDS:
            probe = container.get(kind)
            key = (uid, name, kind)
            with self._lock:
                worker = self._workers.get(key)
                if worker is not None and worker.target.container_id == target.container_id:
                    continue
                if worker is not None:
                    self._stop(worker)
                    del self._workers[key]
                if not probe:
                    continue
                worker = _Worker(uid, name, kind, probe, target, _initial(kind))
                self._workers[key] = worker
            delay = max(
                0.0, started_at + float(probe.get("initialDelaySeconds", 0)) - self._clock.now()
            )
            self._schedule(worker, delay)

    def remove_container(self, uid: str, name: str) -> None:
        with self._lock:
            for kind in KINDS:
                worker = self._workers.pop((uid, name, kind), None)
                if worker is not None:
                    self._stop(worker)

    def remove_pod(self, uid: str) -> None:
        with self._lock:
            for key in [k for k in self._workers if k[0] == uid]:
                self._stop(self._workers.pop(key))

    def results(
        self, uid: str, containers: list[Mapping[str, Any]]
    ) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """(ready, started, liveness_failed) container names of a pod, for
        the containers given (those running now)."""
        ready, started, failed = set(), set(), set()
        with self._lock:
            for c in containers:
                name = c["name"]
                startup = self._workers.get((uid, name, "startupProbe"))
                is_started = startup.result if startup is not None else not c.get("startupProbe")
                if is_started:
                    started.add(name)
                live = self._workers.get((uid, name, "livenessProbe"))
                if (live is not None and not live.result) or (
                    startup is not None
                    and not startup.result
                    and startup.failures >= int(startup.probe.get("failureThreshold", 3))
                ):
                    failed.add(name)
                rd = self._workers.get((uid, name, "readinessProbe"))
                if is_started and (rd is None or rd.result):
                    ready.add(name)
        return frozenset(ready), frozenset(started), frozenset(failed)

    def message(self, uid: str, name: str, kind: str) -> str:
        with self._lock:
            w = self._workers.get((uid, name, kind))
            return w.last_message if w else ""

    # internals
    def _stop(self, worker: _Worker) -> None:
        worker.stopped = True
        if worker.timer is not None:
            worker.timer.cancel()

    def _schedule(self, worker: _Worker, delay: float) -> None:
        def fire() -> None:
            if not worker.stopped:
                self._pool.submit(self._run, worker)

        worker.timer = self._clock.call_later(delay, fire)

    def _gated(self, worker: _Worker) -> bool:
        """Liveness and readiness wait for a startup probe to succeed."""
        if worker.kind == "startupProbe":
            return False
        startup = self._workers.get((worker.uid, worker.name, "startupProbe"))
        return startup is not None and not startup.result

    def _run(self, worker: _Worker) -> None:
        probe = worker.probe
        period = float(probe.get("periodSeconds", 10))
        with self._lock:
            gated = self._gated(worker)
        if not gated:
            ok, message = self._runner.run(
                probe, worker.target, float(probe.get("timeoutSeconds", 1))
            )
            changed = self._record(worker, ok, message)
            if self.observed is not None:
                self.observed(worker.uid, worker.name, worker.kind, ok)
            if changed:
                log.info(
                    "pod_uid=%s container=%s %s %s: %s",
                    worker.uid,
                    worker.name,
                    worker.kind,
                    "succeeded" if worker.result else "failed",
                    message,
                )
                self._on_change(worker.uid)
        if not worker.stopped and not (worker.kind == "startupProbe" and worker.result):
            self._schedule(worker, period)

    def _record(self, worker: _Worker, ok: bool, message: str) -> bool:
        probe = worker.probe
        with self._lock:
            worker.last_message = message
            if ok:
                worker.successes += 1
                worker.failures = 0
                need = int(probe.get("successThreshold", 1))
                if not worker.result and worker.successes >= need:
                    worker.result = True
                    return True
                return False
            worker.failures += 1
            worker.successes = 0
            need = int(probe.get("failureThreshold", 3))
            if worker.failures >= need and (
                worker.result or (worker.kind == "startupProbe" and worker.failures == need)
            ):
                worker.result = False
                return True
            return False
