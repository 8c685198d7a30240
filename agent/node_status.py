"""The agent's Node: registration, status with real readings, and the Lease.

The Node carries capacity and allocatable (CPU, memory, pods, ephemeral
storage, less what the flags reserve), addresses, the well-known labels,
taints from flags, node info (kernel, OS, runtime version from CRI), the
images present (for ImageLocality) and the conditions Ready,
MemoryPressure, DiskPressure and PIDPressure computed from readings of this
machine. Heartbeats go through a Lease in kube-node-lease, renewed every
10 s; the Node status is written when it changes (or every minute).
Building the objects is pure; `NodeStatusReporter` does the API calls.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from controlplane.client import errors
from controlplane.client.interface import ApiClient
from machinery import rfc3339

log = logging.getLogger("skiff.agent.node")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40
AGENT_VERSION = "v1.30.0-skiff"


@dataclass(frozen=True)
class NodeConfig:
    name: str
    address: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    max_pods: int = 110
    reserved_cpu_milli: int = 0
    reserved_memory: int = 0
    eviction_memory_available: int = 100 << 20
    eviction_nodefs_available: float = 0.10
    fs_path: str = "/var/lib/skiff"
    agent_port: int = 10250


@dataclass(frozen=True)
class Readings:
    cpus: int
    memory_total: int
    memory_available: int
    fs_total: int
    fs_free: int
    pids_used: int
    pid_max: int

    @staticmethod
    def take(fs_path: str) -> Readings:
        vm = psutil.virtual_memory()
        path = fs_path
        while not os.path.exists(path):
            path = os.path.dirname(path) or "/"
        disk = shutil.disk_usage(path)
        try:
            pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        except OSError:
            pid_max = 32768
        return Readings(
            cpus=os.cpu_count() or 1,
            memory_total=vm.total,
            memory_available=vm.available,
            fs_total=disk.total,
            fs_free=disk.free,
            pids_used=len(psutil.pids()),
            pid_max=pid_max,
        )


def node_labels(cfg: NodeConfig) -> dict[str, str]:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    return {
        "kubernetes.io/hostname": cfg.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": arch,
        **cfg.labels,
    }


def _condition(
    kind: str, true: bool, reason: str, message: str, old: Mapping[str, Any] | None
) -> dict[str, Any]:
    status = "True" if true else "False"
    stamp = rfc3339.now()
    since = old.get("lastTransitionTime", stamp) if old and old.get("status") == status else stamp
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": since,
    }


def node_status(
    cfg: NodeConfig,
    r: Readings,
    runtime_version: str,
    runtime_ready: str | None,
    images: Sequence[Mapping[str, Any]],
    old: Mapping[str, Any] | None = None,
    pressures: Mapping[str, str] | None = None,
    problems: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """`runtime_ready` is None when the runtime and network are ready, else
    why not. `pressures` (condition -> message), from the eviction manager,
    decides the pressure conditions when given; `problems` (reason ->
    message) are the runtime's failures the agent works around, reported as
    the ContainerRuntimeUnhealthy condition (node-problem-detector's)."""
    prev = {c["type"]: c for c in (old or {}).get("conditions") or []}
    disk_low = r.fs_total > 0 and r.fs_free / r.fs_total < cfg.eviction_nodefs_available
    measured = (  # condition, pressure measured here, the reading, reasons under / not under
        ("MemoryPressure", r.memory_available < cfg.eviction_memory_available,
         f"{r.memory_available >> 20} MiB available",
         "AgentHasInsufficientMemory", "AgentHasSufficientMemory"),
        ("DiskPressure", disk_low, f"{r.fs_free >> 30} GiB free of {r.fs_total >> 30} GiB",
         "AgentHasDiskPressure", "AgentHasNoDiskPressure"),
        ("PIDPressure", r.pids_used > 0.9 * r.pid_max, f"{r.pids_used} of {r.pid_max} pids in use",
         "AgentHasInsufficientPID", "AgentHasSufficientPID"),
    )  # fmt: skip
    conditions = []
    for kind, measured_under, reading, under_reason, fine_reason in measured:
        under = measured_under if pressures is None else kind in pressures
        message = (pressures or {}).get(kind) or reading
        reason = under_reason if under else fine_reason
        conditions.append(_condition(kind, under, reason, message, prev.get(kind)))
    conditions.append(
        _condition(
            "Ready",
            runtime_ready is None,
            "AgentReady" if runtime_ready is None else "AgentNotReady",
            "agent is posting ready status" if runtime_ready is None else runtime_ready,
            prev.get("Ready"),
        )
    )
    if problems or "ContainerRuntimeUnhealthy" in prev:
        conditions.append(
            _condition(
                "ContainerRuntimeUnhealthy",
                bool(problems),
                ",".join(sorted(problems)) if problems else "ContainerRuntimeIsHealthy",
                "; ".join(problems[k] for k in sorted(problems)) if problems else "",
                prev.get("ContainerRuntimeUnhealthy"),
            )
        )
    capacity = {
        "cpu": str(r.cpus),
        "memory": f"{r.memory_total >> 10}Ki",
        "pods": str(cfg.max_pods),
        "ephemeral-storage": f"{r.fs_total >> 10}Ki",
    }
    allocatable = {
        "cpu": f"{max(0, r.cpus * 1000 - cfg.reserved_cpu_milli)}m",
        "memory": f"{allocatable_memory(cfg, r.memory_total) >> 10}Ki",
        "pods": str(cfg.max_pods),
        "ephemeral-storage": f"{int(r.fs_total * (1 - cfg.eviction_nodefs_available)) >> 10}Ki",
    }
    uname = os.uname()
    addresses = [{"type": "Hostname", "address": cfg.name}]
    if cfg.address:
        addresses.insert(0, {"type": "InternalIP", "address": cfg.address})
    return {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": conditions,
        "addresses": addresses,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": cfg.agent_port}},
        "nodeInfo": {
            "machineID": _read("/etc/machine-id"),
            "systemUUID": _read("/sys/class/dmi/id/product_uuid").lower(),
            "bootID": _read("/proc/sys/kernel/random/boot_id"),
            "kernelVersion": uname.release,
            "osImage": _os_image(),
            "containerRuntimeVersion": runtime_version,
            "kubeletVersion": AGENT_VERSION,
            "kubeProxyVersion": AGENT_VERSION,  # the agent is the node's proxy too
            "operatingSystem": "linux",
            "architecture": node_labels(cfg)["kubernetes.io/arch"],
        },
        "images": [dict(i) for i in images],
    }


def allocatable_memory(cfg: NodeConfig, total: int) -> int:
    """Capacity less what the flags reserve and the hard eviction threshold."""
    return max(0, total - cfg.reserved_memory - cfg.eviction_memory_available)


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return "Linux"


def _comparable(status: Mapping[str, Any]) -> Any:
    """Status without heartbeat timestamps, to tell a real change."""
    conds = [
        {k: v for k, v in c.items() if k != "lastHeartbeatTime"}
        for c in status.get("conditions") or []
    ]
    return {**status, "conditions": conds}


class NodeStatusReporter:
    def __init__(self, api: ApiClient, cfg: NodeConfig) -> None:
        self.api = api
        self.cfg = cfg
        self._last: Mapping[str, Any] | None = None
        self._last_write = 0.0

    def register(self, status: dict[str, Any]) -> dict[str, Any]:
        """Create the Node, or take over the existing one (re-registration).

        Taints are set only when the Node is created, as the kubelet's
        registration does: on an existing Node the node lifecycle controller
        owns them (its not-ready/unreachable taints), and NodeRestriction
        refuses a node that changes them."""
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self.cfg.name, "labels": node_labels(self.cfg)},
            "spec": {"taints": [dict(t) for t in self.cfg.taints]} if self.cfg.taints else {},
            "status": status,
        }
        try:
            created = self.api.create("Node", node)
            log.info("node=%s registered", self.cfg.name)
        except errors.AlreadyExists:
            existing = self.api.get("Node", self.cfg.name)
            labels = {**(existing["metadata"].get("labels") or {}), **node_labels(self.cfg)}
            self.api.patch("Node", self.cfg.name, {"metadata": {"labels": labels}})
            created = self.api.patch(
                "Node", self.cfg.name, {"status": status}, subresource="status"
            )
            log.info("node=%s re-registered", self.cfg.name)
        self._last = status
        return created

    def maybe_update(self, status: dict[str, Any], now: float, every: float = 60.0) -> bool:
        if (
            self._last is not None
            and _comparable(status) == _comparable(self._last)
            and now - self._last_write < every
        ):
            return False
        self.api.patch("Node", self.cfg.name, {"status": status}, subresource="status")
        self._last = status
        self._last_write = now
        return True

    def renew_lease(self) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.cfg.name, "namespace": LEASE_NAMESPACE},
            "spec": {
                "holderIdentity": self.cfg.name,
                "leaseDurationSeconds": LEASE_DURATION,
                "renewTime": rfc3339.now(micro=True),
            },
        }
        try:
            self.api.patch(
                "Lease", self.cfg.name, {"spec": body["spec"]}, namespace=LEASE_NAMESPACE
            )
        except errors.NotFound:
            try:
                self.api.create("Lease", body, namespace=LEASE_NAMESPACE)
            except errors.AlreadyExists:
                self.api.patch(
                    "Lease", self.cfg.name, {"spec": body["spec"]}, namespace=LEASE_NAMESPACE
                )
