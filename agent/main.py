"""`skiff agent`: flags, credentials, then the agent until SIGTERM/SIGINT.

Credentials: `--credentials FILE` (a client config with server, CA and a
node token), or `--token JOIN_TOKEN --ca-file CA.pem --server HOST:PORT`,
exchanged once for a node credential that is kept in `<root>/node.conf` for
restarts. A control plane that cannot be reached is retried with backoff
and a log line per try; the agent never exits because of it.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import socket
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from agent import serving_tls
from agent.agent import Agent, AgentConfig
from agent.client_certificate import CertificateManager, certificate_current
from agent.container_gc import ContainerGCPolicy
from agent.cri_client import CRIClient
from agent.eviction import thresholds
from agent.image_gc import ImageGCPolicy
from agent.ingress.haproxy import IngressSettings
from agent.netpol import NetpolSettings
from agent.netpol.plan import netpol_table
from agent.network import NetworkSettings
from agent.node_resources import ResourceSettings
from agent.node_status import NodeConfig
from agent.pod_config import DEFAULT_SECCOMP_ROOT, NodeSettings
from agent.proxy import DnsSettings, ProxySettings
from agent.proxy.local_address import DEFAULT_IFNAME
from agent.proxy.rules import DEFAULT_PREFIX, Chains
from agent.serving_certificate import ServingCertificateManager
from controlplane.api.quantity import parse_quantity
from controlplane.client import errors
from controlplane.client.agents import agent_csr
from controlplane.client.apiclient import connect, join_node
from controlplane.client.config import ClientConfig, ConfigError, load_config, write_config
from machinery.signals import StopSignals

log = logging.getLogger("skiff.agent")

DEFAULT_AGENT_PORT = 10250


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skiff agent", description="Run the skiff node agent.")
    p.add_argument("--server", default="127.0.0.1:6443", help="control plane address HOST:PORT")
    p.add_argument(
        "--token", default=os.environ.get("SKIFF_JOIN_TOKEN", ""), help="cluster join token"
    )
    p.add_argument("--ca-file", help="PEM of the control plane's CA (with --token)")
    p.add_argument("--credentials", help="client config file with a node (or admin) credential")
    p.add_argument(
        "--rotate-certificates",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after joining with --token, prove who the node is with a client certificate "
        "from the CertificateSigningRequest API and renew it before it expires (the kubelet's "
        "rotateCertificates); not with --credentials",
    )
    p.add_argument(
        "--client-certificate-seconds",
        type=int,
        default=0,
        help="the lifetime to ask for (expirationSeconds, at least 600; 0: the signer's, a year)",
    )
    p.add_argument("--rotate-server-certificates", action=argparse.BooleanOptionalAction,
                   default=True, help="renew the endpoint's serving certificate through the "
                   "CertificateSigningRequest API (kubernetes.io/kubelet-serving) before it "
                   "expires (the kubelet's serverTLSBootstrap); not with --credentials")  # fmt: skip
    p.add_argument(
        "--server-certificate-seconds",
        type=int,
        default=0,
        help="the serving certificate's lifetime to ask for (at least 600; 0: a year)",
    )
    p.add_argument("--node-name", default=socket.gethostname().split(".")[0].lower())
    p.add_argument(
        "--node-ip", default="", help="this node's address (default: the route to --server)"
    )
    p.add_argument("--node-labels", default="", help="k=v,k2=v2 added to the Node")
    p.add_argument("--register-with-taints", default="", help="key=value:Effect,... on the Node")
    p.add_argument("--runtime-endpoint", default="unix:///run/skiff/cri.sock")
    p.add_argument(
        "--runtime-name", default="", help="prefix of containerIDs (default: from CRI Version)"
    )
    p.add_argument("--root-dir", default="/var/lib/skiff/agent")
    p.add_argument(
        "--local-path-root",
        default="",
        help="where the skiff.io/local-path provisioner keeps volumes (default <root-dir>/local-path)",
    )
    p.add_argument(
        "--seccomp-profile-root",
        default=str(DEFAULT_SECCOMP_ROOT),
        help="a pod's seccompProfile.localhostProfile is a path under here (the runtime's"
        " --seccomp-profile-root)",
    )
    p.add_argument("--pod-log-dir", default="/var/log/pods")
    p.add_argument("--cgroup-root", default="/skiff/pods", help="parent cgroup of every pod")
    p.add_argument(
        "--cluster-dns",
        default="10.43.0.10",
        help="DNS server IP for pods; the agent serves cluster DNS on it ('' for none)",
    )
    p.add_argument(
        "--dns-interface",
        default=DEFAULT_IFNAME,
        help="dummy interface that holds the --cluster-dns address (one per agent on a host)",
    )
    p.add_argument("--cluster-domain", default="cluster.local")
    p.add_argument("--max-pods", type=int, default=110)
    p.add_argument(
        "--system-reserved", default="", help="cpu=100m,memory=256Mi kept from allocatable"
    )
    p.add_argument("--cni-conf-dir", default="/etc/cni/net.d")
    p.add_argument("--cni-bin-dir", default="/opt/cni/bin")
    p.add_argument("--cni-backend", choices=("host-gw", "vxlan"), default="host-gw")
    p.add_argument("--cni-bridge", default="skiff0")
    p.add_argument(
        "--cni-network-name", default="skiff", help="name of the CNI network the agent writes"
    )
    p.add_argument("--no-cni-config", action="store_true", help="do not write the CNI config")
    p.add_argument(
        "--listen", default="0.0.0.0:10250", help="agent endpoint (logs, stats); '' for none"
    )
    p.add_argument("--cluster-cidr", default="10.244.0.0/16", help="pod network of the cluster")
    p.add_argument("--no-proxy", action="store_true", help="do not program service rules")
    p.add_argument(
        "--ingress-http-port",
        type=int,
        default=80,
        help="port of the built-in ingress controller's HTTP (0: no ingress on this node)",
    )
    p.add_argument("--ingress-https-port", type=int, default=443)
    p.add_argument(
        "--disable-network-policy",
        action="store_true",
        help="do not enforce NetworkPolicies (k3s' flag of that name)",
    )
    p.add_argument(
        "--iptables-chain-prefix",
        default=DEFAULT_PREFIX,
        help="the service proxy's chains are PREFIX-SERVICES, PREFIX-SVC-..., ...;"
        " another prefix (up to 10 letters and digits) for each agent on a host",
    )
    p.add_argument("--workers", type=int, default=4)
    p.add_argument(
        "--pod-manifest-path",
        default="",
        help="directory of static pod manifests, re-read every 5 s ('' for none)",
    )
    add_resource_flags(p)
    p.add_argument("--log-level", default=os.environ.get("SKIFF_LOG_LEVEL", "INFO"))
    return p


def add_resource_flags(p: argparse.ArgumentParser) -> None:
    """The kubelet's node resource management flags, with its defaults."""
    p.add_argument(
        "--kube-reserved", default="", help="cpu=100m,memory=256Mi kept for skiff from allocatable"
    )
    p.add_argument(
        "--cgroups-per-qos",
        default="true",
        choices=("true", "false"),
        help="keep the QoS cgroup tree (burstable, besteffort) under --cgroup-root",
    )
    p.add_argument(
        "--enforce-node-allocatable",
        default="pods",
        help="'pods': the pods' cgroup is capped at allocatable; 'none': not",
    )
    p.add_argument(
        "--eviction-hard",
        default=None,
        # argparse formats help with %: the default's "10%" must be "10%%"
        help=f"signal<quantity|percent,... (default {thresholds.DEFAULT_HARD.replace('%', '%%')})",
    )
    p.add_argument("--eviction-soft", default="", help="signal<quantity|percent,...")
    p.add_argument("--eviction-soft-grace-period", default="", help="signal=duration,...")
    p.add_argument("--eviction-minimum-reclaim", default="", help="signal=quantity|percent,...")
    p.add_argument("--eviction-pressure-transition-period", default="5m0s")
    p.add_argument("--eviction-max-pod-grace-period", type=int, default=0)
    p.add_argument("--image-gc-high-threshold", type=int, default=85)
    p.add_argument("--image-gc-low-threshold", type=int, default=80)
    p.add_argument("--image-minimum-gc-age", default="2m0s")
    p.add_argument("--maximum-dead-containers-per-container", type=int, default=1)
    p.add_argument("--maximum-dead-containers", type=int, default=-1)
    p.add_argument("--minimum-container-ttl-duration", default="0s")
    p.add_argument("--container-gc-period", default="1m0s", help="how often dead containers go")
    p.add_argument("--image-gc-period", default="5m0s", help="how often image GC looks")
    p.add_argument(
        "--pleg-unhealthy-threshold",
        default="3m0s",
        help="no relist completed for this long: the node is NotReady (PLEG is not healthy)",
    )


