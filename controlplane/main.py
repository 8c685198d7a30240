"""`skiff controlplane`: run the API server, the schedulers and the controller manager.

Opens the store (SQLite under --data-dir, or etcd), makes sure the PKI,
token secret, `<data-dir>/admin.conf` (admin credential for skiff's
clients), `<data-dir>/kubeconfig` (the same credential as a standard
kubeconfig, for kubectl) and `<data-dir>/join-token` exist (a bootstrap
token made at first start, with no expiry; `skiff token delete` revokes it),
serves the API over TLS on --listen (the Kubernetes REST API, and skiff's
gRPC API on the same port; --grpc-listen adds a port of gRPC's own), then
starts the components (scheduler, batch scheduler, controllers),
each with its own identity and least-privilege role, never the admin's
(apiserver/rbaccomponents.py): `<data-dir>/{scheduler,volcano-scheduler,
controller-manager}.conf` are their kubeconfigs (0600), which the same
components read when run as processes of their own (`--kubeconfig`).
With --component-processes (the default where this process may use 2 CPUs
or more) each component runs so, as a child process of this one (as kubeadm
runs kube-scheduler and kube-controller-manager beside kube-apiserver),
started once the API server answers, restarted with a backoff when it
exits, stopped with it (supervisor.py): the components then use more cores
than the one this process's GIL allows. --no-component-processes (the
default on one CPU) runs them as threads here.
SIGTERM/SIGINT stop everything cleanly, in reverse start order: the
components first (each releases its Lease, so a successor need not wait it
out), while the API server still serves their last writes, then the API
server and the store. A damaged database is a clear refusal to start (exit
status 1), never a silent reset. Before the store opens (dataprep.py) the
data dir is locked (one control plane per directory), --cluster-reset
restores a snapshot, and an older data dir is migrated (a newer refused).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import ipaddress
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controlplane import dataprep
from controlplane.api.bootstraptoken import split
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.bootstrap import BootstrapJoin
from controlplane.apiserver.pkifiles import open_front_proxy, open_pki
from controlplane.apiserver.rbaccomponents import COMPONENTS, CONTROLLER_MANAGER
from controlplane.apiserver.server import ApiServer, ApiServerConfig
from controlplane.client.config import ClientConfig, write_config
from controlplane.client.errors import ApiError
from controlplane.client.kubeconfig import write_kubeconfig
from controlplane.componentprocs import (
    PROCESS_MODULES,
    check_components,
    component_processes,
    secure_serving,
    use_processes,
)
from controlplane.datadir import DataDirError, DataDirLock
from controlplane.main_flags import DEFAULT_TOKEN_TTL, METRICS_SERVER, flag_problem
from controlplane.main_flags import build_parser as build_parser  # `skiff controlplane`'s flags
from controlplane.storage.interface import CorruptStore, Store, StoreUnavailable
from controlplane.supervisor import Supervisor
from machinery.atomicfile import write_private
from machinery.onecpu import OneCpu
from machinery.signals import StopSignals

log = logging.getLogger("skiff.controlplane")


# In-process components started once the API server serves, in this order:
# A component is called as function(client: ApiClient, stop: threading.Event)
# and must return promptly (starting its own threads) and stop when `stop`
# is set; the thread it returns ends when it has stopped (its Lease
# released). Each runs leader-elected, so several control planes on one etcd
# never both act.
Component = Callable[[Any, threading.Event], threading.Thread | None]
# How long stopping waits for the in-process components, all together.
COMPONENT_STOP_GRACE = 10.0


@dataclass
class StartedComponent:
    name: str
    stop: threading.Event
    thread: threading.Thread | None


def components(args: argparse.Namespace) -> list[tuple[str, Component]]:
    """The in-process components, built from the flags."""
    from controlplane.controllers import manager
    from controlplane.controllers.config import config_from_args
    from controlplane.scheduler import run as scheduler
    from controlplane.scheduler.batch import run as batch_scheduler

    data_dir = Path(args.data_dir)
    return [
        ("scheduler", scheduler.component(args.scheduler_config, args.scheduler_metrics_listen,
                                          secure_serving("scheduler", args, data_dir))),
        ("volcano-scheduler", batch_scheduler.component(
            args.volcano_scheduler_config, args.volcano_metrics_listen,
            secure_serving("volcano-scheduler", args, data_dir))),
        ("controllers", manager.component(config_from_args(args),
                                          args.controller_metrics_listen,
                                          data_dir / CONTROLLER_MANAGER.kubeconfig,
                                          secure_serving("controllers", args, data_dir))),
    ]  # fmt: skip


def encryption_config(args: argparse.Namespace, data_dir: Path) -> str:
    """The EncryptionConfiguration to use: the flag's, or with --secrets-encryption
    the data directory's (made once with a random key), else none."""
    if args.encryption_provider_config:
        return str(args.encryption_provider_config)
    if args.secrets_encryption:
        from controlplane.storage.encryption import ensure_config

        return str(ensure_config(data_dir))
    return ""


