"""EndpointSlice (discovery.k8s.io/v1): a part of the endpoints behind a
Service, written by the EndpointSlice controller
(controlplane/controllers/endpointslice.py) for Services with a selector and
by the mirroring controller (endpointslicemirroring.py) for custom Endpoints.

As Kubernetes' ValidateEndpointSlice: addressType required, one of IPv4,
IPv6, FQDN, immutable; at most 1000 endpoints of 1 to 100 addresses each,
valid for the address type (an IP address neither unspecified, loopback nor
link-local); nodeName a valid node name, hostname a DNS label, at most 16
deprecatedTopology labels (the zone goes in `zone`), hints at most 8 zones
and 8 nodes; ports at most 20000 with unique names (DNS labels or empty),
protocol TCP, UDP or SCTP, appProtocol a qualified name. Defaults: a port's
name "" and protocol TCP. Columns: NAME ADDRESSTYPE PORTS ENDPOINTS AGE,
three ports or addresses shown, then "+ N more...", `<unset>` for none.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from controlplane.api.checks import (
    DNS_LABEL_MESSAGE,
    QUALIFIED_NAME_MESSAGE,
    Errors,
    each_object,
    integer,
    is_qualified_name,
    label_map,
    mapping,
)
from controlplane.api.display import age, name
from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import listed
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import Type, declare, struct

Object = dict[str, Any]

DISCOVERY = "io.k8s.api.discovery.v1"
ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000
MAX_TOPOLOGY_LABELS = 16
MAX_HINTS = 8
ZONE_LABEL = "topology.kubernetes.io/zone"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"


def _too_many(e: Errors, path: str, count: int, limit: int) -> None:
    e.add(path, f"Too many: {count}: must have at most {limit} items")


def endpoint_ip_problem(address: str) -> str:
    """Why an IP address cannot be an endpoint (ValidateEndpointIP), or ""."""
    ip = ipaddress.ip_address(address)
    if ip.is_unspecified:
        return f"may not be unspecified ({address})"
    if ip.is_loopback:
        return "may not be in the loopback range (127.0.0.0/8, ::1/128)"
    if ip.is_link_local:
        return "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        return "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
    return ""


def address_problem(address: Any, address_type: Any) -> str:
    """Why `address` is not a valid address of `address_type`, or "" (an
    unknown type's addresses are not checked, as Kubernetes does)."""
    if address_type in ("IPv4", "IPv6"):
        family = 4 if address_type == "IPv4" else 6
        try:
            ip = ipaddress.ip_address(str(address)) if isinstance(address, str) else None
        except ValueError:
            ip = None
        if ip is None or ip.version != family or (str(address) != str(ip) and family == 4):
            return f"must be a valid {address_type} address"
        return endpoint_ip_problem(str(address))
    if address_type == "FQDN":
        text = str(address)
        if not is_dns_subdomain(text) or "." not in text:
            return "should be a domain with at least two segments separated by dots"
    return ""


def _validate_endpoints(e: Errors, endpoints: list[Any], address_type: Any) -> None:
    if len(endpoints) > MAX_ENDPOINTS:
        _too_many(e, "endpoints", len(endpoints), MAX_ENDPOINTS)
        return
    for path, endpoint in each_object(e, "endpoints", endpoints, required=True):
        addresses = endpoint.get("addresses")
        if not isinstance(addresses, list) or not addresses:
            e.required(f"{path}.addresses", "must contain at least 1 address")
            addresses = []
        elif len(addresses) > MAX_ADDRESSES:
            _too_many(e, f"{path}.addresses", len(addresses), MAX_ADDRESSES)
        for j, address in enumerate(addresses):
            problem = address_problem(address, address_type)
            if problem:
                e.invalid(f"{path}.addresses[{j}]", address, problem)
        conditions = endpoint.get("conditions")
        if mapping(e, f"{path}.conditions", conditions):
            for field in ("ready", "serving", "terminating"):
                value = conditions.get(field)
                if value is not None and not isinstance(value, bool):
                    e.invalid(f"{path}.conditions.{field}", value, "must be a boolean")
        node = endpoint.get("nodeName")
        if node is not None and (not isinstance(node, str) or not is_dns_subdomain(node)):
            e.invalid(f"{path}.nodeName", node, "a lowercase RFC 1123 subdomain must consist "
                      "of lower case alphanumeric characters, '-' or '.', and must start and "
                      "end with an alphanumeric character (e.g. 'example.com', regex used for "
                      "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                      "[a-z0-9])?)*')")  # fmt: skip
        topology = endpoint.get("deprecatedTopology")
        if isinstance(topology, dict):
            if len(topology) > MAX_TOPOLOGY_LABELS:
                _too_many(e, f"{path}.deprecatedTopology", len(topology), MAX_TOPOLOGY_LABELS)
            label_map(e, f"{path}.deprecatedTopology", topology)
            if ZONE_LABEL in topology:
                e.add(f"{path}.deprecatedTopology[{ZONE_LABEL}]",
                      "Internal error: zone should be set in endpoint.zone")  # fmt: skip
        hostname = endpoint.get("hostname")
        if hostname is not None and (not isinstance(hostname, str) or not is_dns_label(hostname)):
            e.invalid(f"{path}.hostname", hostname, DNS_LABEL_MESSAGE)
        hints = endpoint.get("hints")
        if mapping(e, f"{path}.hints", hints):
            for field in ("forZones", "forNodes"):
                listed_hints = listed(hints.get(field))
                if len(listed_hints) > MAX_HINTS:
                    _too_many(e, f"{path}.hints.{field}", len(listed_hints), MAX_HINTS)
                seen: set[str] = set()
                for k, hint in enumerate(listed_hints):
                    hint_name = hint.get("name") if isinstance(hint, dict) else None
                    if hint_name in seen:
                        e.duplicate(f"{path}.hints.{field}[{k}].name", hint_name)
                    seen.add(str(hint_name))


