"""RunPodSandbox: namespaces held by a sandbox monitor and pinned under
--state, the pod's hosts/resolv.conf/hostname and /dev/shm, a cgroup under
the config's cgroup_parent, and the network through CNI.

Every finished step pushes its undo on an ExitStack; a failure leaves
nothing behind (tests/unit/runtime/test_undo.py fails each host step in
turn). Reaches the host only through `svc.host`; never forks or enters a
namespace itself (the monitor does).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import signal
import socket
import time
from pathlib import Path
from typing import Any

from machinery import libc
from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.cri import stored_config, validate
from runtime.cri.service import RuntimeService
from runtime.process import spawn
from runtime.store.records import Sandbox

log = logging.getLogger("skiff.runtime.sandbox")

NET_SYSCTL = ("net.",)
IPC_SYSCTL = ("kernel.shm", "kernel.msg", "kernel.sem", "fs.mqueue.")
UTS_SYSCTL = ("kernel.hostname", "kernel.domainname")


def resolv_conf(dns: api_pb2.DNSConfig) -> str:
    if not (dns.servers or dns.searches or dns.options):
        try:
            return Path("/etc/resolv.conf").read_text()
        except OSError:
            return ""
    lines = [f"nameserver {s}" for s in dns.servers]
    if dns.searches:
        lines.append("search " + " ".join(dns.searches))
    if dns.options:
        lines.append("options " + " ".join(dns.options))
    return "\n".join(lines) + "\n"


def hosts_file(hostname: str, ip: str) -> str:
    text = (
        "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
        "fe00::0\tip6-localnet\nff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n"
    )
    if ip and hostname:
        text += f"{ip}\t{hostname}\n"
    return text


def check_sysctls(sysctls: dict[str, str], own_net: bool, own_ipc: bool, own_uts: bool) -> None:
    for name in sysctls:
        if "/" in name or ".." in name:
            raise errors.InvalidArgument(f"bad sysctl name {name!r}")
        if name.startswith(NET_SYSCTL):
            ok = own_net
        elif name.startswith(IPC_SYSCTL):
            ok = own_ipc
        elif name.startswith(UTS_SYSCTL):
            ok = own_uts
        else:
            raise errors.InvalidArgument(
                f"sysctl {name!r} is not namespaced and cannot be set for a pod"
            )
        if not ok:
            raise errors.InvalidArgument(
                f"sysctl {name!r} needs the pod's own namespace, not the host's"
            )


def run(svc: RuntimeService, req: api_pb2.RunPodSandboxRequest) -> api_pb2.RunPodSandboxResponse:
    cfg = req.config
    md = cfg.metadata
    if not md.name or not md.uid or not md.namespace:
        raise errors.InvalidArgument("sandbox metadata needs name, uid and namespace")
    validate.sandbox_config(cfg)
    if req.runtime_handler not in svc.cfg.runtime_handlers:
        raise errors.InvalidArgument(f"runtime handler {req.runtime_handler!r} is not supported")
    opts = cfg.linux.security_context.namespace_options
    host_net = opts.network == api_pb2.NODE
    host_ipc = opts.ipc == api_pb2.NODE
    pod_pid = opts.pid == api_pb2.POD
    sysctls = dict(cfg.linux.sysctls)
    check_sysctls(sysctls, not host_net, not host_ipc, not host_net)
    sid = secrets.token_hex(32)
    hostname = cfg.hostname or socket.gethostname()
    s = Sandbox(
        id=sid,
        name=md.name,
        namespace=md.namespace,
        uid=md.uid,
        attempt=md.attempt,
        config_b64=stored_config.encode(cfg),
        created_at=time.time_ns(),
        runtime_handler=req.runtime_handler,
        host_network=host_net,
        ns_modes={"network": opts.network, "pid": opts.pid, "ipc": opts.ipc},
    )
    parent = cfg.linux.cgroup_parent or svc.cfg.cgroup_parent
    s.cgroup = f"{parent.rstrip('/')}/{sid}"
    host = svc.host
    with contextlib.ExitStack() as undo:
        root, state = svc.sandbox_root(sid), svc.sandbox_state(sid)
        svc.reserve(undo, svc.sandboxes, s, root, state)
        host.write_file(root / "hostname", hostname + "\n")
        host.write_file(root / "resolv.conf", resolv_conf(cfg.dns_config))
        host.write_file(
            root / "hosts", Path("/etc/hosts").read_text() if host_net else hosts_file(hostname, "")
        )
        cg = svc.cgroup(s.cgroup)
        cg.create()
        undo.callback(_quiet, cg.destroy)
        if not host_ipc:
            shm = state / "shm"
            host.make_dir(shm)
            host.mount_tmpfs(shm, libc.MS_NOSUID | libc.MS_NODEV | libc.MS_NOEXEC,
                             "mode=1777,size=65536k")  # fmt: skip
            undo.callback(_quiet, lambda: host.unmount(shm))
        spec: dict[str, Any] = {
            "namespaces": {
                "net": not host_net,
                "ipc": not host_ipc,
                "uts": not host_net,
                "pid": pod_pid,
            },
            "hostname": hostname,
            "sysctls": sysctls,
            "cgroup_procs": cg.procs_files,
            "cgroup_self": cg.self_join_files,
            "monitor_log": str(root / "monitor.log"),
            "pause": svc.pause or "",
        }
        # the monitor reports its pids as soon as the namespaces exist, then
        # joins the cgroup while we pin them and run CNI; `finish` below
        # waits for the rest of its setup
        try:
            pending = host.start_monitor("sandbox", spec, root / "spec.json", root / "monitor.log")
        except spawn.MonitorError as exc:
            raise errors.InvalidArgument(f"sandbox setup failed: {exc}") from None
        undo.callback(pending.close)
        try:
            rep = pending.first()
        except spawn.MonitorError as exc:
            raise errors.InvalidArgument(f"sandbox setup failed: {exc}") from None
        # with a pod PID namespace its PID 1 is the pod's one process (the
        # monitor exits); otherwise the monitor stays and holds the namespaces
        s.pid1 = int(rep.get("pid1") or 0)
        s.monitor_pid = s.pid1 or int(rep["pid"])
        undo.callback(host.kill, s.monitor_pid, signal.SIGKILL)
        s.monitor_start = host.start_time(s.monitor_pid)
        for kind, own in (("net", not host_net), ("ipc", not host_ipc), ("uts", not host_net)):
            if own:
                target = svc.ns_path(sid, kind)
                host.pin_namespace(s.monitor_pid, kind, target)
                undo.callback(_quiet, lambda t=target: host.unpin_namespace(t))
        if s.pid1:
            target = svc.ns_path(sid, "pid")
            host.pin_namespace(s.pid1, "pid", target)
            undo.callback(_quiet, lambda t=target: host.unpin_namespace(t))
        if not host_net and svc.network is not None and svc.network.status() is None:
            ports = [
                {
                    "hostPort": p.host_port,
                    "containerPort": p.container_port,
                    "protocol": api_pb2.Protocol.Name(p.protocol).lower(),
                    "hostIP": p.host_ip,
                }
                for p in cfg.port_mappings
                if p.host_port
            ]
            netns = str(svc.ns_path(sid, "net"))
            network = svc.network
            # a failed ADD may have made part of the network: DEL it too
            undo.callback(_quiet, lambda: network.teardown(sid, netns, **svc.cni_args(s)))
            try:
                result = network.setup(sid, netns, port_mappings=ports, **svc.cni_args(s))
            except Exception as exc:
                raise errors.Unknown(f"failed to set up network for sandbox {sid}: {exc}") from None
            s.network_ready = True
            ips = [ip.split("/")[0] for ip in getattr(result, "ips", [])]
            if ips:
                s.ip, s.additional_ips = ips[0], ips[1:]
                host.write_file(root / "hosts", hosts_file(hostname, s.ip))
        try:
            pending.finish()
        except spawn.MonitorError as exc:
            raise errors.InvalidArgument(f"sandbox setup failed: {exc}") from None
        svc.sandboxes.save(s)
        undo.pop_all()
    log.info("rpc=RunPodSandbox pod=%s/%s uid=%s sandbox=%s", md.namespace, md.name, md.uid, sid)
    return api_pb2.RunPodSandboxResponse(pod_sandbox_id=sid)


def _quiet(fn: Any) -> None:
    try:
        fn()
    except Exception:
        log.exception("undo step failed")