def resource_settings(args: argparse.Namespace) -> ResourceSettings:
    """The flags above, checked; SystemExit naming the flag if one is bad."""
    try:
        eviction = thresholds.parse_config(
            hard=args.eviction_hard,
            soft=args.eviction_soft,
            soft_grace=args.eviction_soft_grace_period,
            minimum_reclaim=args.eviction_minimum_reclaim,
            pressure_transition=args.eviction_pressure_transition_period,
            max_pod_grace_period=args.eviction_max_pod_grace_period,
        )
        image_gc = ImageGCPolicy(
            high_threshold=args.image_gc_high_threshold,
            low_threshold=args.image_gc_low_threshold,
            minimum_age=_duration("--image-minimum-gc-age", args.image_minimum_gc_age),
        )
        container_gc = ContainerGCPolicy(
            max_per_container=args.maximum_dead_containers_per_container,
            min_age=_duration(
                "--minimum-container-ttl-duration", args.minimum_container_ttl_duration
            ),
            max_containers=args.maximum_dead_containers,
        )
        container_gc_period = _period("--container-gc-period", args.container_gc_period)
        image_gc_period = _period("--image-gc-period", args.image_gc_period)
    except ValueError as err:
        raise SystemExit(f"skiff agent: {err}") from None
    if args.enforce_node_allocatable not in ("pods", "none", ""):
        raise SystemExit(
            f"skiff agent: --enforce-node-allocatable {args.enforce_node_allocatable!r}:"
            " want pods or none"
        )
    return ResourceSettings(
        eviction=eviction,
        image_gc=image_gc,
        container_gc=container_gc,
        container_gc_period=container_gc_period,
        image_gc_period=image_gc_period,
    )