def _validate_ports(e: Errors, ports: list[Any]) -> None:
    if len(ports) > MAX_PORTS:
        _too_many(e, "ports", len(ports), MAX_PORTS)
    names: set[str] = set()
    for path, port in each_object(e, "ports", ports, required=True):
        port_name = port.get("name") or ""
        if port_name and (not isinstance(port_name, str) or not is_dns_label(port_name)):
            e.invalid(f"{path}.name", port_name, DNS_LABEL_MESSAGE)
        if port_name in names:
            e.duplicate(f"{path}.name", port_name)
        names.add(str(port_name))
        protocol = port.get("protocol")
        if protocol is None:
            e.required(f"{path}.protocol")
        elif protocol not in PROTOCOLS:
            e.not_supported(f"{path}.protocol", protocol, PROTOCOLS)
        integer(e, f"{path}.port", port.get("port"), 0, 65535)
        app = port.get("appProtocol")
        if app is not None and (not isinstance(app, str) or not is_qualified_name(app)):
            e.invalid(f"{path}.appProtocol", app, QUALIFIED_NAME_MESSAGE)


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    address_type = obj.get("addressType")
    endpoints: Any = obj.get("endpoints")
    if endpoints is not None and not isinstance(endpoints, list):
        e.invalid("endpoints", endpoints, "must be a list")
    elif endpoints:
        _validate_endpoints(e, endpoints, address_type)
    ports: Any = obj.get("ports")
    if ports is not None and not isinstance(ports, list):
        e.invalid("ports", ports, "must be a list")
    elif ports:
        _validate_ports(e, ports)
    if not address_type:
        e.required("addressType")
    elif address_type not in ADDRESS_TYPES:
        e.not_supported("addressType", address_type, ADDRESS_TYPES)
    if old is not None and old.get("addressType") != address_type:
        e.invalid("addressType", address_type, "field is immutable")


def defaults(obj: Object) -> None:
    for port in listed(obj.get("ports")):
        if isinstance(port, dict):
            port.setdefault("name", "")
            port.setdefault("protocol", "TCP")


def _more(shown: list[str], count: int) -> str:
    """Kubernetes' listWithMoreString over at most three items."""
    text = ",".join(shown[:3])
    if count > 3:
        return f"{text} + {count - 3} more..."
    return text or "<unset>"


