"""The REST API's listener: an event loop on its own thread.

`RestServer.start()` binds `listen` (TLS with the API server's certificate
when given a Pki) and returns the port; `stop()` closes it and ends every
watch. Blocking registry calls run on a bounded thread pool; watches and
streams cost no thread. With `grpc_socket`, gRPC clients that reach this
port are relayed there (frontdoor.py), so both APIs share one address.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from aiohttp import web

from controlplane.apiserver.aggregator import proxy
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import TokenAuthority
from controlplane.apiserver.certreload import ServingCertificate, agent_credential, follow
from controlplane.apiserver.flowcontrol import FlowControl
from controlplane.apiserver.metrics import ApiServerMetrics
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.relayedpeers import RelayedPeers
from controlplane.apiserver.rest.app import make_app
from controlplane.apiserver.rest.context import Server
from controlplane.apiserver.rest.frontdoor import ALPN, FrontDoor
from controlplane.apiserver.rest.watch import LoopFeed
from controlplane.apiserver.tls import Pki
from controlplane.apiserver.watch import Broadcaster
from controlplane.client.agents import AgentTLS

log = logging.getLogger(__name__)


def server_ssl_context(pki: Pki) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory() as tmp:  # load_cert_chain reads files only
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(pki.cert_pem)
        key.touch(0o600)
        key.write_bytes(pki.key_pem)
        context.load_cert_chain(cert, key)
    # Client certificates of the cluster CA are asked for, never required
    # (kube-apiserver's --client-ca-file): TLS checks the chain, the dates
    # and the client-auth usage (a node's serving certificate is no client
    # certificate); authn.certificate_identity reads who it names.
    context.load_verify_locations(cadata=pki.ca_pem.decode())
    context.verify_mode = ssl.CERT_OPTIONAL
    context.set_alpn_protocols(ALPN)
    return context


def _serving_context(pki: Pki) -> ssl.SSLContext:
    """The REST port's context; following pki/server.crt on disk when known."""
    if not pki.pki_dir:
        return server_ssl_context(pki)
    serving = ServingCertificate(pki.pki_dir, pki.cert_pem, pki.key_pem)
    return follow(serving, lambda cert, key: server_ssl_context(
        dataclasses.replace(pki, cert_pem=cert, key_pem=key)))  # fmt: skip


class RestServer:
    def __init__(
        self,
        registry: Registry,
        broadcaster: Broadcaster,
        authority: TokenAuthority | None,
        listen: str,
        flow: FlowControl,
        audit: AuditLog | None = None,
        pki: Pki | None = None,
        grpc_socket: str = "",
        workers: int = 32,
        min_watch_timeout: float = 1800.0,
        metrics: ApiServerMetrics | None = None,
        peers: RelayedPeers | None = None,
    ) -> None:
        self.listen = listen
        self.peers = peers
        self.pki = pki
        self.grpc_socket = grpc_socket
        self.authority = authority
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix="rest")
        # Towards agents the API server uses its own client certificate, never a token.
        agent_tls = AgentTLS(pki.ca_pem, pki.agent_client_cert_pem, pki.agent_client_key_pem) if pki else None  # fmt: skip
        self.server = Server(
            registry,
            broadcaster,
            self.executor,
            flow,
            audit,
            min_watch_timeout,
            agent_tls,
            metrics=metrics,
        )
        if pki is not None and pki.pki_dir:  # a rotated client certificate is used at once
            self.server.agent_tls_now = agent_credential(pki.pki_dir, pki.ca_pem,
                                                         pki.agent_client_cert_pem,
                                                         pki.agent_client_key_pem)  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._thread = threading.Thread(target=self.loop.run_forever, name="rest", daemon=True)
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.AbstractServer | None = None

    def start(self) -> int:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self.port

    async def _start(self) -> None:
        app = make_app(self.server, self.authority, LoopFeed(self.loop))
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await runner.setup()
        self._runner = runner
        http = runner.server
        assert http is not None
        host, _, port = self.listen.rpartition(":")
        host = host.strip("[]") or None  # type: ignore[assignment]
        context = _serving_context(self.pki) if self.pki is not None else None

        def protocol() -> asyncio.Protocol:
            if self.grpc_socket:
                return FrontDoor(http, self.grpc_socket, self.peers)
            return http()

        self._listener = await self.loop.create_server(
            protocol, host, int(port), ssl=context, reuse_address=True, backlog=1024
        )
        self.port = self._listener.sockets[0].getsockname()[1]
        log.info("REST API listening on %s (port %d)", self.listen, self.port)

    async def _stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
        await proxy.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
        except (TimeoutError, RuntimeError):
            log.warning("the REST API did not stop cleanly")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
