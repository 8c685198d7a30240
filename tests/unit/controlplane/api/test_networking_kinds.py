"""The networking.k8s.io kinds' columns, defaults and DefaultIngressClass admission,
as Kubernetes prints, defaults and admits them."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import columns
from controlplane.api.defaults import apply_defaults
from controlplane.api.kinds import definition
from controlplane.api.kinds.networking.ingress import DEFAULT_ANNOTATION, hosts

Object = dict[str, Any]


def rule(host: str = "") -> Object:
    return {"host": host} if host else {}


@pytest.mark.parametrize(
    ("rules", "shown"),
    [
        ([], "*"),
        ([rule()], "*"),
        ([rule("a.io"), rule(), rule("b.io")], "a.io,b.io"),
        ([rule("a.io"), rule("b.io"), rule("c.io")], "a.io,b.io,c.io"),
        ([rule("a.io"), rule("b.io"), rule("c.io"), rule("d.io")], "a.io,b.io,c.io + 1 more..."),
        ([rule("a.io"), rule(), rule("b.io"), rule("c.io")], "a.io,b.io,c.io"),
    ],
)
def test_ingress_hosts_as_kubernetes_formats_them(rules: list[Object], shown: str) -> None:
    assert hosts(rules) == shown


def test_ingress_row_class_address_ports() -> None:
    ing: Object = {
        "metadata": {"name": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"rules": [rule("shop.io")], "tls": [{"hosts": ["shop.io"]}]},
        "status": {"loadBalancer": {"ingress": [
            {"ip": "192.168.100.12"}, {"ip": "192.168.100.11"}, {"hostname": "lb.example.com"}]}},
    }  # fmt: skip
    now = 1767225600.0 + 60
    assert columns.headers_for("Ingress", False) == [
        "NAME",
        "CLASS",
        "HOSTS",
        "ADDRESS",
        "PORTS",
        "AGE",
    ]
    wide = columns.row_for("Ingress", ing, now, True)
    assert wide == ["shop", "<none>", "shop.io",
                    "192.168.100.11,192.168.100.12,lb.example.com", "80, 443", "60s"]  # fmt: skip
    assert columns.row_for("Ingress", ing, now, False)[3] == "192.168.100.1..."
    del ing["spec"]["tls"]
    assert columns.row_for("Ingress", ing, now, False)[4] == "80"


def test_ingress_class_and_policy_rows() -> None:
    cls: Object = {"metadata": {"name": "c"}, "spec": {"controller": "a.io/b"}}
    assert columns.headers_for("IngressClass", False) == ["NAME", "CONTROLLER", "PARAMETERS", "AGE"]
    assert columns.row_for("IngressClass", cls, 0, False)[:3] == ["c", "a.io/b", "<none>"]
    cls["spec"]["parameters"] = {"kind": "Params", "name": "p"}
    assert columns.row_for("IngressClass", cls, 0, False)[2] == "Params/p"
    pol: Object = {"metadata": {"name": "p"}, "spec": {"podSelector": {}}}
    assert columns.headers_for("NetworkPolicy", False) == ["NAME", "POD-SELECTOR", "AGE"]
    assert columns.row_for("NetworkPolicy", pol, 0, False)[1] == "<none>"
    pol["spec"]["podSelector"] = {"matchLabels": {"app": "db"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["a", "b"]}]}  # fmt: skip
    assert columns.row_for("NetworkPolicy", pol, 0, False)[1] == "app=db,tier in (a,b)"


def test_network_policy_defaults() -> None:
    pol: Object = {"kind": "NetworkPolicy", "metadata": {"name": "p"}}
    apply_defaults("NetworkPolicy", pol)
    assert pol["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    pol = {"spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "UDP"},
                                                             {"port": 443}]}]}}  # fmt: skip
    apply_defaults("NetworkPolicy", pol)
    assert pol["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert [p["protocol"] for p in pol["spec"]["egress"][0]["ports"]] == ["UDP", "TCP"]
    pol = {"spec": {"podSelector": {}, "policyTypes": ["Egress"]}}
    apply_defaults("NetworkPolicy", pol)
    assert pol["spec"]["policyTypes"] == ["Egress"]


class FakeApi:
    service_cidr = "10.43.0.0/16"

    def __init__(self, classes: list[Object]) -> None:
        self.classes = classes

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Object:
        raise NotImplementedError

    def cached_objects(self, kind: str) -> list[Object]:
        return self.classes if kind == "IngressClass" else []


def ingress_class(name: str, created: str, default: bool) -> Object:
    annotations = {DEFAULT_ANNOTATION: "true"} if default else {}
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}}


def test_default_ingress_class_admission() -> None:
    d = definition("Ingress")
    assert d.admit is not None
    api = FakeApi([ingress_class("old", "2026-01-01T00:00:00Z", True),
                   ingress_class("new", "2026-02-01T00:00:00Z", True),
                   ingress_class("newest", "2026-03-01T00:00:00Z", False)])  # fmt: skip
    ing: Object = {"metadata": {"name": "i"}, "spec": {}}
    d.admit(api, d.info, ing, None)
    assert ing["spec"]["ingressClassName"] == "new"
    legacy: Object = {"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}}}
    d.admit(api, d.info, legacy, None)
    assert "ingressClassName" not in legacy["spec"]
    updated: Object = {"metadata": {"name": "i"}, "spec": {}}
    d.admit(api, d.info, updated, {"spec": {}})
    assert updated["spec"] == {}
    none: Object = {"metadata": {"name": "i"}, "spec": {}}
    d.admit(FakeApi([ingress_class("plain", "2026-01-01T00:00:00Z", False)]), d.info, none, None)
    assert none["spec"] == {}
