"""What the built-in ingress controller serves: Ingresses as routes and backends.

Pure functions from the Kubernetes-shaped dicts (as informers cache them) to
a `Config`, with `networking.k8s.io/v1` semantics:

- an Ingress is ours when its class is one whose `spec.controller` is ours:
  `spec.ingressClassName`, else the deprecated `kubernetes.io/ingress.class`
  annotation, else (a class-less Ingress made before the default class
  existed; the API server gives later ones the default class at creation)
  the default IngressClass (controlplane/client/ingressclasses.py);
- a rule's `host` is exact or a wildcard (`*.example.com`: one label); no
  host matches every host. Paths: `Exact` (the whole path), `Prefix`
  (element-wise: `/foo` matches `/foo` and `/foo/bar`, never `/foobar`) and
  `ImplementationSpecific` (taken as Prefix, as Traefik and ingress-nginx
  without regex annotations do);
- precedence as Kubernetes has it: exact hosts before wildcards before the
  catch-all host; then longer paths first, Exact before Prefix at equal
  length; for the same host, path and type, the oldest Ingress wins;
- `spec.defaultBackend` (the oldest Ingress's) answers what no rule matches;
  without one, 404;
- a backend is a Service port (by number or name), resolved to the ready
  endpoints of the matching port in the Service's EndpointSlices (merged,
  matched by port name and protocol, one server per address); a missing Service or port has no
  servers (503) and a `problems` entry;
- TLS: each `spec.tls` entry's hosts are served with its `kubernetes.io/tls`
  Secret's certificate (SNI); a missing or malformed Secret leaves them on
  the default certificate, with a `problems` entry.

Nothing here reads the API, the disk or the network.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controlplane.client import endpointslices, ingressclasses

CONTROLLER = "skiff.io/ingress-controller"
CLASS_NAME = "skiff"


@dataclass(frozen=True)
class Backend:
    name: str  # stable id: be_<hash of ns/service:port>
    service: str  # ns/name:port, for people
    servers: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Route:
    host: str  # "" every host; "*.x" a wildcard
    path: str
    path_type: str  # Exact or Prefix
    backend: str  # Backend.name
    source: str  # ns/name of the Ingress


@dataclass(frozen=True)
class Certificate:
    name: str  # crt_<hash>
    secret: str  # ns/name
    pem: bytes  # certificate chain then key, as HAProxy reads it
    hosts: tuple[str, ...]


@dataclass
class Config:
    routes: list[Route] = field(default_factory=list)
    backends: dict[str, Backend] = field(default_factory=dict)
    certificates: list[Certificate] = field(default_factory=list)
    default_backend: str = ""  # "" -> 404
    problems: list[tuple[str, str, str]] = field(default_factory=list)  # (ingress, reason, msg)
    ingresses: list[str] = field(default_factory=list)  # ns/name of those served


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _hash(text: str) -> str:
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:12].lower()


def our_classes(classes: Iterable[Mapping[str, Any]], controller: str = CONTROLLER) -> set[str]:
    return ingressclasses.classes_of(controller, classes)


def served(
    ingresses: Iterable[Mapping[str, Any]],
    classes: Iterable[Mapping[str, Any]],
    controller: str = CONTROLLER,
) -> list[Mapping[str, Any]]:
    """The Ingresses of our classes (none being deleted): what a node serves."""
    return ingressclasses.served_by(controller, ingresses, classes)


def _age(obj: Mapping[str, Any]) -> tuple[str, str]:
    return (str(_meta(obj).get("creationTimestamp") or ""), _key(obj))


def _host_rank(host: str) -> int:
    return 2 if not host else 1 if host.startswith("*.") else 0


def route_order(r: Route) -> tuple[int, str, int, int]:
    """Kubernetes' precedence as a sort key (see the module docstring)."""
    return (_host_rank(r.host), r.host, -len(r.path), 0 if r.path_type == "Exact" else 1)


