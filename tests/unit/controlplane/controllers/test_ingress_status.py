"""The ingress controller's control-plane half: the default class, status
from the nodes that serve, events for missing Services and Secrets."""

from __future__ import annotations

from typing import Any

from controlplane.client.ingressclasses import default_class
from controlplane.controllers.ingress import PORTS_ANNOTATION, serving_addresses


def node(
    name: str, ip: str, ports: str = "http=80,https=443", ready: bool = True
) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {PORTS_ANNOTATION: ports} if ports else {}},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}],
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }  # fmt: skip


def test_serving_addresses_only_ready_serving_nodes_with_odd_ports() -> None:
    nodes = [
        node("a", "10.0.0.2"),
        node("b", "10.0.0.3", ports=""),
        node("c", "10.0.0.4", ready=False),
    ]
    assert serving_addresses(nodes) == [{"ip": "10.0.0.2"}]
    assert serving_addresses([node("a", "10.0.0.2", "http=8080,https=8443")]) == [
        {
            "ip": "10.0.0.2",
            "ports": [{"port": 8080, "protocol": "TCP"}, {"port": 8443, "protocol": "TCP"}],
        }
    ]


def test_default_class_is_the_newest_annotated_one() -> None:
    def cls(name: str, ts: str, default: bool) -> dict[str, Any]:
        ann = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {"metadata": {"name": name, "creationTimestamp": ts, "annotations": ann}}

    assert default_class([cls("a", "2024-01-01T00:00:00Z", True), cls("b", "2024-02-01T00:00:00Z", True),
                          cls("c", "2024-03-01T00:00:00Z", False)]) == "b"  # fmt: skip
    assert default_class([cls("c", "2024-03-01T00:00:00Z", False)]) == ""


def test_controller_makes_the_class_sets_status_and_warns(env) -> None:
    e = env("ingress")
    e.wait(lambda: any(c["metadata"]["name"] == "skiff" for c in e.client.objects("IngressClass", None)),
           message="default IngressClass")  # fmt: skip
    e.client.create("Node", node("n1", "10.0.0.2"))
    e.client.create("Service", {"apiVersion": "v1", "kind": "Service",
                                "metadata": {"name": "web", "namespace": "default"},
                                "spec": {"ports": [{"name": "http", "port": 80}]}}, "default")  # fmt: skip
    e.client.create("Ingress", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {"ingressClassName": "skiff",
                 "tls": [{"hosts": ["shop.test"], "secretName": "missing-tls"}],
                 "rules": [{"host": "shop.test", "http": {"paths": [
                     {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                     {"path": "/x", "pathType": "Prefix", "backend": {"service": {"name": "gone", "port": {"number": 80}}}},
                 ]}}]},
    }, "default")  # fmt: skip
    e.client.create("Ingress", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "theirs", "namespace": "default"},
        "spec": {"ingressClassName": "nginx", "defaultBackend": {"service": {"name": "gone", "port": {"number": 80}}}},
    }, "default")  # fmt: skip

    def lb(name: str) -> Any:
        return (e.client.get("Ingress", name, "default").get("status") or {}).get("loadBalancer")

    e.wait(lambda: lb("shop") == {"ingress": [{"ip": "10.0.0.2"}]}, message="status")
    ctl = e.controller("ingress")
    reasons = set(ctl.recorder.reasons("default/shop"))
    assert reasons == {"ServiceNotFound", "SecretNotFound"}
    assert lb("theirs") is None and ctl.recorder.reasons("default/theirs") == []


def test_class_less_ingress_gets_status_while_ours_is_the_default(env) -> None:
    """An Ingress made before the default class existed (admission then gave
    it none) is served by the agents, so it gets the status too."""
    e = env("ingress")
    e.wait(lambda: any(c["metadata"]["name"] == "skiff" for c in e.client.objects("IngressClass", None)),
           message="default IngressClass")  # fmt: skip
    e.client.create("Node", node("n1", "10.0.0.2"))
    e.client.create("Ingress", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "plain", "namespace": "default"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
    }, "default")  # fmt: skip

    def lb() -> Any:
        return (e.client.get("Ingress", "plain", "default").get("status") or {}).get("loadBalancer")

    e.wait(
        lambda: lb() == {"ingress": [{"ip": "10.0.0.2"}]}, message="status of a class-less Ingress"
    )
