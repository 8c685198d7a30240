"""The built-in ingress (HAProxy configured by the agent) against a direct connection.

`.venv/bin/python -m bench.ingress [--seconds 5] [--clients 4]`

One backend (busybox httpd serving a 1 KiB page on 127.0.0.1) behind an
Ingress routed by host and path, served by the agent's ingress controller
on 127.0.0.1 (no root needed). The same client (`--clients` threads, a new
connection per request, as busybox httpd closes each) runs against the
ingress and straight against the backend, alternately, in the same run:
requests per second and latency p50/p99 of each. A table, then one JSON
line of figures.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agent.ingress.controller import IngressController, IngressTiming
from agent.ingress.haproxy import IngressSettings
from agent.ingress.model import CONTROLLER
from bench.stats import pctl
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.ports import free_port
from tests.harness.wait import wait_for


def load(port: int, host: str, seconds: float, clients: int) -> tuple[int, list[float]]:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def run() -> None:
        mine: list[float] = []
        while time.monotonic() < stop:
            t = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/app/index.html", headers={"Host": host})
                resp = conn.getresponse()
                resp.read()
                conn.close()
                ok = resp.status == 200
            except OSError:
                ok = False
            if ok:
                mine.append(time.perf_counter() - t)
            else:
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors[0], latencies


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.ingress")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    busybox = shutil.which("busybox") or "/bin/busybox"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "www" / "app").mkdir(parents=True)
        (root / "www" / "app" / "index.html").write_bytes(b"x" * 1024)
        port = free_port()
        backend = subprocess.Popen(
            [busybox, "httpd", "-f", "-p", f"127.0.0.1:{port}", "-h", str(root / "www")]
        )
        api = FakeApiClient()
        api.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        api.create("IngressClass", {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                    "metadata": {"name": "skiff"}, "spec": {"controller": CONTROLLER}})  # fmt: skip
        api.create("Service", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"ports": [{"name": "http", "port": 80}]}}, "default")  # fmt: skip
        api.create("EndpointSlice", {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                                     "metadata": {"name": "web-1", "namespace": "default",
                                                  "labels": {"kubernetes.io/service-name": "web"}},
                                     "addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1"]}],
                                     "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}, "default")  # fmt: skip
        api.create("Ingress", {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"ingressClassName": "skiff", "rules": [{"host": "web.test", "http": {"paths": [
                                   {"path": "/app", "pathType": "Prefix",
                                    "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]}}, "default")  # fmt: skip
        settings = IngressSettings(state_dir=root / "ingress", http_port=free_port(),
                                   https_port=free_port(), bind_address="127.0.0.1")  # fmt: skip
        ctl = IngressController(api, "n1", settings, IngressTiming(min_sync_interval=0.0))
        ctl.start()
        results: dict[str, Any] = {"ingress": [0, []], "direct": [0, []]}
        try:

            def served() -> bool:
                try:
                    return load(settings.http_port, "web.test", 0.05, 1)[1] != []
                except OSError:
                    return False

            wait_for(served, timeout=30, message="ingress serving")
            load(port, "web.test", 0.5, args.clients)  # warm up both
            load(settings.http_port, "web.test", 0.5, args.clients)
            for _ in range(args.rounds):
                for name, target in (("direct", port), ("ingress", settings.http_port)):
                    errs, lat = load(target, "web.test", args.seconds, args.clients)
                    results[name][0] += errs
                    results[name][1] += lat
        finally:
            ctl.stop()
            backend.kill()
            backend.wait()
    total = args.seconds * args.rounds
    print(f"{'path':<10} {'requests/s':>11} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    figures: dict[str, float] = {}
    for name in ("direct", "ingress"):
        errs, lat = results[name]
        rps = len(lat) / total
        p50, p99 = pctl(lat, 0.5) * 1e3, pctl(lat, 0.99) * 1e3
        print(f"{name:<10} {rps:>11.0f} {p50:>8.2f} {p99:>8.2f} {errs:>7}")
        figures.update({f"{name}_rps": round(rps, 1), f"{name}_p50_ms": round(p50, 3),
                        f"{name}_p99_ms": round(p99, 3), f"{name}_errors": errs})  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