def open_store(args: argparse.Namespace, data_dir: Path) -> Store:
    if args.store == "etcd":
        from controlplane.storage.etcd import EtcdStore

        endpoints = [e for e in args.etcd_endpoints.split(",") if e.strip()]
        if not endpoints:
            raise StoreUnavailable("--store etcd needs --etcd-endpoints")
        return EtcdStore(endpoints, root=args.etcd_prefix, retention=args.history)
    from controlplane.storage.sqlite import SqliteStore

    return SqliteStore(data_dir / "state.db", retention=args.history)


def _advertise(listen: str, port: int, advertise: str) -> str:
    if advertise:
        return advertise if ":" in advertise else f"{advertise}:{port}"
    host = listen.rsplit(":", 1)[0].strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def in_cluster_names(service_cidr: str, advertise: str = "") -> list[str]:
    """The serving certificate's names for in-cluster clients, as
    kube-apiserver has them: the `kubernetes` Service's address (the first of
    the service CIDR, where KUBERNETES_SERVICE_HOST points), its DNS names,
    and the advertised address (the `kubernetes` Endpoints)."""
    try:
        service_ip = str(ipaddress.ip_network(service_cidr, strict=False)[1])
    except ValueError:
        return []  # the API server refuses the bad CIDR itself, with the reason
    names = [service_ip, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local"]  # fmt: skip
    host = advertise
    if host.startswith("["):  # [v6]:port
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:  # v4 or name, with a port
        host = host.split(":", 1)[0]
    return [*names, host] if host else names


def write_credentials(
    data_dir: Path, server: str, ca_pem: bytes, admin: str, grpc: str = ""
) -> None:
    """Both name the REST address (`server`, which serves gRPC too) and, with
    --grpc-listen, the gRPC-only one beside it (admin.conf's grpc-server, the
    kubeconfig's skiff.dev/grpc extension)."""
    write_config(data_dir / "admin.conf", ClientConfig(server, ca_pem, admin, grpc_server=grpc))
    write_kubeconfig(data_dir / "kubeconfig", server, ca_pem, admin, grpc)


def write_component_credentials(
    data_dir: Path, server: str, ca_pem: bytes, authority: TokenAuthority, grpc: str = ""
) -> dict[str, str]:
    """Each component's kubeconfig (its own user's token, 0600) in the data
    directory; returns component name -> token."""
    tokens: dict[str, str] = {}
    for c in COMPONENTS:
        token = authority.user_token(c.user)
        write_kubeconfig(data_dir / c.kubeconfig, server, ca_pem, token, grpc, user=c.user)
        tokens[c.component] = token
    return tokens


def ensure_join_token(
    data_dir: Path,
    joins: BootstrapJoin,
    ttl: datetime.timedelta | None = DEFAULT_TOKEN_TTL,
    announce: TextIO | None = None,
    server: str = "",
) -> str:
    """`<data-dir>/join-token`: the bootstrap token made at first start, expiring
    after `ttl` (None: never), as kubeadm's first token does, and printed to
    `announce` with the command a node joins with (as `kubeadm init` prints
    its `kubeadm join`). Kept as it is afterwards, even once expired or
    revoked (its Secret deleted), so deleting it with `skiff token delete`
    stays a revocation across restarts; make another with `skiff token create`."""
    path = data_dir / "join-token"
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = ""
    if split(existing) is not None:
        return existing
    # First start (or a join token of the old, never-expiring HMAC kind).
    token = joins.create(ttl, f"skiff controlplane's join token ({path})")
    write_private(path, token + "\n")
    if announce is not None:
        lasts = f"expires in {_duration(ttl)}" if ttl else "never expires"
        announce.write(
            f"skiff controlplane: join nodes with this bootstrap token ({lasts}; also in {path}):\n"
            f"  skiff agent --server {server or '<this address>'} --token {token} "
            f"--ca-file {data_dir / 'pki' / 'ca.crt'}\n"
        )
        announce.flush()
    return token


def _duration(ttl: datetime.timedelta) -> str:
    seconds = int(ttl.total_seconds())
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# The name each component's writes are recorded for in managedFields.
FIELD_MANAGERS = {
    "scheduler": "kube-scheduler",
    "volcano-scheduler": "vc-scheduler",
    "controllers": "kube-controller-manager",
}


def start_components(
    clients: dict[str, Any], started: list[StartedComponent], args: argparse.Namespace
) -> None:
    """Start each component not disabled with its own client (`clients` by
    name) and its own stop event, appending it to `started` in start order."""
    for name, func in components(args):
        if name in args.disable:
            log.info("component=%s disabled", name)
            continue
        log.info("component=%s starting", name)
        stop = threading.Event()
        try:
            thread = func(clients[name], stop)
        except ValueError as err:  # a component's configuration refused, with the reason
            raise StartError(f"{name}: refusing to start: {err}") from err
        started.append(StartedComponent(name, stop, thread))


class StartError(Exception):
    """The control plane cannot start (damaged database, store unreachable, port taken)."""


@dataclass
class RunningControlPlane:
    """A started control plane, for `main` and for embedding (`skiff up`, tests)."""

    server: ApiServer
    store: Store
    address: str
    admin: ClientConfig
    join_token: str
    data_dir: Path
    stop_event: threading.Event
    # The in-process components' clients, by component name, each with its identity.
    clients: dict[str, Any] = field(default_factory=dict)
    # With --component-processes: the components' processes.
    supervisor: Supervisor | None = None
    # The in-process components, in start order.
    components: list[StartedComponent] = field(default_factory=list)
    lock: DataDirLock | None = None  # the data directory's, released last

    def stop(self) -> None:
        """Stop in reverse start order: the components (processes or threads)
        while the API still serves their last writes (their Leases released),
        then the API server, then the store."""
        if self.supervisor is not None:
            self.supervisor.stop()
        deadline = time.monotonic() + COMPONENT_STOP_GRACE
        for started in reversed(self.components):
            began = time.monotonic()
            started.stop.set()
            if started.thread is not None:
                started.thread.join(max(0.0, deadline - began))
                if started.thread.is_alive():
                    log.warning("component=%s did not stop in time; stopping the rest",
                                started.name)  # fmt: skip
            log.info("component=%s stopped in %.1fs", started.name, time.monotonic() - began)
        began = time.monotonic()
        self.stop_event.set()
        self.server.stop()
        log.info("API server stopped in %.1fs", time.monotonic() - began)
        for client in self.clients.values():
            client.close()
        self.store.close()
        if self.lock is not None:
            self.lock.release()


def start(args: argparse.Namespace) -> RunningControlPlane:
    """Open the store, serve the API, write credentials, start the components."""
    problem = flag_problem(args)  # also for `skiff up`'s embedded control plane
    if problem:
        raise StartError(problem)
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(data_dir, 0o700)  # the database holds Secrets; pki/ holds keys
    sans = [args.listen.rsplit(":", 1)[0].strip("[]"), *args.tls_san,
            *in_cluster_names(args.service_cidr, args.advertise_address)]  # fmt: skip
    try:  # the lock, --cluster-reset, the version record, the PKI, the store, a migration
        lock, pki, store = dataprep.open_data_dir(args, data_dir, lambda: open_pki(data_dir, sans),
                                                  lambda: open_store(args, data_dir))  # fmt: skip
        front_proxy = open_front_proxy(data_dir)
    except (CorruptStore, StoreUnavailable, DataDirError) as err:
        raise StartError(str(err)) from err
    # The CSR signers sign with the cluster CA unless told otherwise (as k3s
    # passes its CA to kube-controller-manager's --cluster-signing-*-file).
    if not getattr(args, "cluster_signing_cert_file", "x"):
        args.cluster_signing_cert_file = str(data_dir / "pki" / "ca.crt")
        args.cluster_signing_key_file = str(data_dir / "pki" / "ca.key")
    config = ApiServerConfig(listen=args.listen, service_cidr=args.service_cidr,
                             bookmark_interval=args.bookmark_interval,
                             max_workers=args.max_workers, rest=True, metrics=args.metrics,
                             grpc_listen=args.grpc_listen,
                             socket_dir=str(data_dir),
                             audit_log_path=args.audit_log_path,
                             audit_log_max_bytes=args.audit_log_maxsize << 20,
                             audit_log_backups=args.audit_log_maxbackup,
                             audit_policy_file=args.audit_policy_file,
                             advertise_address=args.advertise_address,
                             admission_config_file=args.admission_control_config_file,
                             encryption_provider_config=encryption_config(args, data_dir),
                             metrics_api=METRICS_SERVER not in args.disable)  # fmt: skip
    try:
        server = ApiServer(store, config, pki, front_proxy)
    except ValueError as err:  # a bad audit policy, admission or encryption configuration
        store.close()
        lock.release()
        raise StartError(str(err)) from err
    try:
        port = server.start()
    except OSError as err:
        store.close()
        lock.release()
        raise StartError(str(err)) from err
    assert server.authority is not None and server.joins is not None
    address = _advertise(args.listen, port, args.advertise_address)
    grpc_address = ""
    if args.grpc_listen:
        grpc_host = _advertise(args.listen, port, args.advertise_address).rsplit(":", 1)[0]
        grpc_address = f"{grpc_host}:{server.grpc_port}"
    admin = ClientConfig(address, pki.ca_pem, server.authority.admin_token(),
                         data_dir / "admin.conf", grpc_address)  # fmt: skip
    try:
        join_token = ensure_join_token(data_dir, server.joins, args.token_ttl, sys.stderr, address)
    except (ApiError, OSError) as err:
        server.stop()
        store.close()
        lock.release()
        raise StartError(f"cannot make the join token: {err}") from err
    # admin.conf last: readers take it to mean the other credentials are there.
    tokens = write_component_credentials(
        data_dir, address, pki.ca_pem, server.authority, grpc_address
    )
    write_credentials(data_dir, address, pki.ca_pem, admin.token, grpc_address)
    log.info("serving on %s; admin credential in %s", address, data_dir / "admin.conf")
    running = RunningControlPlane(server, store, address, admin, join_token, data_dir,
                                  threading.Event(), lock=lock)  # fmt: skip
    dataprep.start_snapshots(args, data_dir, running.stop_event)
    # The names alone: building the components imports them, which a process
    # that runs them as processes of their own (or none) never needs.
    enabled = [name for name in PROCESS_MODULES if name not in args.disable]
    if enabled and use_processes(args.component_processes):
        try:
            try:
                check_components(enabled, args)
            except ValueError as err:  # as the in-process components refuse theirs
                raise StartError(str(err)) from err
            answers(server.grpc_socket, admin.token)
        except StartError:
            running.stop()
            raise
        running.supervisor = Supervisor(
            component_processes(enabled, args, data_dir, server.grpc_socket)
        )
        running.supervisor.start()
        supervisor = running.supervisor
        for name in enabled:
            _probe(running, name, functools.partial(_child_runs, supervisor, name))
    elif enabled:
        from controlplane.client.apiclient import connect

        # In-process components reach the gRPC server on its private socket,
        # each as itself.
        for name in enabled:
            running.clients[name] = connect(
                ClientConfig(f"unix:{server.grpc_socket}", token=tokens[name]),
                field_manager=FIELD_MANAGERS.get(name, name),
                lean_watches=True,  # no component reads managedFields
            )
        try:
            start_components(running.clients, running.components, args)
        except StartError:
            running.stop()  # nothing half-started is left serving
            raise
        for started in running.components:
            _probe(running, started.name, functools.partial(_thread_runs, started.thread))
    return running


def _child_runs(supervisor: Supervisor, name: str) -> bool:
    return name in supervisor.pids()


def _thread_runs(thread: threading.Thread | None) -> bool:
    return thread is not None and thread.is_alive()


# The ComponentStatus names of the components (`kubectl get cs`).
COMPONENT_STATUS_NAMES = {"scheduler": "scheduler", "controllers": "controller-manager"}


def _probe(running: RunningControlPlane, name: str, alive: Callable[[], bool]) -> None:
    """Let `kubectl get componentstatuses` ask whether component `name` runs."""
    status_name = COMPONENT_STATUS_NAMES.get(name)
    rest = running.server.rest
    if status_name is not None and rest is not None:
        rest.server.components[status_name] = lambda: "" if alive() else "not running"


def answers(socket: str, token: str) -> None:
    """Wait until the API server answers on its private socket (StartError if it does not)."""
    from controlplane.client.apiclient import connect

    with connect(ClientConfig(f"unix:{socket}", token=token), timeout=30) as client:
        try:
            client.whoami()
        except ApiError as err:
            raise StartError(f"the API server does not answer: {err}") from err


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    problem = flag_problem(args)
    if problem:
        print(f"skiff controlplane: {problem}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    stop = StopSignals()  # before start: a signal while starting is kept
    # Before start: every thread started from here on inherits the one CPU.
    cpu = OneCpu()
    if args.one_cpu:
        cpu.start()
    try:
        try:
            running = start(args)
        except StartError as err:
            print(f"skiff controlplane: {err}", file=sys.stderr)
            return 1
        print(f"skiff controlplane: serving on {running.address}", file=sys.stderr, flush=True)
        stop.wait_in_main()
        log.info("signal %s: shutting down", stop.signum)
        running.stop()
        return 0
    finally:
        cpu.stop()


if __name__ == "__main__":
    sys.exit(main())
