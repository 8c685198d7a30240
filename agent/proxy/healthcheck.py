"""kube-proxy's service health checks: one HTTP listener per healthCheckNodePort.

A LoadBalancer Service with `externalTrafficPolicy: Local` serves only from
the node a client reached, so an external load balancer must know which
nodes have endpoints: the API server gives such a Service a
`healthCheckNodePort`, and every node answers `GET /` there as kube-proxy
does: 200 with `{"service": {"namespace", "name"}, "localEndpoints": N,
"serviceProxyHealthy": true}` while the node has N > 0 ready endpoints of
it, 503 with N = 0 otherwise. `health_targets` is the pure part (which ports,
what counts); `HealthCheckServers.sync` opens and closes listeners to match.
A port that cannot be bound is logged and tried again on the next sync.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.proxy.model import EndpointSource

log = logging.getLogger("skiff.agent.proxy.healthcheck")


@dataclass(frozen=True)
class HealthTarget:
    namespace: str
    name: str
    local_endpoints: int


def health_targets(
    services: Iterable[Mapping[str, Any]],
    source: EndpointSource,
    node_name: str,
) -> dict[int, HealthTarget]:
    """healthCheckNodePort -> what this node answers there. Only ready local
    endpoints count (kube-proxy: a node whose endpoints are all terminating
    answers 503, so load balancers drain it)."""
    out: dict[int, HealthTarget] = {}
    for svc in services:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        port = spec.get("healthCheckNodePort")
        if not isinstance(port, int) or spec.get("type") != "LoadBalancer":
            continue
        if spec.get("externalTrafficPolicy") != "Local" or meta.get("deletionTimestamp"):
            continue
        ns, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        local: set[str] = set()
        for p in spec.get("ports") or []:
            if isinstance(p, Mapping):
                for e in source(
                    ns, name, str(p.get("name") or ""), str(p.get("protocol") or "TCP")
                ):
                    if e.node_name == node_name and e.ready:
                        local.add(e.ip)
        out[port] = HealthTarget(ns, name, len(local))
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        target = self.server.target
        body = json.dumps(
            {
                "service": {"namespace": target.namespace, "name": target.name},
                "localEndpoints": target.local_endpoints,
                "serviceProxyHealthy": True,
            }
        ).encode()
        self.send_response(200 if target.local_endpoints > 0 else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Load-Balancing-Endpoint-Weight", str(target.local_endpoints))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], target: HealthTarget) -> None:
        self.target = target
        super().__init__(address, _Handler)


class HealthCheckServers:
    def __init__(self, host: str = "0.0.0.0") -> None:
        self.host = host
        self._servers: dict[int, _Server] = {}
        self._lock = threading.Lock()

    def ports(self) -> list[int]:
        with self._lock:
            return sorted(self._servers)

    def sync(self, targets: Mapping[int, HealthTarget]) -> None:
        with self._lock:
            for port in sorted(set(self._servers) - set(targets)):
                self._servers.pop(port).shutdown()
            for port, target in targets.items():
                server = self._servers.get(port)
                if server is not None:
                    server.target = target
                    continue
                try:
                    server = _Server((self.host, port), target)
                except OSError as err:
                    log.warning("healthCheckNodePort %d of %s/%s: %s", port, target.namespace,
                                target.name, err)  # fmt: skip
                    continue
                threading.Thread(
                    target=server.serve_forever, name=f"healthcheck-{port}", daemon=True
                ).start()
                self._servers[port] = server

    def close(self) -> None:
        self.sync({})