def _period(flag: str, text: str) -> float:
    """A positive duration (a period of zero would spin)."""
    seconds = _duration(flag, text)
    if seconds <= 0:
        raise ValueError(f"{flag} {text!r}: must be more than 0s")
    return seconds


def pleg_threshold(args: argparse.Namespace) -> float:
    """--pleg-unhealthy-threshold in seconds; SystemExit naming the flag if bad."""
    try:
        return _period("--pleg-unhealthy-threshold", args.pleg_unhealthy_threshold)
    except ValueError as err:
        raise SystemExit(f"skiff agent: {err}") from None


def _duration(flag: str, text: str) -> float:
    try:
        return thresholds.parse_duration(text)
    except ValueError as err:
        raise ValueError(f"{flag}: {err}") from None


def _pairs(text: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"skiff agent: {what}: {item!r} is not key=value")
        out[key] = value
    return out


def _taints(text: str) -> list[dict[str, str]]:
    taints = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        kv, sep, effect = item.rpartition(":")
        if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise SystemExit(
                f"skiff agent: --register-with-taints: {item!r} needs key[=value]:NoSchedule|PreferNoSchedule|NoExecute"
            )
        key, _, value = kv.partition("=")
        taints.append({"key": key, "value": value, "effect": effect})
    return taints


def reservations(args: argparse.Namespace) -> tuple[int, int]:
    """(millicpu, memory bytes) of --system-reserved plus --kube-reserved."""
    cpu = mem = 0
    for flag, text in (
        ("--system-reserved", args.system_reserved),
        ("--kube-reserved", args.kube_reserved),
    ):
        for name, value in _pairs(text, flag).items():
            if name not in ("cpu", "memory", "ephemeral-storage", "pid"):
                raise SystemExit(f"skiff agent: {flag}: unknown resource {name!r}")
            try:
                q = parse_quantity(value)
            except ValueError as err:
                raise SystemExit(f"skiff agent: {flag}: {name}={value}: {err}") from None
            if name == "cpu":
                cpu += int(q * 1000)
            elif name == "memory":
                mem += int(q)
    return cpu, mem


