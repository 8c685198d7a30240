"""Ingress (networking.k8s.io/v1), served by the built-in ingress controller
(controlplane/controllers/ingress.py and the agents' HAProxy, agent/ingress/)
or by another controller of its class.

- Admission, as Kubernetes' DefaultIngressClass plugin: an Ingress created
  without `spec.ingressClassName` (and without the deprecated
  `kubernetes.io/ingress.class` annotation) gets the default IngressClass,
  the one annotated `ingressclass.kubernetes.io/is-default-class: "true"`
  (of several, the newest, as Kubernetes picks since 1.28); without one it
  stays class-less. Updates are never changed.
- Validation (Kubernetes' pkg/apis/networking/validation), each problem
  naming the field: hosts (DNS names, a wildcard only as the first label,
  no IP address), paths (`pathType` Exact, Prefix or ImplementationSpecific,
  required; paths absolute, free of `//`, `/./`, `/../` and of characters
  HAProxy's parser could misread), backends (a Service with a port number
  or name, or a resource; never both), TLS entries, a default backend or
  rules.
- Columns: NAME CLASS HOSTS ADDRESS PORTS AGE, as Kubernetes prints them.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from controlplane.api.checks import Errors, objects
from controlplane.api.display import NONE, age, name, spec, status
from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.kinds.definition import AdmissionApi, Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare, struct
from controlplane.client.ingressclasses import (
    DEFAULT_CLASS_ANNOTATION,
    LEGACY_CLASS_ANNOTATION,
    default_class,
)

Object = dict[str, Any]

DEFAULT_ANNOTATION = DEFAULT_CLASS_ANNOTATION
LEGACY_ANNOTATION = LEGACY_CLASS_ANNOTATION
PATH_TYPES = ("Exact", "Prefix", "ImplementationSpecific")
_PATH_CHARS = re.compile(r"^/[A-Za-z0-9\-._~/%:@+=,;!*$]*$")
_PACKAGE = "io.k8s.api.networking.v1"
_ADDRESS_WIDTH = 16  # Kubernetes' loadBalancerWidth: longer addresses are cut unless wide


# ---- admission ---------------------------------------------------------------------


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    ingress_spec = obj.setdefault("spec", {})
    if not isinstance(ingress_spec, dict):
        return  # validation refuses it
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if ingress_spec.get("ingressClassName") or LEGACY_ANNOTATION in annotations:
        return
    chosen = default_class(api.cached_objects("IngressClass"))
    if chosen:
        ingress_spec["ingressClassName"] = chosen


# ---- validation --------------------------------------------------------------------


def _host(e: Errors, path: str, host: Any) -> None:
    text = str(host)
    bare = text[2:] if text.startswith("*.") else text
    if "*" in bare or not is_dns_subdomain(bare) or bare != bare.lower():
        e.add(
            path,
            f'Invalid value: "{text}": a lowercase RFC 1123 subdomain, optionally'
            " with a wildcard as its first label (*.example.com)",
        )
        return
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return
    e.add(path, f'Invalid value: "{text}": must be a DNS name, not an IP address')


def _backend(e: Errors, path: str, backend: Any) -> None:
    if not isinstance(backend, dict):
        e.add(path, "Required value")
        return
    svc, resource = backend.get("service"), backend.get("resource")
    if svc is not None and resource is not None:
        e.add(path, "Invalid value: cannot set both resource and service backends")
    if svc is None and resource is None:
        e.add(path, "Invalid value: resource or service backend is required")
    if svc is None:
        return
    if not isinstance(svc, dict) or not is_dns_label(str(svc.get("name") or "")):
        e.add(f"{path}.service.name", "Invalid value: must be a DNS-1035 label")
        return
    port = svc.get("port")
    if not isinstance(port, dict) or (port.get("number") is None) == (not port.get("name")):
        e.add(
            f"{path}.service.port", "Invalid value: exactly one of port name or number is required"
        )
        return
    number = port.get("number")
    if number is not None and (
        isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535
    ):
        e.add(
            f"{path}.service.port.number",
            f"Invalid value: {number}: must be between 1 and 65535, inclusive",
        )


def _path(e: Errors, path: str, p: Any) -> None:
    if not isinstance(p, dict):
        e.add(path, "must be an object")
        return
    ptype, value = p.get("pathType"), p.get("path")
    if ptype is None:
        e.add(f"{path}.pathType", "Required value: pathType must be specified")
    elif ptype not in PATH_TYPES:
        e.add(
            f"{path}.pathType",
            f'Unsupported value: "{ptype}": supported values: '
            '"Exact", "ImplementationSpecific", "Prefix"',
        )
    if ptype in ("Exact", "Prefix") or value is not None:
        text = str(value or "")
        if not text.startswith("/"):
            e.add(f"{path}.path", f'Invalid value: "{text}": must be an absolute path')
        elif text != "/" and any(bad in text + "/" for bad in ("//", "/./", "/../")):
            e.add(
                f"{path}.path", f"Invalid value: \"{text}\": must not contain '//', '/./' or '/../'"
            )
        elif not _PATH_CHARS.match(text):
            e.add(
                f"{path}.path",
                f'Invalid value: "{text}": must contain only letters, digits and -._~/%:@+=,;!*$',
            )
    _backend(e, f"{path}.backend", p.get("backend"))


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    ingress_spec: Any = obj.get("spec")
    if not isinstance(ingress_spec, dict):
        e.add("spec", "Required value")
        return
    cls = ingress_spec.get("ingressClassName")
    if cls is not None and not is_dns_subdomain(str(cls)):
        e.add("spec.ingressClassName", f'Invalid value: "{cls}": must be a DNS subdomain')
    rules = ingress_spec.get("rules") or []
    if ingress_spec.get("defaultBackend") is not None:
        _backend(e, "spec.defaultBackend", ingress_spec["defaultBackend"])
    elif not rules:
        e.add("spec", "Invalid value: either `defaultBackend` or `rules` must be specified")
    for here, rule in objects(e, "spec.rules", rules):
        if rule.get("host"):
            _host(e, f"{here}.host", rule["host"])
        http = rule.get("http")
        if http is None:
            continue
        paths = http.get("paths") if isinstance(http, dict) else None
        if not paths:
            e.add(f"{here}.http.paths", "Required value")
        for j, p in enumerate(paths or []):
            _path(e, f"{here}.http.paths[{j}]", p)
    for i, tls in enumerate(ingress_spec.get("tls") or []):
        if not isinstance(tls, dict):
            e.add(f"spec.tls[{i}]", "must be an object")
            continue
        for j, host in enumerate(tls.get("hosts") or []):
            _host(e, f"spec.tls[{i}].hosts[{j}]", host)
        secret = tls.get("secretName")
        if secret is not None and not is_dns_subdomain(str(secret)):
            e.add(
                f"spec.tls[{i}].secretName", f'Invalid value: "{secret}": must be a DNS subdomain'
            )


# ---- printing ----------------------------------------------------------------------


def hosts(rules: Any) -> str:
    """Kubernetes' formatHosts: the first three hosts, `*` when none."""
    rules = rules if isinstance(rules, list) else []
    shown: list[str] = []
    more = False
    for rule in rules:
        if len(shown) == 3:
            more = True
            break
        if isinstance(rule, dict) and rule.get("host"):
            shown.append(str(rule["host"]))
    if not shown:
        return "*"
    return ",".join(shown) + (f" + {len(rules) - 3} more..." if more else "")


