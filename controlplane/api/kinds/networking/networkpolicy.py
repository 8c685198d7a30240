"""NetworkPolicy (networking.k8s.io/v1), enforced on every node by the agent
(agent/netpol/).

- Defaults, as Kubernetes': `spec.podSelector` {} (every pod of the
  namespace); no `spec.policyTypes` means Ingress, plus Egress when
  `spec.egress` has rules; a port without a protocol is TCP.
- Validation (Kubernetes' pkg/apis/networking/validation), each problem
  naming the field: the selectors, `ipBlock.cidr` and `except` (valid CIDRs,
  each except strictly inside the cidr, ipBlock alone in its peer), ports
  (protocol TCP/UDP/SCTP, port a number 1-65535 or an IANA service name,
  `endPort` only with a numbered port and not below it), policyTypes.
- Columns: NAME POD-SELECTOR AGE.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from controlplane.api.checks import Errors, objects
from controlplane.api.display import age, name, selector_string, spec
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child, listed
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare, struct

Object = dict[str, Any]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

PROTOCOLS = ("TCP", "UDP", "SCTP")
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_SERVICE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_PACKAGE = "io.k8s.api.networking.v1"


def defaults(obj: Object) -> None:
    policy = child(obj, "spec")
    policy.setdefault("podSelector", {})  # always present in Kubernetes' objects
    for direction in ("ingress", "egress"):
        for rule in listed(policy.get(direction)):
            for port in listed(rule.get("ports") if isinstance(rule, dict) else None):
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
    if not policy.get("policyTypes"):
        policy["policyTypes"] = ["Ingress", *(["Egress"] if policy.get("egress") else [])]


def _selector(e: Errors, path: str, sel: Any) -> None:
    if sel is None:
        return
    if not isinstance(sel, dict):
        e.add(path, "must be a label selector")
        return
    if not isinstance(sel.get("matchLabels") or {}, dict):
        e.add(f"{path}.matchLabels", "must be a map of strings")
    for here, expr in objects(e, f"{path}.matchExpressions", sel.get("matchExpressions") or []):
        op = expr.get("operator")
        if op not in SELECTOR_OPS:
            e.add(
                f"{here}.operator",
                f'Unsupported value: "{op}": supported values: '
                '"In", "NotIn", "Exists", "DoesNotExist"',
            )
        values = expr.get("values") or []
        if op in ("In", "NotIn") and not values:
            e.add(
                f"{here}.values",
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            )
        if op in ("Exists", "DoesNotExist") and values:
            e.add(
                f"{here}.values",
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )


def _cidr(e: Errors, path: str, value: Any) -> Network | None:
    try:
        return ipaddress.ip_network(value, strict=False) if isinstance(value, str) else None
    except ValueError:
        pass
    e.add(
        path,
        f'Invalid value: "{value}": must be a valid CIDR value, '
        "(e.g. 10.9.8.0/24 or 2001:db8::/64)",
    )
    return None


def _port(e: Errors, path: str, port: Any) -> None:
    if not isinstance(port, dict):
        e.add(path, "must be an object")
        return
    proto = port.get("protocol", "TCP")
    if proto not in PROTOCOLS:
        e.add(
            f"{path}.protocol",
            f'Unsupported value: "{proto}": supported values: "SCTP", "TCP", "UDP"',
        )
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, bool) or not isinstance(number, int | str | None):
        e.add(f"{path}.port", "must be a port number or name")
    elif isinstance(number, int) and not 1 <= number <= 65535:
        e.add(f"{path}.port", f"Invalid value: {number}: must be between 1 and 65535, inclusive")
    elif isinstance(number, str) and not (_SERVICE_NAME.match(number) and len(number) <= 15):
        e.add(
            f"{path}.port", f'Invalid value: "{number}": must be a valid port name (IANA_SVC_NAME)'
        )
    if end is None:
        return
    if not isinstance(number, int):
        e.add(
            f"{path}.endPort",
            f"Invalid value: {end}: may not be specified when `port` is not a number",
        )
    elif isinstance(end, bool) or not isinstance(end, int) or end < number:
        e.add(f"{path}.endPort", f"Invalid value: {end}: must be greater than or equal to `port`")
    elif end > 65535:
        e.add(f"{path}.endPort", f"Invalid value: {end}: must be between 1 and 65535, inclusive")


def _peer(e: Errors, path: str, peer: Any) -> None:
    if not isinstance(peer, dict):
        e.add(path, "must be an object")
        return
    kinds = [k for k in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(k) is not None]
    if not kinds:
        e.add(path, "Required value: must specify a peer")
    block = peer.get("ipBlock")
    if block is not None and len(kinds) > 1:
        e.add(path, "Forbidden: may not specify more than 1 peer type when ipBlock is set")
    _selector(e, f"{path}.podSelector", peer.get("podSelector"))
    _selector(e, f"{path}.namespaceSelector", peer.get("namespaceSelector"))
    if block is None:
        return
    if not isinstance(block, dict):
        e.add(f"{path}.ipBlock", "must be an object")
        return
    if not block.get("cidr"):
        e.add(f"{path}.ipBlock.cidr", "Required value")
        return
    cidr = _cidr(e, f"{path}.ipBlock.cidr", block.get("cidr"))
    for i, text in enumerate(block.get("except") or []):
        net = _cidr(e, f"{path}.ipBlock.except[{i}]", text)
        if cidr is None or net is None:
            continue
        if net.version != cidr.version or net == cidr or not net.subnet_of(cidr):  # type: ignore[arg-type]
            e.add(
                f"{path}.ipBlock.except[{i}]",
                f'Invalid value: "{text}": must be a strict subset of `cidr`',
            )


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    policy: Any = obj.get("spec")
    if policy is None:
        return  # an empty spec: every pod of the namespace, ingress denied
    if not isinstance(policy, dict):
        e.add("spec", "must be an object")
        return
    _selector(e, "spec.podSelector", policy.get("podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for here, rule in objects(e, f"spec.{direction}", policy.get(direction) or []):
            for j, port in enumerate(rule.get("ports") or []):
                _port(e, f"{here}.ports[{j}]", port)
            for j, peer in enumerate(rule.get(peers) or []):
                _peer(e, f"{here}.{peers}[{j}]", peer)
    for i, t in enumerate(policy.get("policyTypes") or []):
        if t not in ("Ingress", "Egress"):
            e.add(
                f"spec.policyTypes[{i}]",
                f'Unsupported value: "{t}": supported values: "Egress", "Ingress"',
            )


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), selector_string(spec(obj).get("podSelector")), age(obj, now)]


PRINTER = Printer(
    (
        Column("NAME"),
        Column("POD-SELECTOR", description="Selects the pods to which this policy applies."),
        Column("AGE"),
    ),
    row,
)

_RULE_PORTS = "Ports allowed by this rule; none: every port."

DEFINITION = KindDef(
    KindInfo("NetworkPolicy", "networking.k8s.io/v1", short_names=("netpol",), has_status=False),
    types={
        **declare(
            _PACKAGE,
            """
            NetworkPolicy [networking.k8s.io/v1 NetworkPolicy]: NetworkPolicy describes what network
                    traffic is allowed for a set of Pods.
                spec  NetworkPolicySpec
            NetworkPolicySpec: NetworkPolicySpec provides the specification of a NetworkPolicy.
                podSelector  LabelSelector               Selects the pods to which this policy
                                                         applies.
                ingress      []NetworkPolicyIngressRule  Ingress rules; any one allowing is enough.
                egress       []NetworkPolicyEgressRule   Egress rules; any one allowing is enough.
                policyTypes  []string                    The rule types this policy applies to:
                                                         Ingress, Egress.
            """,
        ),
        "NetworkPolicyIngressRule": struct(
            _PACKAGE,
            "Traffic allowed to the selected pods: from all of `from` on all of `ports`.",
            ports=("[]NetworkPolicyPort", _RULE_PORTS),
            **{"from": ("[]NetworkPolicyPeer", "Sources allowed; none: every source.")},
        ),
        "NetworkPolicyEgressRule": struct(
            _PACKAGE,
            "Traffic allowed from the selected pods: to all of `to` on all of `ports`.",
            ports=("[]NetworkPolicyPort", _RULE_PORTS),
            to=("[]NetworkPolicyPeer", "Destinations allowed; none: every destination."),
        ),
        **declare(
            _PACKAGE,
            """
            NetworkPolicyPort: NetworkPolicyPort describes a port to allow traffic on.
                protocol  string         TCP, UDP or SCTP; default TCP.
                port      int-or-string  A port number or a named port on a pod; none: every port.
                endPort   integer        With a numbered port: the last port of the range.
            NetworkPolicyPeer: NetworkPolicyPeer describes a peer to allow traffic to/from.
                podSelector        LabelSelector  Pods (in the selected namespaces) allowed.
                namespaceSelector  LabelSelector  Namespaces whose pods are allowed.
                ipBlock            IPBlock        A CIDR range allowed, with exceptions.
            """,
        ),
        "IPBlock": struct(
            _PACKAGE,
            "IPBlock describes a particular CIDR that is allowed, except some ranges.",
            ("cidr",),
            cidr=("string", "A CIDR such as 192.168.1.0/24 or 2001:db8::/64."),
            **{"except": ("[]string", "CIDRs inside `cidr` that are not allowed.")},
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=PRINTER,
    patch_meta=facts(),
)
