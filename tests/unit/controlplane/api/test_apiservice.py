"""APIService (apiregistration.k8s.io/v1): kube-aggregator's validation
rules and the columns `kubectl get apiservices` prints."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api import kinds
from controlplane.api.checks import Errors

DEF = kinds.definition("APIService")


def apiservice(name: str = "v1beta1.metrics.k8s.io", **spec: Any) -> dict[str, Any]:
    base = {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100}  # fmt: skip
    return {"metadata": {"name": name}, "spec": {**base, **spec}}


def problems(obj: dict[str, Any]) -> list[str]:
    assert DEF.defaults is not None and DEF.validate is not None
    DEF.defaults(obj)
    e = Errors()
    DEF.validate(e, obj, None)
    return e.items


def test_a_valid_apiservice_with_a_service_gets_port_443() -> None:
    obj = apiservice(service={"namespace": "kube-system", "name": "metrics-server"},
                     insecureSkipTLSVerify=True)  # fmt: skip
    assert problems(obj) == []
    assert obj["spec"]["service"]["port"] == 443


def test_a_local_core_apiservice_is_v1_dot() -> None:
    assert problems(apiservice("v1.", group="", version="v1")) == []


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (apiservice("v1.metrics.k8s.io"),
         'metadata.name: Invalid value: "v1.metrics.k8s.io": must be `spec.version+"."+spec.group`'),
        (apiservice("v2.", group="", version="v2"),
         'spec.group: Invalid value: "": only v1 may have an empty group and it better be legacy kube'),
        (apiservice(groupPriorityMinimum=0),
         "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000"),
        (apiservice(versionPriority=1001),
         "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000"),
        (apiservice(insecureSkipTLSVerify=True),
         "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if service is nil"),
        (apiservice(caBundle="bm90IGEgY2VydA=="),
         'spec.caBundle: Invalid value: "<bytes>": may not be set if service is nil'),
        (apiservice(service={"namespace": "a", "name": "b"}, caBundle="eA==",
                    insecureSkipTLSVerify=True),
         "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present"),
        (apiservice(service={"namespace": "a", "name": "b", "port": 70000}),
         "spec.service.port: Invalid value: 70000: must be less than or equal to 65535"),
        (apiservice(service={"name": "b"}), "spec.service.namespace: Required value"),
    ],
)  # fmt: skip
def test_bad_apiservices_are_refused_naming_the_field(obj: dict[str, Any], expected: str) -> None:
    assert expected in problems(obj)


def test_columns_say_local_or_the_service_and_the_reason_when_unavailable() -> None:
    assert DEF.printer is not None
    local = apiservice()
    local["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}
    assert DEF.printer.row(local, 0, False)[:3] == ["v1beta1.metrics.k8s.io", "Local", "True"]
    remote = apiservice(service={"namespace": "kube-system", "name": "metrics-server"})
    remote["status"] = {"conditions": [{"type": "Available", "status": "False",
                                        "reason": "MissingEndpoints"}]}  # fmt: skip
    row = DEF.printer.row(remote, 0, False)
    assert row[1:3] == ["kube-system/metrics-server", "False (MissingEndpoints)"]
    assert DEF.printer.row(apiservice(), 0, False)[2] == "Unknown"