def addresses(obj: Object, wide: bool) -> str:
    lb = status(obj).get("loadBalancer") or {}
    found = {
        str(i.get("ip") or i.get("hostname"))
        for i in lb.get("ingress") or []
        if isinstance(i, dict) and (i.get("ip") or i.get("hostname"))
    }
    text = ",".join(sorted(found))
    if not wide and len(text) > _ADDRESS_WIDTH:
        text = text[: _ADDRESS_WIDTH - 3] + "..."
    return text


def row(obj: Object, now: float, wide: bool) -> list[str]:
    sp = spec(obj)
    return [
        name(obj),
        str(sp.get("ingressClassName") or NONE),
        hosts(sp.get("rules")),
        addresses(obj, wide),
        "80, 443" if sp.get("tls") else "80",
        age(obj, now),
    ]


PRINTER = Printer(
    (
        Column("NAME"),
        Column(
            "CLASS",
            description="The name of the IngressClass resource that should be used "
            "for additional configuration",
        ),
        Column(
            "HOSTS",
            description="Hosts that incoming requests are matched against before the ingress rule",
        ),
        Column(
            "ADDRESS",
            description="Address is a list containing ingress points for the load-balancer",
        ),
        Column("PORTS", description="Ports of TLS configurations that open"),
        Column("AGE"),
    ),
    row,
)

