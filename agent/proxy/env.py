"""Service environment variables, exactly as the kubelet sets them.

`service_env(services, namespace)` is a pure function: for every Service with
a cluster IP in the pod's namespace (plus the `kubernetes` Service of the
`default` namespace, as the kubelet's "master services"), the
`<SVC>_SERVICE_HOST` / `<SVC>_SERVICE_PORT[_<PORTNAME>]` variables and the
Docker-link ones (`<SVC>_PORT`, `<SVC>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]`).
Nothing here reads the API or the environment of this process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MASTER_NAMESPACE = "default"
MASTER_SERVICES = frozenset({"kubernetes"})


def env_name(name: str) -> str:
    """`my-svc` -> `MY_SVC` (kubelet's makeEnvVariableName)."""
    return name.upper().replace("-", "_")


def _host_port(ip: str, port: int) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _vars_of(svc: Mapping[str, Any]) -> dict[str, str]:
    spec = svc.get("spec") or {}
    ip = str(spec.get("clusterIP") or "")
    ports = [p for p in spec.get("ports") or [] if isinstance(p, Mapping) and "port" in p]
    prefix = env_name(str(svc["metadata"]["name"]))
    out: dict[str, str] = {f"{prefix}_SERVICE_HOST": ip}
    if not ports:
        return out
    out[f"{prefix}_SERVICE_PORT"] = str(int(ports[0]["port"]))
    for p in ports:
        if p.get("name"):
            out[f"{prefix}_SERVICE_PORT_{env_name(str(p['name']))}"] = str(int(p["port"]))
    for i, p in enumerate(ports):
        proto = str(p.get("protocol") or "TCP")
        number = int(p["port"])
        url = f"{proto.lower()}://{_host_port(ip, number)}"
        if i == 0:
            out[f"{prefix}_PORT"] = url
        pp = f"{prefix}_PORT_{number}_{proto.upper()}"
        out[pp] = url
        out[f"{pp}_PROTO"] = proto.lower()
        out[f"{pp}_PORT"] = str(number)
        out[f"{pp}_ADDR"] = ip
    return out


def service_env(
    services: Iterable[Mapping[str, Any]],
    namespace: str,
    enable_service_links: bool = True,
) -> dict[str, str]:
    """The variables for a pod in `namespace`; `services` may span namespaces
    (others are ignored). With `enable_service_links` false only the master
    services' variables are set, as the kubelet does."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for svc in services:
        meta = svc.get("metadata") or {}
        spec = svc.get("spec") or {}
        ip = spec.get("clusterIP")
        if not ip or ip == "None" or not meta.get("name"):
            continue
        name, ns = str(meta["name"]), str(meta.get("namespace") or "default")
        if ns == MASTER_NAMESPACE and name in MASTER_SERVICES:
            chosen.setdefault(name, svc)
        elif ns == namespace and enable_service_links:
            chosen[name] = svc
    out: dict[str, str] = {}
    for name in sorted(chosen):
        out.update(_vars_of(chosen[name]))
    return out
