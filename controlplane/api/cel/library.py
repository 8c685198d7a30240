"""Kubernetes' CEL libraries (k8s.io/apiserver/pkg/cel/library) on cel-cpp.

Lists: isSorted, sum, min, max, indexOf, lastIndexOf. Regex: find, findAll.
URLs: url, isURL, getScheme/getHost/getHostname/getPort/getEscapedPath/
getQuery. Quantities: quantity, isQuantity, isInteger, asInteger,
asApproximateFloat, sign, add, sub, isGreaterThan, isLessThan, compareTo.
IPs and CIDRs: ip, isIP, cidr, isCIDR, family, isCanonical, isLoopback,
isUnspecified, isGlobalUnicast, isLinkLocalUnicast, isLinkLocalMulticast,
containsIP, containsCIDR, prefixLength, masked. The authorizer library
(path, group, resource, check, allowed ...) is authz.py's. (Strings, optional,
cel.bind and math come from cel-cpp's own extensions.)

cel-cpp's Python bindings cannot carry opaque Python values, so a URL,
quantity, IP or CIDR is a one-key map in canonical form ({"@quantity":
milli-units}, {"@ip": "10.0.0.1"} ...): equal values compare equal with ==.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from cel_expr_python import cel

from controlplane.api.cel import authz, formats
from controlplane.api.quantity import format_quantity, parse_quantity

T = cel.Type
OPAQUE = T.Map(T.STRING, T.DYN)
ANY_LIST = T.List(T.DYN)
_Q, _URL, _IP, _CIDR = "@quantity", "@url", "@ip", "@cidr"


def _sorted(xs: list[Any]) -> bool:
    return all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1))


def _sum(xs: list[Any]) -> Any:
    total: Any = 0
    for x in xs:
        total = total + x
    return total


def _min(xs: list[Any]) -> Any:
    if not xs:
        raise ValueError("min called on empty list")
    return min(xs)


def _max(xs: list[Any]) -> Any:
    if not xs:
        raise ValueError("max called on empty list")
    return max(xs)


def _index(xs: list[Any], x: Any) -> int:
    return xs.index(x) if x in xs else -1


def _last_index(xs: list[Any], x: Any) -> int:
    return len(xs) - 1 - xs[::-1].index(x) if x in xs else -1


def _find(s: str, pattern: str) -> str:
    m = re.search(pattern, s)
    return m.group(0) if m else ""


def _find_all(s: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, s)]
    return found if limit < 0 else found[:limit]


# URLs -------------------------------------------------------------------


def _parse_url(s: str) -> urllib.parse.SplitResult:
    u = urllib.parse.urlsplit(s)
    if not (u.scheme and (u.netloc or s.startswith("/"))) and not s.startswith("/"):
        raise ValueError(f"URL parse error during conversion from string: {s}")
    return u


def _url(s: str) -> dict[str, Any]:
    _parse_url(s)
    return {_URL: s}


def _is_url(s: str) -> bool:
    try:
        _parse_url(s)
        return True
    except ValueError:
        return False


def _url_part(name: str) -> Callable[[dict[str, Any]], str]:
    def get(m: dict[str, Any]) -> str:
        u = _parse_url(str(m[_URL]))
        if name == "scheme":
            return u.scheme
        if name == "host":
            return u.netloc.rpartition("@")[2]
        if name == "hostname":
            return u.hostname or ""
        if name == "port":
            return str(u.port or "")
        if name == "path":
            return u.path
        return u.query

    return get


def _url_query(m: dict[str, Any]) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_parse_url(str(m[_URL])).query, keep_blank_values=True)


# Quantities ---------------------------------------------------------------


def _qval(m: dict[str, Any]) -> Fraction:
    return Fraction(int(m[_Q]), 1000)


def _qmap(v: Fraction) -> dict[str, Any]:
    return {_Q: int(v * 1000)}


def _quantity(s: str) -> dict[str, Any]:
    return _qmap(parse_quantity(s))


def _is_quantity(s: str) -> bool:
    try:
        parse_quantity(s)
        return True
    except ValueError:
        return False


def _as_integer(m: dict[str, Any]) -> int:
    v = _qval(m)
    if v.denominator != 1 or not -(2**63) <= v < 2**63:
        raise ValueError("cannot convert value to integer")
    return int(v)


def _other(x: Any) -> Fraction:
    return _qval(x) if isinstance(x, dict) else Fraction(x)


def _compare(a: dict[str, Any], b: dict[str, Any]) -> int:
    x, y = _qval(a), _qval(b)
    return (x > y) - (x < y)


# IPs and CIDRs --------------------------------------------------------------


def _ip(s: str) -> dict[str, Any]:
    if "/" in s or "%" in s:
        raise ValueError(f"IP Address {s!r} parse error during conversion from string")
    try:
        ipaddress.ip_address(s)
    except ValueError as err:
        raise ValueError(f"IP Address {s!r} parse error during conversion from string") from err
    return {_IP: s}


def _addr(m: dict[str, Any]) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(str(m[_IP]))


def _cidr(s: str) -> dict[str, Any]:
    try:
        ipaddress.ip_interface(s)
    except ValueError as err:
        raise ValueError(
            f"network address {s!r} parse error during conversion from string"
        ) from err
    if "/" not in s:
        raise ValueError(f"network address {s!r} parse error during conversion from string")
    return {_CIDR: s}


def _net(m: dict[str, Any]) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_interface(str(m[_CIDR])).network


def _valid(fn: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            fn(s)
            return True
        except ValueError:
            return False

    return check


def _contains_ip(c: dict[str, Any], x: Any) -> bool:
    addr = _addr(x) if isinstance(x, dict) else ipaddress.ip_address(str(x))
    return addr in _net(c)


def _contains_cidr(c: dict[str, Any], x: Any) -> bool:
    other = _net(x) if isinstance(x, dict) else ipaddress.ip_interface(str(x)).network
    net = _net(c)
    return other.version == net.version and other.subnet_of(net)  # type: ignore[arg-type]


def _global_unicast(m: dict[str, Any]) -> bool:
    a = _addr(m)
    special = a.is_multicast or a.is_loopback or a.is_link_local or a.is_unspecified
    return not (special or str(a) == "255.255.255.255")


def _link_local_multicast(m: dict[str, Any]) -> bool:
    a = _addr(m)
    return a in ipaddress.ip_network("224.0.0.0/24" if a.version == 4 else "ff02::/16")


def _cidr_ip(c: dict[str, Any]) -> dict[str, Any]:
    return {_IP: str(ipaddress.ip_interface(str(c[_CIDR])).ip)}


def _fn(
    name: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = True
) -> Any:
    oid = f"k8s_{name}_{len(params)}_{'m' if member else 'g'}"
    return cel.Overload(oid, ret, params, is_member=member, impl=impl)


def _decls() -> list[Any]:
    S, B, N, D = T.STRING, T.BOOL, T.INT, T.DOUBLE
    Op, L, DY = OPAQUE, ANY_LIST, T.DYN
    table: dict[str, list[Any]] = {
        "isSorted": [_fn("isSorted", B, [L], _sorted)],
        "sum": [_fn("sum", DY, [L], _sum)],
        "min": [_fn("min", DY, [L], _min)],
        "max": [_fn("max", DY, [L], _max)],
        "indexOf": [_fn("indexOf", N, [L, DY], _index)],
        "lastIndexOf": [_fn("lastIndexOf", N, [L, DY], _last_index)],
        "find": [_fn("find", S, [S, S], _find)],
        "findAll": [
            _fn("findAll", T.List(S), [S, S], _find_all),
            _fn("findAll", T.List(S), [S, S, N], _find_all),
        ],
        "url": [_fn("url", Op, [S], _url, member=False)],
        "isURL": [_fn("isURL", B, [S], _is_url, member=False)],
        "getScheme": [_fn("getScheme", S, [Op], _url_part("scheme"))],
        "getHost": [_fn("getHost", S, [Op], _url_part("host"))],
        "getHostname": [_fn("getHostname", S, [Op], _url_part("hostname"))],
        "getPort": [_fn("getPort", S, [Op], _url_part("port"))],
        "getEscapedPath": [_fn("getEscapedPath", S, [Op], _url_part("path"))],
        "getQuery": [_fn("getQuery", T.Map(S, T.List(S)), [Op], _url_query)],
        "quantity": [_fn("quantity", Op, [S], _quantity, member=False)],
        "isQuantity": [_fn("isQuantity", B, [S], _is_quantity, member=False)],
        "isInteger": [_fn("isInteger", B, [Op], lambda m: _qval(m).denominator == 1)],
        "asInteger": [_fn("asInteger", N, [Op], _as_integer)],
        "asApproximateFloat": [_fn("asApproximateFloat", D, [Op], lambda m: float(_qval(m)))],
        "sign": [_fn("sign", N, [Op], lambda m: (_qval(m) > 0) - (_qval(m) < 0))],
        "add": [_fn("add", Op, [Op, DY], lambda a, b: _qmap(_qval(a) + _other(b)))],
        "sub": [_fn("sub", Op, [Op, DY], lambda a, b: _qmap(_qval(a) - _other(b)))],
        "isGreaterThan": [_fn("isGreaterThan", B, [Op, Op], lambda a, b: _compare(a, b) > 0)],
        "isLessThan": [_fn("isLessThan", B, [Op, Op], lambda a, b: _compare(a, b) < 0)],
        "compareTo": [_fn("compareTo", N, [Op, Op], _compare)],
        "ip": [_fn("ip", Op, [S], _ip, member=False), _fn("ip", Op, [Op], _cidr_ip)],
        "isIP": [_fn("isIP", B, [S], _valid(_ip), member=False)],
        "cidr": [_fn("cidr", Op, [S], _cidr, member=False)],
        "isCIDR": [_fn("isCIDR", B, [S], _valid(_cidr), member=False)],
        "family": [_fn("family", N, [Op], lambda m: _addr(m).version)],
        "isCanonical": [
            _fn("isCanonical", B, [S], lambda s: str(ipaddress.ip_address(s)) == s, member=False)
        ],
        "isLoopback": [_fn("isLoopback", B, [Op], lambda m: _addr(m).is_loopback)],
        "isUnspecified": [_fn("isUnspecified", B, [Op], lambda m: _addr(m).is_unspecified)],
        "isGlobalUnicast": [_fn("isGlobalUnicast", B, [Op], _global_unicast)],
        "isLinkLocalUnicast": [
            _fn("isLinkLocalUnicast", B, [Op], lambda m: _addr(m).is_link_local)
        ],
        "isLinkLocalMulticast": [_fn("isLinkLocalMulticast", B, [Op], _link_local_multicast)],
        "containsIP": [_fn("containsIP", B, [Op, DY], _contains_ip)],
        "containsCIDR": [_fn("containsCIDR", B, [Op, DY], _contains_cidr)],
        "prefixLength": [_fn("prefixLength", N, [Op], lambda m: _net(m).prefixlen)],
        "masked": [_fn("masked", Op, [Op], lambda m: {_CIDR: str(_net(m))})],
    }
    table.update(authz.decls(OPAQUE))
    return [cel.FunctionDecl(name, overloads) for name, overloads in table.items()] + (
        formats.decls(OPAQUE)
    )


_EXTENSION: Any = None


def extension() -> Any:
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = cel.CelExtension("kubernetes", _decls())
    return _EXTENSION


def to_python(value: Any) -> Any:
    """A result as JSON-ish Python: opaque values in their string form."""
    if isinstance(value, dict):
        if authz.is_value(value):
            return {}  # an authorizer value has no JSON form (cel-go's are opaque too)
        if len(value) == 1:
            key = next(iter(value))
            if key == _Q:
                return format_quantity(_qval(value))
            if key in (_URL, _IP, _CIDR):
                return str(value[key])
        return {k: to_python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_python(v) for v in value]
    return value
