"""Where one `skiff up` instance keeps its files and what it names on the host.

`Layout.standard()` is the default instance (/var/lib/skiff, /run/skiff,
/etc/cni/net.d, skiff0, SKIFF-SERVICES, skiff-dns, ...); `Layout.under(DIR)`
puts every file under DIR and names every host-global object (bridge,
cgroups, CNI network, iptables chains, DNS interface) after a hash of DIR,
so instances with different data dirs never share one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    data_dir: Path
    controlplane_dir: Path
    runtime_root: Path
    runtime_state: Path
    cri_socket: Path
    agent_root: Path
    pod_logs: Path
    cni_conf_dir: Path
    cni_bin_dir: Path
    log_dir: Path
    cgroup_root: str
    cni_bridge: str
    manifests: Path
    # Host-global names beside the bridge and the cgroups: the runtime's
    # fallback cgroup parent, the CNI network, the service proxy's iptables
    # chains and the dummy interface of the cluster DNS address.
    runtime_cgroup: str = "/skiff"
    cni_network: str = "skiff"
    chain_prefix: str = "SKIFF"
    dns_interface: str = "skiff-dns"

    @staticmethod
    def standard() -> Layout:
        base = Path("/var/lib/skiff")
        return Layout(
            data_dir=base,
            controlplane_dir=base / "controlplane",
            runtime_root=base / "runtime",
            runtime_state=Path("/run/skiff/runtime"),
            cri_socket=Path("/run/skiff/cri.sock"),
            agent_root=base / "agent",
            pod_logs=Path("/var/log/pods"),
            cni_conf_dir=Path("/etc/cni/net.d"),
            cni_bin_dir=Path("/opt/cni/bin"),
            log_dir=Path("/var/log/skiff"),
            cgroup_root="/skiff/pods",
            cni_bridge="skiff0",
            manifests=Path("/etc/skiff/manifests"),
        )

    @staticmethod
    def under(data_dir: Path) -> Layout:
        d = data_dir.resolve()
        tag = hashlib.sha256(str(d).encode()).hexdigest()[:6]
        return Layout(
            data_dir=d,
            controlplane_dir=d / "controlplane",
            runtime_root=d / "runtime",
            runtime_state=d / "run" / "runtime",
            cri_socket=d / "run" / "cri.sock",
            agent_root=d / "agent",
            pod_logs=d / "logs" / "pods",
            cni_conf_dir=d / "cni" / "net.d",
            cni_bin_dir=d / "cni" / "bin",
            log_dir=d / "logs",
            cgroup_root=f"/skiff-{tag}/pods",
            cni_bridge=f"skiff{tag[:5]}",
            manifests=d / "manifests",
            runtime_cgroup=f"/skiff-{tag}",
            cni_network=f"skiff-{tag[:5]}",
            chain_prefix=f"SKIFF{tag[:5]}",
            dns_interface=f"skiff{tag[:5]}-dns",
        )


def unsafe_data_dir(path: Path) -> str:
    """Why `path` (or one of its parents) is not safe as skiff up's data dir,
    or "" if it is. skiff up runs as root what lies there (static pod
    manifests, CNI plugins in cni/bin), so the directory and every parent must
    belong to root and be writable by nobody else; a parent writable by others
    is fine with the sticky bit (as /tmp: nobody can rename root's entries)."""
    path = path.absolute()
    chain = [p for p in (path, *path.parents) if p.exists()]
    for p in chain:
        st = p.stat()
        fix = f"`chown root:root {p} && chmod go-w {p}`, or choose another --data-dir"
        if st.st_uid != 0:
            return (
                f"--data-dir {path}: {p} is owned by uid {st.st_uid}, not root, and skiff up"
                f" would run its manifests/ and cni/bin as root: {fix}"
            )
        writable = st.st_mode & 0o022
        sticky = st.st_mode & 0o1000 and p != path
        if writable and not sticky:
            return (
                f"--data-dir {path}: {p} is writable by group or others (mode"
                f" {st.st_mode & 0o7777:o}), and skiff up would run its manifests/ and cni/bin"
                f" as root: {fix}"
            )
    return ""
