"""Assembles the API server: store → registry → broadcaster → gRPC and REST.

`ApiServer(config).start()` opens nothing itself: it is handed a Store, makes
sure the built-in objects exist (namespaces default, kube-system,
kube-public, kube-node-lease; the system-* PriorityClasses; the default
StorageClass `local-path`), starts the watch
broadcaster and the namespace cleaner, and serves the Objects and Auth
services on `config.listen`, with TLS when given a Pki. With `config.rest`
the Kubernetes REST API serves `config.listen` and gRPC clients reaching it
are relayed to the gRPC server on a private unix socket (one port for both;
see rest/frontdoor.py); `config.grpc_listen` adds a direct gRPC port. It
never opens the store or writes credentials (see controlplane.main).
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from controlplane.api import apf_bootstrap, jsoncodec
from controlplane.api.kinds import UnknownKind, all_kinds, by_kind, withdraw_groups
from controlplane.api.kinds.metrics._usage import GROUP as METRICS_GROUP
from controlplane.api.kinds.scheduling.priorityclass import SYSTEM_PRIORITY_CLASSES
from controlplane.api.kinds.storage.storageclass import local_path_class
from controlplane.api.limits import MAX_BODY
from controlplane.apiserver import certificates
from controlplane.apiserver.admission import default_admission, default_plugins
from controlplane.apiserver.aggregator.availability import Aggregator
from controlplane.apiserver.aggregator.frontproxy import FrontProxy
from controlplane.apiserver.apf_config import ApfConfig
from controlplane.apiserver.audit import AuditLog, load_policy
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.authz import Authorizer
from controlplane.apiserver.bootstrap import BootstrapJoin
from controlplane.apiserver.celauthz import CelAuthorizer
from controlplane.apiserver.certreload import ServingCertificate, grpc_credentials
from controlplane.apiserver.codec import ROOT, decode, list_prefix
from controlplane.apiserver.crd_kinds import CrdKinds
from controlplane.apiserver.flowcontrol import FlowControl, Limits
from controlplane.apiserver.metrics import ApiServerMetrics
from controlplane.apiserver.metricsapi.collector import Collector
from controlplane.apiserver.namespaces import NamespaceCleaner
from controlplane.apiserver.node_addresses import NodeAddresses
from controlplane.apiserver.nodecredentials import NodeCredentials
from controlplane.apiserver.nodegraph import NodeGraph
from controlplane.apiserver.pkifiles import sign_agent_csr_in_child
from controlplane.apiserver.podsecurity import config as podsecurity_config
from controlplane.apiserver.podsecurity.plugin import PodSecurity
from controlplane.apiserver.policy.admission import PolicyAdmission
from controlplane.apiserver.policy.cache import BINDING, POLICY, PolicyCache
from controlplane.apiserver.policy.typecheck import TypeChecker
from controlplane.apiserver.progress import IndexProgress
from controlplane.apiserver.rbacdefaults import ensure_defaults
from controlplane.apiserver.rbacindex import RbacIndex
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.relayedpeers import RelayedPeers
from controlplane.apiserver.rest.server import RestServer
from controlplane.apiserver.reviews import Reviews
from controlplane.apiserver.satokens import ServiceAccountTokens
from controlplane.apiserver.servicer import AuthServicer, ObjectsServicer
from controlplane.apiserver.tls import Pki, expirations
from controlplane.apiserver.watch import Broadcaster
from controlplane.apiserver.webhooks.client import WebhookClient
from controlplane.apiserver.webhooks.configs import MUTATING, VALIDATING, WebhookConfigs
from controlplane.apiserver.webhooks.dispatcher import WebhookAdmission
from controlplane.apiserver.webhooks.resolve import ServiceResolver
from controlplane.client.agents import AgentTLS, AgentUnreachable, agent_address, node_stats
from controlplane.client.errors import AlreadyExists, ApiError, NotFound
from controlplane.storage import encryption
from controlplane.storage.encrypted import EncryptedStore
from controlplane.storage.interface import Store
from controlplane.storage.timed import TimedStore
from proto.agent.v1 import agent_pb2
from proto.controlplane.v1 import api_pb2_grpc

log = logging.getLogger(__name__)

BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
MAX_MESSAGE = 1 << 30
# Requests past MAX_BODY are refused with INVALID_ARGUMENT by the handlers
# (naming the limit); gRPC itself drops anything beyond this, undecoded.
MAX_RECEIVE = MAX_BODY + (1 << 20)


@dataclass(frozen=True)
class ApiServerConfig:
    listen: str = "127.0.0.1:0"
    max_workers: int = 512
    service_cidr: str = "10.43.0.0/16"
    watch_queue: int = 10_000
    bookmark_interval: float = 5.0
    namespace_retry: float = 1.0
    rest: bool = False  # serve the Kubernetes REST API on `listen` (gRPC behind it)
    grpc_listen: str = ""  # with rest: also serve gRPC directly here
    audit_log_path: str = ""  # "": no audit log (the default)
    audit_log_max_bytes: int = 100 << 20
    audit_log_backups: int = 5
    audit_policy_file: str = ""  # "": every request at Metadata
    socket_dir: str = ""  # with rest: a private directory for the gRPC socket (else one in /tmp)
    # The address pods reach this server at (the `kubernetes` Service's
    # endpoint); "": the listen host (127.0.0.1 when it is a wildcard).
    advertise_address: str = ""
    # kube-apiserver's --admission-control-config-file (PodSecurity's
    # defaults and exemptions); "": privileged by default, kube-system exempt.
    admission_config_file: str = ""
    # kube-apiserver's --encryption-provider-config (encryption at rest); "": off.
    encryption_provider_config: str = ""
    # The process's garbage collector thresholds, set at start (see
    # jsoncodec.SERVER_GC_THRESHOLDS); None: left as they are.
    gc_thresholds: tuple[int, int, int] | None = jsoncodec.SERVER_GC_THRESHOLDS
    # Serve /metrics and count every request and storage call for it (metrics.py).
    metrics: bool = True
    # Serve the metrics API built in (metricsapi/: metrics.k8s.io, its local
    # APIService and discovery); off as k3s' --disable metrics-server, for a
    # cluster like kind's, with no metrics-server, or one installed by hand.
    # The kinds table is the process's, so this is too.
    metrics_api: bool = True


def resource_prefix(resource: str) -> str | None:
    """The storage prefix of a built-in resource named `plural` or `plural.group`."""
    for info in all_kinds():
        if resource in (info.plural, f"{info.plural}.{info.group}"):
            return list_prefix(info, "")
    return None


class ApiServer:
    def __init__(
        self, store: Store, config: ApiServerConfig, pki: Pki | None = None,
        front_proxy: FrontProxy | None = None,
    ) -> None:  # fmt: skip
        if config.encryption_provider_config:  # Secrets never reach the store in the clear
            store = EncryptedStore(
                store, encryption.load(Path(config.encryption_provider_config), resource_prefix)
            )
        self.flow = FlowControl(Limits.for_workers(config.max_workers))
        self.metrics = ApiServerMetrics(self.flow, store) if config.metrics else None
        if self.metrics is not None and pki is not None and pki.pki_dir:
            data_dir = Path(pki.pki_dir).parent
            self.metrics.certificates(lambda: expirations(data_dir))
        if self.metrics is not None:
            store = TimedStore(store, self.metrics.observe_storage)
        self.store = store
        self.config = config
        # Before anything reads the kinds table (the aggregator's local APIServices).
        withdraw_groups(() if config.metrics_api else (METRICS_GROUP,))
        self.pki = pki
        self.authority = TokenAuthority(pki.token_secret) if pki else None
        self.graph = NodeGraph()
        self.rbac = RbacIndex()
        self.progress = IndexProgress()
        self.authorizer = Authorizer(
            self.graph, self._objects, store.current_revision, self.rbac, self.progress
        )
        self.registry = Registry(
            store,
            admission=default_admission(),
            authorizer=self.authorizer,
            service_cidr=config.service_cidr,
        )
        self.registry.plugins = default_plugins()
        self.pod_security = PodSecurity(
            podsecurity_config.load(
                Path(config.admission_config_file) if config.admission_config_file else None
            ),
            self._namespace,
            lambda ns: self._objects("Pod", ns),
        )
        self.registry.validating.append(self.pod_security)
        # CertificateSigningRequests: the requester recorded, approve/sign/subject admission.
        self.registry.requesters[certificates.KIND] = certificates.requester
        self.registry.validating.append(certificates.CertificateAdmission(self.authorizer))
        # ValidatingAdmissionPolicy: after the built-in validating admission.
        self.policies = PolicyCache()
        cel_authorizer = CelAuthorizer(self.authorizer)  # CEL's `authorizer` variable
        self.registry.validating.append(
            PolicyAdmission(
                self.policies, self._lookup, self._objects, self._namespace, cel_authorizer
            )
        )
        # Admission webhooks: their configurations kept by the watch, Services
        # resolved to endpoints by the API server itself.
        self.webhook_configs = WebhookConfigs()
        self.webhook_client = WebhookClient(ServiceResolver(self._lookup, self._objects))
        self.registry.webhooks = WebhookAdmission(
            self.webhook_configs, self.webhook_client, self._namespace_labels
        )
        self.registry.webhooks.authorizer = cel_authorizer
        self.sa_tokens = (
            ServiceAccountTokens(pki.sa_key_pem, self._lookup) if pki and pki.sa_key_pem else None
        )
        if self.authority is not None:
            self.authority.service_accounts = self.sa_tokens
        self.reviews = Reviews(
            self.authorizer,
            self.authority.authenticate if self.authority else lambda _: None,
            self.sa_tokens,
            self._lookup,
        )
        self.registry.reviews = self.reviews.handlers
        self.broadcaster = Broadcaster(store, config.watch_queue, config.bookmark_interval)
        # Agent serving certificates: the node's name and addresses no one else has.
        self.node_addresses = NodeAddresses(lambda: self._objects("Node", ""), config.service_cidr)
        self.authorizer.address_problem = self.node_addresses.status_problem
        signer = (
            (
                lambda n, c: sign_agent_csr_in_child(
                    pki, n, c, lambda ip: self.node_addresses.problem(n, ip)
                )
            )
            if pki
            else None
        )
        # CustomResourceDefinitions: a created CRD's kind is served at once.
        self.crd_kinds = CrdKinds(self.registry)
        self.registry.admission["CustomResourceDefinition"] = self.crd_kinds.admit
        # A node's credential names a recorded id: it dies with its Node, and a
        # new join for the name supersedes it (nodecredentials.py).
        self.node_credentials = NodeCredentials(self.registry)
        authority = self.authority
        if authority is not None:
            authority.node_credentials = self.node_credentials.valid
            authority.node_certificates = self.node_credentials.holds
        self.joins = (
            BootstrapJoin(
                self.registry,
                self.node_token,
                sign_serving=signer,
            )
            if authority is not None
            else None
        )
        if authority is not None and self.joins is not None:
            authority.bootstrap_tokens = self.joins.identity
        self.cleaner = NamespaceCleaner(self.registry, config.namespace_retry)
        if self.metrics is not None:
            self.metrics.state.watchers = self.broadcaster.watcher_counts
        self.apf = ApfConfig(self.registry, self.flow)  # the stored FlowSchemas drive it
        # API aggregation (APIServices), with the front proxy's credentials.
        self.aggregator = (
            Aggregator(self.registry, front_proxy, pki.ca_pem) if front_proxy and pki else None
        )
        # The built-in metrics API: the agents' stats, scraped with the API server's credential.
        self.metrics_api = Collector(lambda: self._objects("Node", ""), self._node_stats)
        self.audit: AuditLog | None = None
        if config.audit_log_path:
            policy = (
                load_policy(Path(config.audit_policy_file)) if config.audit_policy_file else None
            )
            self.audit = AuditLog(Path(config.audit_log_path), config.audit_log_max_bytes,
                                  config.audit_log_backups, policy)  # fmt: skip
        self._server: grpc.Server | None = None
        self.rest: RestServer | None = None
        self.port = 0
        self.grpc_port = 0  # the direct gRPC port (grpc_listen), if any
        self.grpc_socket = ""  # with rest: the gRPC server's private unix socket
        self._socket_dir = ""

    def bootstrap(self) -> None:
        """Create the built-in objects that are missing."""
        ensure_defaults(self.registry)
        # API priority and fairness's mandatory and suggested configuration, in
        # one batch (kept afterwards by the apf-configuration controller).
        apf = [(obj["kind"], obj, None) for obj, _ in apf_bootstrap.bootstrap_objects()]
        for outcome in self.registry.create_many(apf):
            if isinstance(outcome, Exception) and not isinstance(outcome, AlreadyExists):
                raise outcome
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
        try:  # the default StorageClass of the local-path provisioner
            self.registry.create("StorageClass", local_path_class())
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

    def _node_stats(self, node: dict[str, Any]) -> agent_pb2.StatsResponse:
        if self.pki is None:
            raise AgentUnreachable("no agent credential: the API server runs without TLS")
        tls = AgentTLS(self.pki.ca_pem, self.pki.agent_client_cert_pem,
                       self.pki.agent_client_key_pem)  # fmt: skip
        return node_stats(agent_address(node), node["metadata"]["name"], tls)

    def _lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.registry.get_object(kind, name, namespace or None)
        except NotFound:
            return None

    def node_token(self, node: str) -> str:
        """A new credential of node `node`, as a join hands one out (in-process callers)."""
        assert self.authority is not None
        return self.authority.node_token(node, self.node_credentials.issue(node))

    def _namespace(self, name: str) -> dict[str, Any] | None:
        """The Namespace `name` as last read (shared: never changed by the caller)."""
        found: dict[str, Any] | None = self.registry.cached(
            f"{ROOT}namespaces/", name, lambda: self.registry.read_or_none("Namespace", name)
        )
        return found

    def _namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self._namespace(name)
        return None if ns is None else (ns.get("metadata") or {}).get("labels") or {}

    def _objects(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        return [decode(d, r) for d, r in self.registry.list(kind, namespace).items]

    def _load_indexes(self) -> None:
        """The node graph (from the stored pods and claims) and the RBAC index;
        the broadcaster's listeners keep them current from then on."""
        self.rbac.load(
            (kind, d)
            for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
            for d, _ in self.registry.list(kind).items
        )
        self.broadcaster.add_listener(self.rbac.on_event, self.rbac.prefixes)
        self.webhook_configs.load(
            (kind, d) for kind in (VALIDATING, MUTATING) for d, _ in self.registry.list(kind).items
        )
        self.broadcaster.add_listener(self.webhook_configs.on_event, self.webhook_configs.prefixes)
        claims: list[bytes] = []
        try:
            by_kind("PersistentVolumeClaim")
            claims = [d for d, _ in self.registry.list("PersistentVolumeClaim").items]
        except UnknownKind:
            pass
        pods = self.registry.list("Pod")
        self.graph.load([d for d, _ in pods.items], claims)
        self.broadcaster.add_object_listener(self.graph.on_event, self.graph.prefixes)
        # Last: once it has seen a revision, every index has applied it.
        self.progress.advance(self.broadcaster.last_revision)
        self.broadcaster.add_listener(self.progress.on_event)

    def start(self) -> int:
        if self.config.gc_thresholds is not None:
            jsoncodec.tune_gc(self.config.gc_thresholds)
        self.bootstrap()
        self._load_indexes()
        self.crd_kinds.start()
        self.broadcaster.add_listener(self.crd_kinds.on_event, self.crd_kinds.prefixes)
        self.policies.on_policy = TypeChecker(self.registry).check
        self.policies.load({kind: self._objects(kind, "") for kind in (POLICY, BINDING)})
        self.broadcaster.add_listener(self.policies.on_event, self.policies.prefixes)
        self.node_credentials.load()
        self.broadcaster.add_listener(
            self.node_credentials.on_event, self.node_credentials.prefixes
        )
        self.node_credentials.start()
        self.broadcaster.start()
        self.broadcaster.add_listener(self.cleaner.on_event)
        self.cleaner.start()
        self.apf.load()
        self.broadcaster.add_listener(self.apf.on_event, self.apf.prefixes)
        self.apf.start()
        if self.aggregator is not None:
            self.aggregator.start()
            self.broadcaster.add_listener(self.aggregator.on_event)
        if self.config.rest and self.config.metrics_api:
            self.metrics_api.start()
        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=self.config.max_workers, thread_name_prefix="api"
            ),
            options=[
                ("grpc.max_receive_message_length", MAX_RECEIVE),
                ("grpc.max_send_message_length", MAX_MESSAGE),
                ("grpc.so_reuseport", 0),
            ],
        )
        objects = ObjectsServicer(
            self.registry, self.broadcaster, self.authority, self.flow, self.audit, self.metrics
        )
        auth = AuthServicer(
            self.authority, self.pki.ca_pem if self.pki else b"", self.joins, self.audit
        )
        api_pb2_grpc.add_ObjectsServicer_to_server(objects, server)
        api_pb2_grpc.add_AuthServicer_to_server(auth, server)
        peers = None
        if self.config.rest:
            self.grpc_socket = self._socket_path()
            peers = RelayedPeers(self.grpc_socket)
            objects.peers = auth.peers = peers
            server.add_insecure_port(f"unix:{self.grpc_socket}")
            if self.config.grpc_listen:
                self.grpc_port = self._add_port(server, self.config.grpc_listen)
        else:
            self.port = self._add_port(server, self.config.listen)
        server.start()
        self._server = server
        if self.config.rest:
            self.rest = RestServer(
                self.registry, self.broadcaster, self.authority, self.config.listen, self.flow,
                self.audit, self.pki, self.grpc_socket, peers=peers, metrics=self.metrics,
            )  # fmt: skip
            self.rest.server.aggregator = self.aggregator
            self.rest.server.metrics_api = self.metrics_api if self.config.metrics_api else None
            self.port = self.rest.start()
        self._master_service()
        log.info("api server listening on %s (port %d)", self.config.listen, self.port)
        return self.port

    def _master_service(self) -> None:
        """The `kubernetes` Service in `default`: the first address of the
        service range, port 443, its Endpoints this server's address (as
        kube-apiserver keeps them), so in-cluster clients find the API."""
        cluster_ip = str(ipaddress.ip_network(self.config.service_cidr)[1])
        host = endpoint_host(self.config.advertise_address, self.config.listen)
        port = {"name": "https", "port": self.port, "protocol": "TCP"}
        service_ports = [{"name": "https", "port": 443, "targetPort": self.port, "protocol": "TCP"}]
        service: dict[str, Any] = {
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": cluster_ip, "type": "ClusterIP", "ports": service_ports},
        }  # fmt: skip
        endpoints: dict[str, Any] = {
            "metadata": {"name": "kubernetes", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": host}], "ports": [port]}],
        }
        for kind, obj in (("Service", service), ("Endpoints", endpoints)):
            try:
                try:
                    current = self.registry.get_object(kind, "kubernetes", "default")
                except NotFound:
                    self.registry.create(kind, obj)
                    continue
                wanted = {**current, **{k: v for k, v in obj.items() if k != "metadata"}}
                if kind == "Service":
                    wanted["spec"] = {**current.get("spec", {}), "ports": service_ports}
                if wanted != current:
                    self.registry.update(kind, wanted)
            except ApiError as err:  # e.g. a user Service already holds the address
                log.warning("the kubernetes %s in default could not be written: %s", kind, err)

    def _socket_path(self) -> str:
        """The gRPC server's unix socket: in the (private) data directory when
        its path fits a socket address, else in a fresh 0700 directory."""
        if self.config.socket_dir:
            path = os.path.join(os.path.abspath(self.config.socket_dir), "grpc.sock")
            if len(path.encode()) < 100:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)  # left by a killed predecessor
                return path
        self._socket_dir = tempfile.mkdtemp(prefix="skiff-grpc-")
        return f"{self._socket_dir}/grpc.sock"

    def _add_port(self, server: grpc.Server, listen: str) -> int:
        if self.pki is not None:
            creds = (grpc_credentials(ServingCertificate(self.pki.pki_dir, self.pki.cert_pem,
                                                         self.pki.key_pem))
                     if self.pki.pki_dir  # followed on disk: rotation needs no restart
                     else grpc.ssl_server_credentials([(self.pki.key_pem, self.pki.cert_pem)]))  # fmt: skip
            port = server.add_secure_port(listen, creds)
        else:
            port = server.add_insecure_port(listen)
        if port == 0:
            raise OSError(f"cannot listen on {listen}")
        return port

    def wait(self) -> None:
        if self._server is not None:
            self._server.wait_for_termination()

    def stop(self, grace: float = 2.0) -> None:
        # Watch streams end first (cleanly: clients re-watch elsewhere or later),
        # then in-flight unary calls get `grace` seconds. The REST front stops
        # after the gRPC server: it relays gRPC connections, and the GOAWAY the
        # gRPC server sends each must reach its client, which then hangs up;
        # gRPC's shutdown waits for every connection to close, so with the
        # relays gone first it waited out all of `grace` for any client still
        # connected.
        self.broadcaster.stop()
        if self._server is not None:
            self._server.stop(grace)
            self._server.wait_for_termination(grace + 1)
            self._server = None
        if self.rest is not None:
            self.rest.stop()
            self.rest = None
        self.cleaner.stop()
        self.apf.stop()
        if self.aggregator is not None:
            self.aggregator.stop()
        self.metrics_api.stop()
        self.node_credentials.stop()
        self.webhook_client.close()
        if self._socket_dir:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = ""
        elif self.grpc_socket:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.grpc_socket)


WILDCARDS = frozenset({"", "0.0.0.0", "::"})


def _primary_address() -> str:
    """This host's address on its default route ("" without one). A UDP
    connect only looks the route up: nothing is sent."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never answered, never sent to
            return str(probe.getsockname()[0])
    except OSError:
        return ""


def endpoint_host(
    advertise: str, listen: str, primary: Callable[[], str] = _primary_address
) -> str:
    """The address the `kubernetes` Endpoints publish: the advertised host,
    else the listen host. Pods cannot reach a loopback address, so when the
    server listens on every address, a wildcard or loopback one becomes the
    address of the default route's interface (as kube-apiserver picks it)."""
    host = _host(advertise or listen)
    wildcard = _host(listen) in WILDCARDS
    if host in WILDCARDS or (wildcard and _loopback(host)):
        return primary() or "127.0.0.1"
    return host


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _host(address: str) -> str:
    """The host of `host`, `host:port`, `[v6]` or `[v6]:port`."""
    if address.startswith("["):
        return address[1:].partition("]")[0]
    if address.count(":") == 1:
        return address.partition(":")[0]
    return address
