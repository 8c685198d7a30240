"""APIService (apiregistration.k8s.io/v1, cluster-scoped): who serves a group/version.

Named `<version>.<group>` (`v1.` for the core group). Without `service` the
group/version is served by the API server itself (a *local* APIService:
the API server registers one for every group/version it serves); with one,
the API server proxies `/apis/<group>/<version>` to that Service's endpoints
(controlplane/apiserver/aggregator/).

- Validation (kube-aggregator's): the name is `spec.version + "." + spec.group`;
  version a DNS label; only v1 may have an empty group; groupPriorityMinimum
  in 1..20000 and versionPriority in 1..1000; service port 1..65535 (default
  443); caBundle base64, insecureSkipTLSVerify and caBundle only with a
  service, never together.
- Columns: NAME SERVICE AVAILABLE AGE (SERVICE `Local` or `ns/name`,
  AVAILABLE `True`, `False (Reason)` or `Unknown`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from typing import Any

from controlplane.api.checks import Errors, integer, mapping
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_label
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare, kind, struct

Object = dict[str, Any]

_PACKAGE = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1"
GROUP = "apiregistration.k8s.io"


def service_of(obj: Object) -> dict[str, Any] | None:
    spec = obj.get("spec") or {}
    service = spec.get("service") if isinstance(spec, dict) else None
    return service if isinstance(service, dict) else None


def defaults(obj: Object) -> None:
    service = service_of(obj)
    if service is not None and service.get("port") is None:
        service["port"] = 443


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec: Any = obj.get("spec")
    if not mapping(e, "spec", spec, required=True):
        return
    group, version = spec.get("group") or "", spec.get("version") or ""
    meta_name = str((obj.get("metadata") or {}).get("name") or "")
    if meta_name and meta_name != f"{version}.{group}":
        e.invalid("metadata.name", meta_name, 'must be `spec.version+"."+spec.group`')
    if not isinstance(group, str) or not isinstance(version, str):
        e.add("spec", "group and version must be strings")
        return
    if not version:
        e.required("spec.version")
    elif not is_dns_label(version):
        e.invalid("spec.version", version, "a lowercase RFC 1123 label must consist of lower "
                  "case alphanumeric characters or '-'")  # fmt: skip
    if not group and version != "v1":
        e.invalid(
            "spec.group", group, "only v1 may have an empty group and it better be legacy kube"
        )
    for field, limit in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
        value = spec.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 < value <= limit:
            e.invalid(f"spec.{field}", value, f"must be positive and less than {limit}")
        elif value is None:
            e.invalid(f"spec.{field}", 0, f"must be positive and less than {limit}")
        else:
            integer(e, f"spec.{field}", value)
    service: Any = spec.get("service")
    ca_bundle = spec.get("caBundle")
    insecure = spec.get("insecureSkipTLSVerify")
    if insecure is not None and not isinstance(insecure, bool):
        e.invalid("spec.insecureSkipTLSVerify", insecure, "must be a boolean")
    if ca_bundle is not None:
        try:
            base64.b64decode(str(ca_bundle), validate=True)
        except (binascii.Error, ValueError):
            e.invalid("spec.caBundle", "<bytes>", "must be base64-encoded")
    if service is None:
        if ca_bundle:
            e.invalid("spec.caBundle", "<bytes>", "may not be set if service is nil")
        if insecure:
            e.invalid("spec.insecureSkipTLSVerify", insecure, "may not be true if service is nil")
        return
    if not mapping(e, "spec.service", service):
        return
    for field in ("namespace", "name"):
        if not service.get(field):
            e.required(f"spec.service.{field}")
    if service.get("port") is not None:
        integer(e, "spec.service.port", service.get("port"), 1, 65535)
    if insecure and ca_bundle:
        e.invalid("spec.insecureSkipTLSVerify", insecure, "may not be true if caBundle is present")


def available_condition(obj: Object) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Available":
            return cond
    return None


def row(obj: Object, now: float, wide: bool) -> list[str]:
    service = service_of(obj)
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    available = "Unknown"
    cond = available_condition(obj)
    if cond is not None:
        status = str(cond.get("status") or "Unknown")
        reason = str(cond.get("reason") or "")
        available = status if status == "True" or not reason else f"{status} ({reason})"
    return [name(obj), where, available, age(obj, now)]


PRINTER = Printer(
    (
        Column("NAME"),
        Column("SERVICE", description="The reference to the service that hosts this API endpoint."),
        Column("AVAILABLE", description="Whether this service is available."),
        Column("AGE"),
    ),
    row,
)

DEFINITION = KindDef(
    KindInfo(
        "APIService",
        f"{GROUP}/v1",
        "apiservices",
        "apiservice",
        (),
        namespaced=False,
        categories=("api-extensions",),
    ),
    types={
        "APIService": kind(
            _PACKAGE,
            "APIService represents a server for a particular GroupVersion.",
            (GROUP, "v1", "APIService"),
            spec=(
                "APIServiceSpec",
                "Spec contains information for locating and communicating with a server.",
            ),
            status=("APIServiceStatus", "Status contains derived information about an API server."),
        ),
        **declare(
            _PACKAGE,
            """
            APIServiceSpec: APIServiceSpec contains information for locating and communicating with
                            a server.
                service                APIServiceReference  The service this APIService is served
                                                            by; none: local.
                group                  string               The API group name this server hosts.
                version                string               The API version this server hosts.
                insecureSkipTLSVerify  boolean              Do not verify the server's certificate.
                caBundle               string               PEM CA bundle that validates the
                                                            server's certificate (base64).
                groupPriorityMinimum!  integer              The priority this group should have at
                                                            least.
                versionPriority!       integer              The ordering of this version within its
                                                            group.
            """,
        ),
        "APIServiceReference": replace(
            struct(
                _PACKAGE,
                "ServiceReference holds a reference to Service.legacy.k8s.io.",
                namespace=("string", "The namespace of the service."),
                name=("string", "The name of the service."),
                port=("integer", "The port on the service that hosts the server (443)."),
            ),
            name="ServiceReference",  # published as ...apiregistration.v1.ServiceReference
        ),
        **declare(
            _PACKAGE,
            """
            APIServiceStatus: APIServiceStatus contains derived information about an API server.
                conditions  []APIServiceCondition  Current service state of apiService.
            APIServiceCondition: APIServiceCondition describes the state of an APIService at a
                                 particular point.
                type!               string  Type is the type of the condition (Available).
                status!             string  True, False or Unknown.
                lastTransitionTime  string  The last time the condition changed.
                reason              string  Unique, one-word, CamelCase reason for the last
                                            transition.
                message             string  Human-readable message about the last transition.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    name_rule="path-segment",
    printer=PRINTER,
    patch_meta=facts(),
)
