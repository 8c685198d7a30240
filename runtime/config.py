"""`skiff runtime` settings: one frozen dataclass built from the command
line, passed explicitly to everything that needs it. No globals, no I/O."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Config:
    listen: str = "unix:///run/skiff/cri.sock"
    root: Path = Path("/var/lib/skiff/runtime")
    state: Path = Path("/run/skiff/runtime")
    log_level: str = "info"
    cgroup_parent: str = "/skiff"
    cgroup_root: Path = Path("/sys/fs/cgroup")
    pids_limit: int = 0
    cni_conf_dir: Path = Path("/etc/cni/net.d")
    cni_bin_dirs: tuple[Path, ...] = (Path("/opt/cni/bin"),)
    cni_cache_dir: Path | None = None
    registry_config: Path | None = None
    disable_default_registry_endpoint: bool = False
    image_listen: str = ""
    stream_address: str = "127.0.0.1"
    stream_port: int = 0
    runtime_handlers: tuple[str, ...] = field(default=("", "skiff", "runc"))
    max_layer_expansion: int = 10
    seccomp_profile_root: Path = Path("/var/lib/skiff/seccomp")
    metrics_address: str = ""  # HOST:PORT for /metrics (containerd's [metrics] address)

    @property
    def socket_path(self) -> Path:
        return Path(self.listen.removeprefix("unix://"))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff runtime", description="Serve the CRI runtime.v1 API.")
    p.add_argument("--listen", default=Config.listen, help="unix:///path of the CRI socket")
    p.add_argument("--root", type=Path, default=Config.root, help="persistent state")
    p.add_argument("--state", type=Path, default=Config.state, help="volatile state")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--cgroup-parent", default=Config.cgroup_parent,
                   help="cgroup for pods whose config names none")  # fmt: skip
    p.add_argument(
        "--pids-limit", type=int, default=0, help="pids.max of every container (0: none)"
    )
    p.add_argument("--cni-conf-dir", type=Path, default=Config.cni_conf_dir)
    p.add_argument("--cni-bin-dir", type=Path, action="append", default=None)
    p.add_argument("--cni-cache-dir", type=Path, default=None)
    p.add_argument(
        "--registry-config",
        type=Path,
        default=Path("/etc/skiff/registries.yaml"),
        help="k3s-style registries.yaml (mirrors, TLS, auth); a missing file means none",
    )
    p.add_argument("--disable-default-registry-endpoint", action="store_true")
    p.add_argument("--image-listen", default="", help="also serve the ImageService here")
    p.add_argument(
        "--seccomp-profile-root",
        type=Path,
        default=Config.seccomp_profile_root,
        help="localhost/ seccomp profiles are read from here only",
    )
    p.add_argument(
        "--max-layer-expansion",
        type=int,
        default=Config.max_layer_expansion,
        help="refuse a layer that decompresses to more than this many times its size",
    )
    p.add_argument("--stream-address", default="127.0.0.1", help="streaming server address")
    p.add_argument("--stream-port", type=int, default=0, help="streaming server port (0: any)")
    p.add_argument("--metrics-address", default="",
                   help="HOST:PORT for /metrics (runtime/metrics.py); none when empty")  # fmt: skip
    return p


def from_args(argv: Sequence[str]) -> Config:
    a = parser().parse_args(list(argv))
    return Config(
        listen=a.listen if "://" in a.listen else "unix://" + a.listen,
        root=a.root.absolute(),
        state=a.state.absolute(),
        log_level=a.log_level,
        cgroup_parent=a.cgroup_parent,
        pids_limit=a.pids_limit,
        cni_conf_dir=a.cni_conf_dir,
        cni_bin_dirs=tuple(a.cni_bin_dir or [Path("/opt/cni/bin")]),
        cni_cache_dir=a.cni_cache_dir,
        registry_config=a.registry_config,
        disable_default_registry_endpoint=a.disable_default_registry_endpoint,
        image_listen=a.image_listen,
        stream_address=a.stream_address,
        stream_port=a.stream_port,
        max_layer_expansion=a.max_layer_expansion,
        seccomp_profile_root=a.seccomp_profile_root.absolute(),
        metrics_address=a.metrics_address,
    )
