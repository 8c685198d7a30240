"""A LoadBalancer Service's defaults and allocations, as Kubernetes makes them:
allocateLoadBalancerNodePorts (true by default; false allocates none),
healthCheckNodePort for externalTrafficPolicy Local only, unique across
Services."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.defaults import apply_defaults
from controlplane.api.kinds import definition
from controlplane.client.errors import Invalid

Object = dict[str, Any]


class Api:
    service_cidr = "10.43.0.0/16"

    def __init__(self) -> None:
        self.services: list[Object] = []

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Object:
        raise NotImplementedError

    def cached_objects(self, kind: str) -> list[Object]:
        return self.services if kind == "Service" else []


def admitted(api: Api, name: str, old: Object | None = None, **spec: Any) -> Object:
    svc: Object = {"kind": "Service", "metadata": {"name": name, "uid": name},
                   "spec": {"ports": [{"port": 80}], **spec}}  # fmt: skip
    apply_defaults("Service", svc)
    d = definition("Service")
    assert d.admit is not None
    d.admit(api, d.info, svc, old)
    api.services = [s for s in api.services if s["metadata"]["uid"] != name] + [svc]
    return svc


def test_allocate_load_balancer_node_ports() -> None:
    api = Api()
    lb = admitted(api, "lb", type="LoadBalancer")
    assert lb["spec"]["allocateLoadBalancerNodePorts"] is True
    assert lb["spec"]["ports"][0]["nodePort"] == 30000
    bare = admitted(api, "bare", type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    assert "nodePort" not in bare["spec"]["ports"][0]
    # Turned off later: the ports it has are kept (Kubernetes does not free them).
    kept = admitted(api, "lb", old=lb, type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    assert kept["spec"]["ports"][0]["nodePort"] == 30000


def test_health_check_node_port_only_for_local() -> None:
    api = Api()
    local = admitted(api, "local", type="LoadBalancer", externalTrafficPolicy="Local")
    hc = local["spec"]["healthCheckNodePort"]
    assert hc and hc != local["spec"]["ports"][0]["nodePort"]
    other = admitted(api, "other", type="LoadBalancer", externalTrafficPolicy="Local")
    assert other["spec"]["healthCheckNodePort"] not in (hc, other["spec"]["ports"][0]["nodePort"])
    cluster = admitted(
        api, "local", old=local, type="LoadBalancer", externalTrafficPolicy="Cluster"
    )
    assert "healthCheckNodePort" not in cluster["spec"]
    with pytest.raises(Invalid, match=r"spec\.healthCheckNodePort"):
        admitted(api, "third", type="LoadBalancer", externalTrafficPolicy="Local",
                 healthCheckNodePort=other["spec"]["healthCheckNodePort"])  # fmt: skip