def hard_memory(res: ResourceSettings) -> int:
    """The hard memory.available threshold in bytes (taken from allocatable)."""
    th = res.eviction.hard(thresholds.MEMORY_AVAILABLE) if res.eviction else None
    return th.value.of(psutil.virtual_memory().total) if th else 0


def hard_nodefs_fraction(res: ResourceSettings, root: str) -> float:
    th = res.eviction.hard(thresholds.NODEFS_AVAILABLE) if res.eviction else None
    if th is None:
        return 0.0
    if th.value.percentage is not None:
        return th.value.percentage
    path = root
    while not os.path.exists(path):
        path = os.path.dirname(path) or "/"
    total = shutil.disk_usage(path).total
    return th.value.of(total) / total if total else 0.0


def listen_port(listen: str) -> int:
    """The port of `--listen HOST:PORT` that the Node advertises
    (daemonEndpoints); the default 10250 when none or 0."""
    _, _, port = listen.rpartition(":")
    try:
        return int(port) or DEFAULT_AGENT_PORT
    except ValueError:
        return DEFAULT_AGENT_PORT


def route_source(server: str) -> str:
    """The local address the kernel would use to reach `server`."""
    host = server.rsplit(":", 1)[0].strip("[]") or "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def host_dns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    servers, searches = [], []
    try:
        for line in Path("/etc/resolv.conf").read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "nameserver":
                servers.append(parts[1])
            elif parts and parts[0] in ("search", "domain"):
                searches.extend(parts[1:])
    except OSError:
        pass
    return tuple(servers), tuple(searches)


def obtain_credentials(args: argparse.Namespace, root: Path, stop: threading.Event) -> ClientConfig:
    if args.credentials:
        return load_config(args.credentials).with_server(
            args.server if args.server != "127.0.0.1:6443" else None
        )
    saved = root / "node.conf"
    if saved.exists():
        cfg = load_config(saved)
        if cfg.server == args.server:
            if cfg.cert_pem and not certificate_current(cfg.cert_pem):
                # TLS would refuse an expired certificate outright: start with
                # the node's token and let the manager ask for a new one.
                log.warning(
                    "node=%s client certificate expired; using the node token", args.node_name
                )
                cfg = cfg.with_certificate(b"", b"")
            return cfg
    if not args.token or not args.ca_file:
        raise ConfigError("give --credentials FILE, or --token JOIN_TOKEN with --ca-file CA.pem")
    ca_pem = Path(args.ca_file).read_bytes()
    delay = 0.5
    while True:
        try:
            # The agent endpoint's serving certificate comes with the credential.
            address = args.node_ip or route_source(args.server)
            csr, key = agent_csr(args.node_name, [address])
            cfg, cert = join_node(args.server, ca_pem, args.token, args.node_name, csr)
            root.mkdir(parents=True, exist_ok=True)
            if cert:
                serving_tls.save(root, cert, key)
            write_config(saved, cfg)
            log.info("node=%s joined the cluster at %s", args.node_name, args.server)
            return cfg
        except errors.Unavailable as err:
            log.warning(
                "control plane %s unreachable (%s); retrying in %.1fs", args.server, err, delay
            )
        if stop.wait(delay):
            raise SystemExit(1)
        delay = min(delay * 2, 15.0)


@dataclass
class RunningAgent:
    """A started agent, for `main` and for embedding (`skiff up`)."""

    agent: Agent
    runtime: CRIClient

    def stop(self) -> None:
        try:
            self.agent.stop()
        finally:
            self.runtime.close()


