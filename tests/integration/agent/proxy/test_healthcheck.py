"""kube-proxy's healthCheckNodePort answers: which Services, how many local endpoints."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from agent.proxy.healthcheck import HealthCheckServers, HealthTarget, health_targets
from agent.proxy.model import endpoints_source
from tests.harness.ports import free_port


def svc(name: str, port: int, policy: str = "Local", kind: str = "LoadBalancer") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": kind,
            "externalTrafficPolicy": policy,
            "healthCheckNodePort": port,
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        },
    }


def eps(name: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "subsets": [
            {
                "addresses": [
                    {"ip": f"10.244.0.{i}", "nodeName": n} for i, n in enumerate(nodes, 2)
                ],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            }
        ],
    }


def test_targets_count_only_this_nodes_ready_endpoints() -> None:
    services = [svc("web", 32001), svc("cluster", 32002, policy="Cluster"), svc("none", 32003)]
    endpoints = {"default/web": eps("web", ["n1", "n1", "n2"]), "default/none": eps("none", ["n2"])}
    assert health_targets(services, endpoints_source(endpoints), "n1") == {
        32001: HealthTarget("default", "web", 2),
        32003: HealthTarget("default", "none", 0),
    }


def get(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_servers_answer_200_with_local_endpoints_and_503_without() -> None:
    servers = HealthCheckServers("127.0.0.1")
    port = free_port()
    try:
        servers.sync({port: HealthTarget("default", "web", 1)})
        assert get(port) == (
            200,
            {
                "service": {"namespace": "default", "name": "web"},
                "localEndpoints": 1,
                "serviceProxyHealthy": True,
            },
        )
        servers.sync({port: HealthTarget("default", "web", 0)})
        assert get(port)[0] == 503
        servers.sync({})
        assert servers.ports() == []
    finally:
        servers.close()