def _resolve(
    namespace: str,
    ref: Mapping[str, Any],
    services: Mapping[str, Mapping[str, Any]],
    slices: Mapping[str, Sequence[Mapping[str, Any]]],
) -> tuple[str, str, tuple[tuple[str, int], ...], str]:
    """(backend name, label, servers, problem) for a backend's service ref."""
    svc_ref = ref.get("service") or {}
    name = str(svc_ref.get("name") or "")
    port_ref = svc_ref.get("port") or {}
    port_text = str(port_ref.get("number") or port_ref.get("name") or "")
    label = f"{namespace}/{name}:{port_text}"
    backend = f"be_{_hash(label)}"
    svc = services.get(f"{namespace}/{name}")
    if svc is None:
        return backend, label, (), f'service "{namespace}/{name}" does not exist'
    chosen: Mapping[str, Any] | None = None
    for p in (svc.get("spec") or {}).get("ports") or []:
        by_number = port_ref.get("number") is not None and p.get("port") == port_ref.get("number")
        if by_number or (port_ref.get("name") and p.get("name") == port_ref.get("name")):
            chosen = p
    if chosen is None:
        return backend, label, (), f'service "{namespace}/{name}" has no port {port_text}'
    port_name, proto = str(chosen.get("name") or ""), str(chosen.get("protocol") or "TCP")
    servers = {
        (e.ip, e.port)
        for e in endpointslices.endpoints(slices.get(f"{namespace}/{name}") or (), port_name, proto)
        if e.ready
    }
    return backend, label, tuple(sorted(servers)), ""


def build(
    ingresses: Iterable[Mapping[str, Any]],
    classes: Iterable[Mapping[str, Any]],
    services: Mapping[str, Mapping[str, Any]],
    slices: Mapping[str, Sequence[Mapping[str, Any]]],
    secret: Callable[[str, str], Mapping[str, Any] | None],
    controller: str = CONTROLLER,
) -> Config:
    """Everything to serve; `services` maps ns/name to Services, `slices`
    ns/name to the Service's EndpointSlices (endpointslices.group_by_service),
    `secret(ns, name)` fetches a Secret (None when missing)."""
    cfg = Config()
    seen: set[tuple[str, str, str]] = set()
    hosts_with_cert: set[str] = set()

    def backend_of(ing_key: str, namespace: str, ref: Mapping[str, Any]) -> str:
        name, label, servers, problem = _resolve(namespace, ref, services, slices)
        cfg.backends.setdefault(name, Backend(name, label, servers))
        if problem:
            cfg.problems.append((ing_key, "ServiceNotFound", problem))
        return name

    for ing in sorted(served(ingresses, classes, controller), key=_age):
        spec = ing.get("spec") or {}
        key = _key(ing)
        ns = str(_meta(ing).get("namespace") or "default")
        cfg.ingresses.append(key)
        if spec.get("defaultBackend") and not cfg.default_backend:
            cfg.default_backend = backend_of(key, ns, spec["defaultBackend"])
        for rule in spec.get("rules") or []:
            host = str(rule.get("host") or "").lower()
            for p in (rule.get("http") or {}).get("paths") or []:
                path_type = "Exact" if p.get("pathType") == "Exact" else "Prefix"
                path = str(p.get("path") or "/")
                if path_type == "Prefix" and path != "/":
                    path = path.rstrip("/") or "/"
                if (host, path, path_type) in seen:
                    continue  # an older Ingress has it
                seen.add((host, path, path_type))
                cfg.routes.append(
                    Route(host, path, path_type, backend_of(key, ns, p.get("backend") or {}), key)
                )
        for tls in spec.get("tls") or []:
            name = str(tls.get("secretName") or "")
            hosts = tuple(
                sorted({str(h).lower() for h in tls.get("hosts") or []} - hosts_with_cert)
            )
            if not name or not hosts:
                continue
            pem, problem = _tls_pem(secret(ns, name), f"{ns}/{name}")
            if problem:
                cfg.problems.append(
                    (key, "SecretNotFound", f"{problem}; using the default certificate")
                )
                continue
            hosts_with_cert.update(hosts)
            cfg.certificates.append(
                Certificate(f"crt_{_hash(ns + '/' + name)}", f"{ns}/{name}", pem, hosts)
            )
    cfg.routes.sort(key=route_order)
    return cfg


def _tls_pem(obj: Mapping[str, Any] | None, label: str) -> tuple[bytes, str]:
    if obj is None:
        return b"", f'secret "{label}" does not exist'
    data = obj.get("data") or {}
    try:
        crt = base64.b64decode(data.get("tls.crt") or "", validate=True)
        key = base64.b64decode(data.get("tls.key") or "", validate=True)
    except (ValueError, TypeError):
        return b"", f'secret "{label}" has undecodable tls.crt or tls.key'
    # loaded with the first Ingress with TLS, never at rest
    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        x509.load_pem_x509_certificate(crt)
        serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return b"", f'secret "{label}" has no PEM certificate and key in tls.crt and tls.key'
    return crt.rstrip(b"\n") + b"\n" + key.rstrip(b"\n") + b"\n", ""