_BACKEND = "The Service (or resource) requests go to."

DEFINITION = KindDef(
    KindInfo("Ingress", "networking.k8s.io/v1", short_names=("ing",)),
    types={
        **declare(
            _PACKAGE,
            """
            Ingress [networking.k8s.io/v1 Ingress]: Ingress is a collection of rules that allow
                                                    inbound connections to reach the endpoints
                                                    defined by a backend.
                spec    IngressSpec
                status  IngressStatus
            IngressSpec: IngressSpec describes the Ingress the user wishes to exist.
                ingressClassName  string          The name of the IngressClass cluster resource.
                defaultBackend    IngressBackend  The backend of requests no rule matches.
                tls               []IngressTLS    TLS configuration: hosts and the Secrets of their
                                                  certificates.
                rules             []IngressRule   Host rules; none: everything goes to the default
                                                  backend.
            IngressBackend: IngressBackend describes all endpoints for a given service and port.
                service   IngressServiceBackend  A Service as a backend.
                resource  object                 Another object of the Ingress's namespace as a
                                                 backend.
            IngressServiceBackend: IngressServiceBackend references a Kubernetes Service as a
                                   Backend.
                name!  string              The referenced service, in the Ingress's namespace.
                port   ServiceBackendPort  The port of the referenced service.
            ServiceBackendPort: ServiceBackendPort is the service port being referenced.
                name    string   The name of the port on the Service.
                number  integer  The numerical port number on the Service.
            IngressTLS: IngressTLS describes the transport layer security associated with an
                        ingress.
                hosts       []string  Hosts included in the TLS certificate.
                secretName  string    The kubernetes.io/tls Secret used to terminate TLS.
            IngressRule: IngressRule represents the rules mapping the paths under a specified host
                         to the related backend services.
                host  string                The fully qualified domain name of a network host (or
                                            *.domain).
                http  HTTPIngressRuleValue  HTTP paths and their backends.
            HTTPIngressRuleValue: HTTPIngressRuleValue is a list of http selectors pointing to
                                  backends.
                paths!  []HTTPIngressPath  A collection of paths that map requests to backends.
            """,
        ),
        "HTTPIngressPath": struct(
            _PACKAGE,
            "HTTPIngressPath associates a path with a backend.",
            ("pathType", "backend"),
            path=("string", "Matched against the path of an incoming request."),
            pathType=(
                "string",
                "How the path is matched: Exact, Prefix or ImplementationSpecific.",
            ),
            backend=("IngressBackend", _BACKEND),
        ),
        **declare(
            _PACKAGE,
            """
            IngressStatus: IngressStatus describe the current state of the Ingress.
                loadBalancer  IngressLoadBalancerStatus  The addresses the Ingress is served on.
            IngressLoadBalancerStatus: IngressLoadBalancerStatus represents the status of a
                                       load-balancer.
                ingress  []IngressLoadBalancerIngress  The ingress points of the load-balancer.
            IngressLoadBalancerIngress: IngressLoadBalancerIngress represents the status of a
                                        load-balancer ingress point.
                ip        string               An IP-based ingress point.
                hostname  string               A DNS-based ingress point.
                ports     []IngressPortStatus  The ports of this ingress point, when not 80/443.
            IngressPortStatus: IngressPortStatus represents the error condition of a service port.
                port!      integer  The port number of the ingress port.
                protocol!  string   TCP, UDP or SCTP.
                error      string   A problem with the service port, CamelCase.
            """,
        ),
    },
    validate=validate,
    admit=admit,
    printer=PRINTER,
    patch_meta=facts(),
)
