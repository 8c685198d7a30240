"""Assembles the API server: store → registry → broadcaster → gRPC.

`ApiServer(config).start()` opens nothing itself: it is handed a Store, makes
sure the built-in objects exist (namespaces default, kube-system,
kube-public, kube-node-lease; the system-* PriorityClasses), starts the watch
broadcaster and the namespace cleaner, and serves the Objects and Auth
services on `config.listen`, with TLS when given a Pki. It never opens the
store or writes credentials (see controlplane.main).
"""

from __future__ import annotations

import ipaddress
import logging
from concurrent import futures
from dataclasses import dataclass

import grpc

from controlplane.apiserver.admission import SYSTEM_PRIORITY_CLASSES, default_admission
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.namespaces import NamespaceCleaner
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.servicer import AuthServicer, ObjectsServicer
from controlplane.apiserver.tls import Pki
from controlplane.apiserver.watch import Broadcaster
from controlplane.client.errors import AlreadyExists, NotFound
from controlplane.storage.interface import Store
from proto.controlplane.v1 import api_pb2_grpc

log = logging.getLogger(__name__)

BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
MAX_MESSAGE = 1 << 30


@dataclass(frozen=True)
class ApiServerConfig:
    listen: str = "127.0.0.1:0"
    max_workers: int = 512
    service_cidr: str = "10.43.0.0/16"
    watch_queue: int = 10_000
    bookmark_interval: float = 5.0
    namespace_retry: float = 1.0


class ApiServer:
    def __init__(self, store: Store, config: ApiServerConfig, pki: Pki | None = None) -> None:
        self.store = store
        self.config = config
        self.pki = pki
        self.authority = TokenAuthority(pki.token_secret) if pki else None
        self.registry = Registry(store, admission=default_admission(config.service_cidr))
        self.broadcaster = Broadcaster(store, config.watch_queue, config.bookmark_interval)
        self.cleaner = NamespaceCleaner(self.registry, config.namespace_retry)
        self._server: grpc.Server | None = None
        self.port = 0

    def bootstrap(self) -> None:
        """Create the built-in objects that are missing."""
        for name in BUILTIN_NAMESPACES:
            try:
                self.registry.create("Namespace", {"metadata": {"name": name}})
            except AlreadyExists:
                pass
        for name, value in SYSTEM_PRIORITY_CLASSES.items():
            try:
                self.registry.create(
                    "PriorityClass",
                    {"metadata": {"name": name}, "value": value,
                     "description": "built-in system priority class"},
                )  # fmt: skip
            except AlreadyExists:
                pass
        try:  # Volcano's default queue: Jobs and PodGroups name it unless told otherwise
            self.registry.create(
                "Queue",
                {"metadata": {"name": "default"}, "spec": {"weight": 1, "reclaimable": True}},
            )
        except AlreadyExists:
            pass
        # The cluster DNS address (the tenth of the service range, as
        # kube-dns has it), reserved so no user Service takes it; every
        # agent answers DNS on it for its own pods.
        dns_ip = str(ipaddress.ip_network(self.config.service_cidr)[10])
        try:
            self.registry.get_object("Service", "kube-dns", "kube-system")
        except NotFound:
            self.registry.create(
                "Service",
                {"metadata": {"name": "kube-dns", "namespace": "kube-system",
                              "labels": {"k8s-app": "kube-dns"}},
                 "spec": {"clusterIP": dns_ip, "ports": [
                     {"name": "dns", "port": 53, "protocol": "UDP"},
                     {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
            )  # fmt: skip

    def start(self) -> int:
        self.bootstrap()
        self.broadcaster.start()
        self.broadcaster.add_listener(self.cleaner.on_event)
        self.cleaner.start()
        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=self.config.max_workers, thread_name_prefix="api"
            ),
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
                ("grpc.so_reuseport", 0),
            ],
        )
        api_pb2_grpc.add_ObjectsServicer_to_server(
            ObjectsServicer(self.registry, self.broadcaster, self.authority), server
        )
        api_pb2_grpc.add_AuthServicer_to_server(
            AuthServicer(self.authority, self.pki.ca_pem if self.pki else b""), server
        )
        if self.pki is not None:
            creds = grpc.ssl_server_credentials([(self.pki.key_pem, self.pki.cert_pem)])
            self.port = server.add_secure_port(self.config.listen, creds)
        else:
            self.port = server.add_insecure_port(self.config.listen)
        if self.port == 0:
            raise OSError(f"cannot listen on {self.config.listen}")
        server.start()
        self._server = server
        log.info("api server listening on %s (port %d)", self.config.listen, self.port)
        return self.port

    def wait(self) -> None:
        if self._server is not None:
            self._server.wait_for_termination()

    def stop(self, grace: float = 2.0) -> None:
        # Watch streams end first (cleanly: clients re-watch elsewhere or later),
        # then in-flight unary calls get `grace` seconds.
        self.broadcaster.stop()
        if self._server is not None:
            self._server.stop(grace)
        self.cleaner.stop()
        if self._server is not None:
            self._server.wait_for_termination(grace + 1)
            self._server = None