def row(obj: Object, now: float, wide: bool) -> list[str]:
    ports = [p for p in listed(obj.get("ports")) if isinstance(p, dict)]
    port_cells = [
        str(p["port"]) if p.get("port") is not None else str(p.get("name") or "*") for p in ports
    ]
    addresses = [
        str(a)
        for ep in listed(obj.get("endpoints"))
        if isinstance(ep, dict)
        for a in listed(ep.get("addresses"))
    ]
    return [
        name(obj),
        str(obj.get("addressType") or ""),
        _more(port_cells, len(port_cells)),
        _more(addresses, len(addresses)),
        age(obj, now),
    ]


def _port_type() -> Type:
    t = struct(
        DISCOVERY,
        "EndpointPort represents a Port used by an EndpointSlice",
        name=("string", "name represents the name of this port."),
        protocol=("string", "protocol represents the IP protocol for this port. Must be UDP, TCP, or SCTP. Default is TCP."),
        port=("integer", "port represents the port number of the endpoint. If the EndpointSlice is derived from a Kubernetes service, this must be set to the service's target port."),
        appProtocol=("string", "The application protocol for this port."),
    )  # fmt: skip
    return Type(t.package, t.description, t.fields, t.required, name="EndpointPort")


DEFINITION = KindDef(
    KindInfo("EndpointSlice", "discovery.k8s.io/v1", has_status=False),
    types={
        **declare(
            DISCOVERY,
            """
            EndpointSlice [discovery.k8s.io/v1 EndpointSlice]: EndpointSlice represents a set of
                    service endpoints. Most EndpointSlices are created by the EndpointSlice
                    controller to represent the Pods selected by Service objects.
                addressType!  string                     addressType specifies the type of address
                                                         carried by this EndpointSlice. All
                                                         addresses in this slice must be the same
                                                         type. This field is immutable after
                                                         creation.
                endpoints!    []DiscoveryV1Endpoint      endpoints is a list of unique endpoints in
                                                         this slice. Each slice may include a
                                                         maximum of 1000 endpoints.
                ports         []DiscoveryV1EndpointPort  ports specifies the list of network ports
                                                         exposed by each endpoint in this slice.
            """,
        ),
        "DiscoveryV1Endpoint": Type(
            DISCOVERY,
            'Endpoint represents a single logical "backend" implementing a service.',
            {
                "addresses": (
                    "[]string",
                    'addresses of this endpoint. For EndpointSlices of addressType "IPv4" or "IPv6", the values are IP addresses in canonical form.',
                ),
                "conditions": (
                    "EndpointConditions",
                    "conditions contains information about the current status of the endpoint.",
                ),
                "hostname": ("string", "hostname of this endpoint."),
                "targetRef": (
                    "object",
                    "targetRef is a reference to a Kubernetes object that represents this endpoint.",
                ),
                "deprecatedTopology": (
                    "map",
                    "deprecatedTopology contains topology information part of the v1beta1 API.",
                ),
                "nodeName": (
                    "string",
                    "nodeName represents the name of the Node hosting this endpoint.",
                ),
                "zone": ("string", "zone is the name of the Zone this endpoint exists in."),
                "hints": (
                    "EndpointHints",
                    "hints contains information associated with how an endpoint should be consumed.",
                ),
            },
            ("addresses",),
            name="Endpoint",
        ),
        **declare(
            DISCOVERY,
            """
            EndpointConditions: EndpointConditions represents the current condition of an endpoint.
                ready        boolean  ready indicates that this endpoint is ready to receive
                                      traffic, according to whatever system is managing the
                                      endpoint.
                serving      boolean  serving indicates that this endpoint is able to receive
                                      traffic, according to whatever system is managing the
                                      endpoint.
                terminating  boolean  terminating indicates that this endpoint is terminating.
            EndpointHints: EndpointHints provides hints describing how an endpoint should be
                           consumed.
                forZones  []object  forZones indicates the zone(s) this endpoint should be consumed
                                    by when using topology aware routing.
                forNodes  []object  forNodes indicates the node(s) this endpoint should be consumed
                                    by when using topology aware routing.
            """,
        ),
        "DiscoveryV1EndpointPort": _port_type(),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("ADDRESSTYPE", description="Type of address contained in this EndpointSlice."),
            Column("PORTS", description="Ports contained in this EndpointSlice."),
            Column("ENDPOINTS", description="Endpoints contained in this EndpointSlice."),
            Column("AGE"),
        ),
        row,
    ),
    patch_meta=facts(),
)
