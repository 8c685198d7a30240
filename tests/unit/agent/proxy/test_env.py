from __future__ import annotations

from typing import Any

from agent.proxy.env import env_name, service_env


def svc(name: str, ns: str, ip: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"clusterIP": ip, "ports": ports}}


def test_env_name() -> None:
    assert env_name("my-svc") == "MY_SVC"


def test_variables_as_the_kubelet_sets_them() -> None:
    services = [
        svc(
            "redis-primary",
            "prod",
            "10.43.0.11",
            [
                {"name": "redis", "port": 6379, "protocol": "TCP"},
                {"name": "metrics-udp", "port": 9121, "protocol": "UDP"},
            ],
        )
    ]
    assert service_env(services, "prod") == {
        "REDIS_PRIMARY_SERVICE_HOST": "10.43.0.11",
        "REDIS_PRIMARY_SERVICE_PORT": "6379",
        "REDIS_PRIMARY_SERVICE_PORT_REDIS": "6379",
        "REDIS_PRIMARY_SERVICE_PORT_METRICS_UDP": "9121",
        "REDIS_PRIMARY_PORT": "tcp://10.43.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP": "tcp://10.43.0.11:6379",
        "REDIS_PRIMARY_PORT_6379_TCP_PROTO": "tcp",
        "REDIS_PRIMARY_PORT_6379_TCP_PORT": "6379",
        "REDIS_PRIMARY_PORT_6379_TCP_ADDR": "10.43.0.11",
        "REDIS_PRIMARY_PORT_9121_UDP": "udp://10.43.0.11:9121",
        "REDIS_PRIMARY_PORT_9121_UDP_PROTO": "udp",
        "REDIS_PRIMARY_PORT_9121_UDP_PORT": "9121",
        "REDIS_PRIMARY_PORT_9121_UDP_ADDR": "10.43.0.11",
    }


def test_unnamed_port_defaults_to_tcp() -> None:
    env = service_env([svc("web", "a", "10.43.0.5", [{"port": 80}])], "a")
    assert env["WEB_SERVICE_PORT"] == "80"
    assert env["WEB_PORT_80_TCP_PROTO"] == "tcp"
    assert not any(k.startswith("WEB_SERVICE_PORT_") for k in env)


def test_only_the_pods_namespace_plus_master_services() -> None:
    services = [
        svc("web", "a", "10.43.0.5", [{"port": 80}]),
        svc("other", "b", "10.43.0.6", [{"port": 80}]),
        svc("kubernetes", "default", "10.43.0.1", [{"name": "https", "port": 443}]),
        svc("headless", "a", "None", [{"port": 80}]),
        svc("external", "a", "", [{"port": 80}]),
    ]
    env = service_env(services, "a")
    assert env["WEB_SERVICE_HOST"] == "10.43.0.5"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.43.0.1"
    assert not any(k.startswith(("OTHER_", "HEADLESS_", "EXTERNAL_")) for k in env)
    only_master = service_env(services, "a", enable_service_links=False)
    assert set(only_master) == {k for k in env if k.startswith("KUBERNETES_")}


def test_pod_namespace_service_wins_over_master_service_of_same_name() -> None:
    services = [
        svc("kubernetes", "default", "10.43.0.1", [{"port": 443}]),
        svc("kubernetes", "a", "10.43.0.9", [{"port": 443}]),
    ]
    assert service_env(services, "a")["KUBERNETES_SERVICE_HOST"] == "10.43.0.9"
    assert service_env(list(reversed(services)), "a")["KUBERNETES_SERVICE_HOST"] == "10.43.0.9"
