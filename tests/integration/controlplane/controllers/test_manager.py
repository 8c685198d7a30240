"""The controller manager: --controllers, panics, metrics, leader election, HTTP."""

from __future__ import annotations

import urllib.request

from controlplane.controllers.config import ManagerConfig
from controlplane.controllers.manager import (
    ControllerManager,
)
from tests.fakes.fake_apiclient import FakeApiClient


def test_http_healthz_and_metrics():
    client = FakeApiClient()
    m = ControllerManager(client, ManagerConfig(controllers=("replicaset",)))
    m.start_controllers(5)
    try:
        host, port = m.serve("127.0.0.1", 0)
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=5) as r:
            assert r.read() == b"ok"
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as r:
            assert b'workqueue_depth{name="replicaset"}' in r.read()
    finally:
        m.stop()
