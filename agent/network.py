"""The node's CNI configuration, written from its Node's podCIDR.

The agent owns one conflist in the CNI conf dir: skiff-cni in bridge mode
with skiff-ipam over the node's pod subnet, the routes to other nodes' pod
subnets (`backend.peers`, from every other Node's InternalIP and podCIDR),
and the portMappings capability for hostPorts. Whenever the peers change, the file is rewritten
atomically and `skiff-cni reconcile FILE` brings the routes in line without
waiting for a pod ADD. The agent never calls netlink itself.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machinery.atomicfile import write_atomic

log = logging.getLogger("skiff.agent.network")

CONF_NAME = "10-skiff.conflist"


@dataclass(frozen=True)
class NetworkSettings:
    conf_dir: Path = Path("/etc/cni/net.d")
    bin_dir: Path = Path("/opt/cni/bin")
    bridge: str = "skiff0"
    backend: str = "host-gw"  # or "vxlan"
    mtu: int = 1500
    ipam_dir: Path = Path("/var/lib/skiff/agent/ipam")
    # The CNI network name: skiff-cni names attachments' chains and veths
    # after it and its GC finds them by it, so a second agent on the same
    # host (`skiff up --data-dir`) takes its own.
    name: str = "skiff"


def node_ip(node: Mapping[str, Any]) -> str:
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return str(addr["address"])
    return ""


def peers(nodes: Sequence[Mapping[str, Any]], self_name: str) -> list[dict[str, str]]:
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        cidr = (n.get("spec") or {}).get("podCIDR")
        ip = node_ip(n)
        if name != self_name and cidr and ip:
            out.append({"nodeIP": ip, "podCIDR": cidr})
    return sorted(out, key=lambda p: p["podCIDR"])


def conflist(
    settings: NetworkSettings, pod_cidr: str, local_ip: str, peer_list: list[dict[str, str]]
) -> dict[str, Any]:
    subnet = ipaddress.ip_network(pod_cidr)
    gateway = str(next(subnet.hosts()))
    backend: dict[str, Any] = {"type": settings.backend, "peers": peer_list}
    if local_ip:
        backend["localIP"] = local_ip
    return {
        "cniVersion": "1.0.0",
        "name": settings.name,
        "plugins": [
            {
                "type": "skiff-cni",
                "bridge": settings.bridge,
                "isGateway": True,
                "isDefaultGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "mtu": settings.mtu,
                "backend": backend,
                "capabilities": {"portMappings": True},
                "ipam": {
                    "type": "skiff-ipam",
                    "subnet": pod_cidr,
                    "gateway": gateway,
                    "dataDir": str(settings.ipam_dir),
                },
            },
        ],
    }


class NetworkConfigurator:
    def __init__(self, settings: NetworkSettings) -> None:
        self.settings = settings
        self._written: dict[str, Any] | None = None

    @property
    def path(self) -> Path:
        return self.settings.conf_dir / CONF_NAME

    def apply(self, pod_cidr: str, local_ip: str, peer_list: list[dict[str, str]]) -> bool:
        """Write the conflist if it changed and reconcile routes; True if it changed."""
        conf = conflist(self.settings, pod_cidr, local_ip, peer_list)
        if conf == self._written and self.path.exists():
            return False
        self.settings.conf_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(conf, indent=2) + "\n", durable=True)
        self._written = conf
        log.info("cni config %s written: podCIDR=%s peers=%d", self.path, pod_cidr, len(peer_list))
        plugin = self.settings.bin_dir / "skiff-cni"
        if plugin.exists():
            single = {"cniVersion": conf["cniVersion"], "name": conf["name"], **conf["plugins"][0]}
            single_path = self.settings.conf_dir.parent / f".{CONF_NAME}.reconcile.json"
            single_path.write_text(json.dumps(single))
            res = subprocess.run(
                [str(plugin), "reconcile", str(single_path)],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                log.warning("skiff-cni reconcile failed: %s", (res.stdout + res.stderr).strip())
        return True
