"""networking.k8s.io/v1 validation: bad input refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.validation import validate


def netpol(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": "default"}, "spec": {"podSelector": {}, **spec}}  # fmt: skip


def ingress(paths: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "i", "namespace": "default"},
            "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": paths}}], **spec}}  # fmt: skip


BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def test_valid_objects_pass() -> None:
    assert validate("NetworkPolicy", netpol({
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                              {"namespaceSelector": {}, "podSelector": {"matchLabels": {"a": "b"}}}],
                     "ports": [{"port": 80, "endPort": 90}, {"protocol": "UDP", "port": "dns"}]}],
    })) == []  # fmt: skip
    assert (
        validate("Ingress", ingress([{"path": "/api", "pathType": "Prefix", "backend": BACKEND}]))
        == []
    )
    assert (
        validate("IngressClass", {"metadata": {"name": "c"}, "spec": {"controller": "a.io/b"}})
        == []
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.300/8"}}]}]}, "spec.ingress[0].from[0].ipBlock.cidr"),
        ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]},
         "spec.egress[0].to[0].ipBlock.except[0]"),
        ({"ingress": [{"ports": [{"protocol": "ICMP"}]}]}, "spec.ingress[0].ports[0].protocol"),
        ({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]}, "spec.ingress[0].ports[0].endPort"),
        ({"policyTypes": ["Sideways"]}, "spec.policyTypes[0]"),
    ],
)  # fmt: skip
def test_bad_policies_name_the_field(spec: dict[str, Any], field: str) -> None:
    problems = validate("NetworkPolicy", netpol(spec))
    assert any(p.startswith(field + ":") for p in problems), problems


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ({"path": "/a", "pathType": "Regex", "backend": BACKEND}, "spec.rules[0].http.paths[0].pathType"),
        ({"path": "/a", "backend": BACKEND}, "spec.rules[0].http.paths[0].pathType"),
        ({"path": "api", "pathType": "Prefix", "backend": BACKEND}, "spec.rules[0].http.paths[0].path"),
        ({"path": "/a//b", "pathType": "Exact", "backend": BACKEND}, "spec.rules[0].http.paths[0].path"),
        ({"path": "/a b", "pathType": "Exact", "backend": BACKEND}, "spec.rules[0].http.paths[0].path"),
        ({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {}}}},
         "spec.rules[0].http.paths[0].backend.service.port"),
    ],
)  # fmt: skip
def test_bad_ingress_paths_name_the_field(path: dict[str, Any], field: str) -> None:
    problems = validate("Ingress", ingress([path]))
    assert any(p.startswith(field + ":") for p in problems), problems


def test_bad_hosts_and_classes() -> None:
    bad_host = ingress([{"path": "/", "pathType": "Prefix", "backend": BACKEND}])
    bad_host["spec"]["rules"][0]["host"] = "a.*.example.com"
    assert any(p.startswith("spec.rules[0].host:") for p in validate("Ingress", bad_host))
    assert validate("IngressClass", {"metadata": {"name": "c"}, "spec": {}}) == [
        "spec.controller: Required value"
    ]
