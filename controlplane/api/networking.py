"""Validation of the networking.k8s.io/v1 kinds: NetworkPolicy, Ingress, IngressClass.

Kubernetes' rules (pkg/apis/networking/validation), each problem as
`path: problem` naming the field: a policy's selectors, `ipBlock.cidr` and
`except` (valid CIDRs, each except strictly inside the cidr), ports
(protocol TCP/UDP/SCTP, port a number 1-65535 or an IANA service name,
`endPort` only with a numbered port and not below it); an Ingress's hosts
(DNS names, a wildcard only as the first label), paths (`pathType` Exact,
Prefix or ImplementationSpecific, required; Exact and Prefix paths absolute
and free of `//`, `/./`, `/../` and the characters HAProxy's parser could
misread), backends (a Service with a port number or name, or a resource;
never both) and TLS entries; an IngressClass's controller (a domain-prefixed
path). Pure; `problems(kind, obj)` is the entry point.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain

PROTOCOLS = ("TCP", "UDP", "SCTP")
PATH_TYPES = ("Exact", "Prefix", "ImplementationSpecific")
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_PATH_CHARS = re.compile(r"^/[A-Za-z0-9\-._~/%:@+=,;!*$]*$")
_SERVICE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")

Problems = list[str]


def _selector(out: Problems, path: str, sel: Any) -> None:
    if sel is None:
        return
    if not isinstance(sel, Mapping):
        out.append(f"{path}: must be a label selector")
        return
    labels = sel.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        out.append(f"{path}.matchLabels: must be a map of strings")
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        here = f"{path}.matchExpressions[{i}]"
        if not isinstance(expr, Mapping):
            out.append(f"{here}: must be an object")
            continue
        op = expr.get("operator")
        if op not in SELECTOR_OPS:
            out.append(
                f'{here}.operator: Unsupported value: "{op}": supported values: "In", "NotIn", "Exists", "DoesNotExist"'
            )
        values = expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            out.append(
                f"{here}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
            )
        if op in ("Exists", "DoesNotExist") and values:
            out.append(
                f"{here}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )


def _cidr(
    out: Problems, path: str, value: Any
) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(str(value), strict=False) if isinstance(value, str) else None
    except ValueError:
        pass
    out.append(
        f'{path}: Invalid value: "{value}": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'
    )
    return None


def _policy_port(out: Problems, path: str, port: Any) -> None:
    if not isinstance(port, Mapping):
        out.append(f"{path}: must be an object")
        return
    proto = port.get("protocol", "TCP")
    if proto not in PROTOCOLS:
        out.append(
            f'{path}.protocol: Unsupported value: "{proto}": supported values: "SCTP", "TCP", "UDP"'
        )
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, bool) or not isinstance(number, int | str | None):
        out.append(f"{path}.port: must be a port number or name")
    elif isinstance(number, int) and not 1 <= number <= 65535:
        out.append(f"{path}.port: Invalid value: {number}: must be between 1 and 65535, inclusive")
    elif isinstance(number, str) and not (_SERVICE_NAME.match(number) and len(number) <= 15):
        out.append(
            f'{path}.port: Invalid value: "{number}": must be a valid port name (IANA_SVC_NAME)'
        )
    if end is not None:
        if not isinstance(number, int):
            out.append(
                f"{path}.endPort: Invalid value: {end}: may not be specified when `port` is not a number"
            )
        elif not isinstance(end, int) or end < number:
            out.append(
                f"{path}.endPort: Invalid value: {end}: must be greater than or equal to `port`"
            )


def _peer(out: Problems, path: str, peer: Any) -> None:
    if not isinstance(peer, Mapping):
        out.append(f"{path}: must be an object")
        return
    block = peer.get("ipBlock")
    present = [
        k for k in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(k) is not None
    ]
    if not present:
        out.append(f"{path}: Required value: must specify a peer")
    if block is not None and len(present) > 1:
        out.append(f"{path}: Forbidden: may not specify more than 1 peer type when ipBlock is set")
    _selector(out, f"{path}.podSelector", peer.get("podSelector"))
    _selector(out, f"{path}.namespaceSelector", peer.get("namespaceSelector"))
    if block is None:
        return
    if not isinstance(block, Mapping):
        out.append(f"{path}.ipBlock: must be an object")
        return
    if not block.get("cidr"):
        out.append(f"{path}.ipBlock.cidr: Required value")
        return
    cidr = _cidr(out, f"{path}.ipBlock.cidr", block.get("cidr"))
    for i, exc in enumerate(block.get("except") or []):
        net = _cidr(out, f"{path}.ipBlock.except[{i}]", exc)
        if (
            cidr is not None
            and net is not None
            and (
                net.version != cidr.version or not net.subnet_of(cidr) or net == cidr  # type: ignore[arg-type]
            )
        ):
            out.append(
                f'{path}.ipBlock.except[{i}]: Invalid value: "{exc}": must be a strict subset of `cidr`'
            )


def network_policy(out: Problems, obj: Mapping[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        out.append("spec: Required value")
        return
    _selector(out, "spec.podSelector", spec.get("podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            here = f"spec.{direction}[{i}]"
            if not isinstance(rule, Mapping):
                out.append(f"{here}: must be an object")
                continue
            for j, port in enumerate(rule.get("ports") or []):
                _policy_port(out, f"{here}.ports[{j}]", port)
            for j, peer in enumerate(rule.get(peers) or []):
                _peer(out, f"{here}.{peers}[{j}]", peer)
    for i, t in enumerate(spec.get("policyTypes") or []):
        if t not in ("Ingress", "Egress"):
            out.append(
                f'spec.policyTypes[{i}]: Unsupported value: "{t}": supported values: "Egress", "Ingress"'
            )


def _host(out: Problems, path: str, host: Any) -> None:
    text = str(host)
    bare = text[2:] if text.startswith("*.") else text
    if "*" in bare or not is_dns_subdomain(bare) or bare != bare.lower():
        out.append(f'{path}: Invalid value: "{text}": a lowercase RFC 1123 subdomain, optionally'
                   " with a wildcard as its first label (*.example.com)")  # fmt: skip
    else:
        try:
            ipaddress.ip_address(text)
            out.append(f'{path}: Invalid value: "{text}": must be a DNS name, not an IP address')
        except ValueError:
            pass


def _backend(out: Problems, path: str, backend: Any) -> None:
    if not isinstance(backend, Mapping):
        out.append(f"{path}: Required value")
        return
    svc, resource = backend.get("service"), backend.get("resource")
    if svc is not None and resource is not None:
        out.append(f"{path}: Invalid value: cannot set both resource and service backends")
    if svc is None and resource is None:
        out.append(f"{path}: Invalid value: resource or service backend is required")
    if svc is None:
        return
    if not isinstance(svc, Mapping) or not is_dns_label(str(svc.get("name") or "")):
        out.append(f"{path}.service.name: Invalid value: must be a DNS-1035 label")
        return
    port = svc.get("port")
    if not isinstance(port, Mapping) or (port.get("number") is None) == (not port.get("name")):
        out.append(
            f"{path}.service.port: Invalid value: exactly one of port name or number is required"
        )
    elif port.get("number") is not None and not (
        isinstance(port["number"], int) and 1 <= port["number"] <= 65535
    ):
        out.append(
            f"{path}.service.port.number: Invalid value: {port['number']}: must be between 1 and 65535, inclusive"
        )


def _ingress_path(out: Problems, path: str, p: Any) -> None:
    if not isinstance(p, Mapping):
        out.append(f"{path}: must be an object")
        return
    ptype, value = p.get("pathType"), p.get("path")
    if ptype is None:
        out.append(f"{path}.pathType: Required value: pathType must be specified")
    elif ptype not in PATH_TYPES:
        out.append(
            f'{path}.pathType: Unsupported value: "{ptype}": supported values: "Exact", "ImplementationSpecific", "Prefix"'
        )
    if ptype in ("Exact", "Prefix") or value is not None:
        text = str(value or "")
        if not text.startswith("/"):
            out.append(f'{path}.path: Invalid value: "{text}": must be an absolute path')
        elif any(bad in text + "/" for bad in ("//", "/./", "/../")) and text != "/":
            out.append(
                f"{path}.path: Invalid value: \"{text}\": must not contain '//', '/./' or '/../'"
            )
        elif not _PATH_CHARS.match(text):
            out.append(
                f'{path}.path: Invalid value: "{text}": must contain only letters, digits and -._~/%:@+=,;!*$'
            )
    _backend(out, f"{path}.backend", p.get("backend"))


def ingress(out: Problems, obj: Mapping[str, Any]) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        out.append("spec: Required value")
        return
    cls = spec.get("ingressClassName")
    if cls is not None and not is_dns_subdomain(str(cls)):
        out.append(f'spec.ingressClassName: Invalid value: "{cls}": must be a DNS subdomain')
    rules = spec.get("rules") or []
    if spec.get("defaultBackend") is not None:
        _backend(out, "spec.defaultBackend", spec["defaultBackend"])
    elif not rules:
        out.append("spec: Invalid value: either `defaultBackend` or `rules` must be specified")
    for i, rule in enumerate(rules):
        here = f"spec.rules[{i}]"
        if not isinstance(rule, Mapping):
            out.append(f"{here}: must be an object")
            continue
        if rule.get("host"):
            _host(out, f"{here}.host", rule["host"])
        http = rule.get("http")
        if http is None:
            continue
        paths = http.get("paths") if isinstance(http, Mapping) else None
        if not paths:
            out.append(f"{here}.http.paths: Required value")
        for j, p in enumerate(paths or []):
            _ingress_path(out, f"{here}.http.paths[{j}]", p)
    for i, tls in enumerate(spec.get("tls") or []):
        if not isinstance(tls, Mapping):
            out.append(f"spec.tls[{i}]: must be an object")
            continue
        for j, host in enumerate(tls.get("hosts") or []):
            _host(out, f"spec.tls[{i}].hosts[{j}]", host)
        name = tls.get("secretName")
        if name is not None and not is_dns_subdomain(str(name)):
            out.append(
                f'spec.tls[{i}].secretName: Invalid value: "{name}": must be a DNS subdomain'
            )


def ingress_class(out: Problems, obj: Mapping[str, Any]) -> None:
    spec = obj.get("spec")
    controller = spec.get("controller") if isinstance(spec, Mapping) else None
    if not controller:
        out.append("spec.controller: Required value")
        return
    text = str(controller)
    domain, slash, rest = text.partition("/")
    if not slash or not rest or not is_dns_subdomain(domain) or len(text) > 250:
        out.append(
            f'spec.controller: Invalid value: "{text}": must be a domain-prefixed path (such as "acme.io/foo")'
        )


VALIDATORS: dict[str, Callable[[Problems, Mapping[str, Any]], None]] = {
    "NetworkPolicy": network_policy,
    "Ingress": ingress,
    "IngressClass": ingress_class,
}


def problems(kind: str, obj: Mapping[str, Any]) -> list[str]:
    out: Problems = []
    check = VALIDATORS.get(kind)
    if check is not None:
        check(out, obj)
    return out