def start(args: argparse.Namespace, stop: threading.Event) -> RunningAgent:
    """Obtain credentials, then build and start the agent; `stop` ends waits
    for the control plane. Raises ConfigError, OSError or ApiError if it
    cannot start."""
    try:
        Chains(args.iptables_chain_prefix)
    except ValueError as err:
        raise SystemExit(f"skiff agent: --iptables-chain-prefix: {err}") from None
    if not 0 < len(args.dns_interface) <= 15:
        raise SystemExit(f"skiff agent: --dns-interface {args.dns_interface!r}: 1-15 characters")
    resources = resource_settings(args)
    root = Path(args.root_dir)
    reserved = reservations(args)
    creds = obtain_credentials(args, root, stop)
    dns_ips = [ip for ip in args.cluster_dns.split(",") if ip]
    node_ip = args.node_ip or route_source(creds.server)
    dns_servers, dns_searches = host_dns()
    cfg = AgentConfig(
        node=NodeConfig(
            name=args.node_name,
            address=node_ip,
            labels=_pairs(args.node_labels, "--node-labels"),
            taints=_taints(args.register_with_taints),
            max_pods=args.max_pods,
            reserved_cpu_milli=reserved[0],
            reserved_memory=reserved[1],
            eviction_memory_available=hard_memory(resources),
            eviction_nodefs_available=hard_nodefs_fraction(resources, str(root)),
            fs_path=str(root),
            agent_port=listen_port(args.listen),
        ),
        root=root,
        pod_settings=NodeSettings(
            log_root=args.pod_log_dir,
            cluster_dns=tuple(filter(None, args.cluster_dns.split(","))),
            cluster_domain=args.cluster_domain,
            host_dns_servers=dns_servers,
            host_dns_searches=dns_searches,
            cgroup_root=args.cgroup_root,
            node_name=args.node_name,
            host_ip=node_ip,
        ),
        network=None
        if args.no_cni_config
        else NetworkSettings(
            conf_dir=Path(args.cni_conf_dir),
            bin_dir=Path(args.cni_bin_dir),
            bridge=args.cni_bridge,
            backend=args.cni_backend,
            ipam_dir=root / "ipam",
            name=args.cni_network_name,
        ),
        workers=args.workers,
        resources=resources,
        pleg_threshold=pleg_threshold(args),
        qos_cgroups=args.cgroups_per_qos == "true",
        enforce_node_allocatable=args.enforce_node_allocatable == "pods",
        pod_manifest_path=Path(args.pod_manifest_path) if args.pod_manifest_path else None,
        runtime_name=args.runtime_name,
        local_path_root=Path(args.local_path_root) if args.local_path_root else None,
        seccomp_root=Path(args.seccomp_profile_root).absolute(),
        listen=args.listen,
        proxy=None
        if args.no_proxy
        else ProxySettings(
            cluster_cidr=args.cluster_cidr,
            local_service_ips=frozenset(dns_ips),
            chain_prefix=args.iptables_chain_prefix,
        ),
        ingress=IngressSettings(
            state_dir=root / "ingress",
            http_port=args.ingress_http_port,
            https_port=args.ingress_https_port,
        )
        if args.ingress_http_port
        else None,
        netpol=None
        if args.disable_network_policy
        else NetpolSettings(table=netpol_table(args.iptables_chain_prefix)),
        dns=DnsSettings(
            listen_host=dns_ips[0], domain=args.cluster_domain, interface=args.dns_interface
        )
        if dns_ips
        else None,
    )
    api = connect(creds)
    runtime = CRIClient(args.runtime_endpoint)
    agent = Agent(cfg, api, runtime, api_config=creds)
    agent.stop_event = stop
    running = RunningAgent(agent, runtime)
    try:
        agent.start()
    except BaseException:
        running.stop()
        raise
    if args.rotate_certificates and not args.credentials:
        seconds = args.client_certificate_seconds
        CertificateManager(api, args.node_name, root / "node.conf", stop, seconds).start()
    if args.rotate_server_certificates and not args.credentials and serving_tls.have(root):
        addresses = [
            {"type": "InternalIP", "address": node_ip},
            {"type": "Hostname", "address": args.node_name},
        ]  # as its Node's status
        ServingCertificateManager(api, args.node_name, root, lambda: addresses, stop,
                                  args.server_certificate_seconds).start()  # fmt: skip
    return running


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    stop = StopSignals()  # the agent's loops end on it; set() by them wakes this thread too
    try:
        running = start(args, stop)
    except (ConfigError, OSError, errors.ApiError) as err:
        print(f"skiff agent: {err}", file=sys.stderr)
        return 1
    try:
        stop.wait_in_main()
    finally:
        running.stop()
    return 0
