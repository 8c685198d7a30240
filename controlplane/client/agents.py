"""Reaching a node's agent endpoint: its address, its TLS, its Stats.

A Node advertises its agent as status.addresses (InternalIP, else Hostname)
and status.daemonEndpoints.kubeletEndpoint.Port (10250 by default). Only the
API server dials it: over TLS, presenting its client certificate
(`AgentTLS`, CN system:apiserver) and checking that the agent's serving
certificate was issued by the cluster CA for that Node's name, whatever
address the Node claims. No bearer token is ever sent to an agent. Users
reach logs, exec, attach, port-forward and stats through the API server.

`agent_csr` makes the key and certificate request an agent sends at join.
This module only reads Node objects and calls the agent.
"""

from __future__ import annotations

import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from machinery.certrequest import new_request
from machinery.rpc_errors import rpc_status
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc

DEFAULT_AGENT_PORT = 10250


class AgentUnreachable(Exception):
    """A node's agent could not be reached (or its node has no address)."""


def agent_address(node: dict[str, Any]) -> str:
    """`host:port` of the agent endpoint a Node advertises."""
    st = node.get("status") or {}
    name = (node.get("metadata") or {}).get("name", "?")
    addresses = st.get("addresses") or []
    host = ""
    for kind in ("InternalIP", "Hostname"):
        host = next((str(a["address"]) for a in addresses if a.get("type") == kind), "")
        if host:
            break
    if not host:
        raise AgentUnreachable(f"node {name} reports no InternalIP or Hostname")
    endpoint = (st.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
    port = int(endpoint.get("Port") or endpoint.get("port") or DEFAULT_AGENT_PORT)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def load_chain(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """context.load_cert_chain from PEM bytes (it reads files only)."""
    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        cert.write_bytes(cert_pem)
        key.touch(0o600)
        key.write_bytes(key_pem)
        context.load_cert_chain(cert, key)


@dataclass(frozen=True)
class AgentTLS:
    """The API server's credential towards agents and the CA their serving
    certificates must chain to."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def channel(self, address: str, node: str) -> grpc.Channel:
        creds = grpc.ssl_channel_credentials(self.ca_pem, self.key_pem, self.cert_pem)
        return grpc.secure_channel(address, creds, options=self.options(node))

    def aio_channel(self, address: str, node: str) -> grpc.aio.Channel:
        creds = grpc.ssl_channel_credentials(self.ca_pem, self.key_pem, self.cert_pem)
        return grpc.aio.secure_channel(address, creds, options=self.options(node))

    @staticmethod
    def options(node: str) -> list[tuple[str, str]]:
        """The agent's certificate must name `node`, whatever address was dialed."""
        return [("grpc.ssl_target_name_override", node)]

    def ssl_context(self) -> ssl.SSLContext:
        """For HTTP/1.1 upgrades (exec, attach, portforward); pass
        server_hostname=<node name> when connecting."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_verify_locations(cadata=self.ca_pem.decode())
        load_chain(context, self.cert_pem, self.key_pem)
        context.set_alpn_protocols(["http/1.1"])
        return context


def certificate_mismatch(peer: dict[str, Any] | None, host: str) -> str | None:
    """Why an agent's verified certificate (ssl's getpeercert()) does not hold
    for the address dialed (None: it does). The name was checked by the
    handshake (server_hostname=node); a non-loopback IP dialed must also be
    one the certificate was issued for (the node's own, granted at join)."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if ip.is_loopback:
        return None  # never in a certificate: a node on the API server's own host
    for kind, value in (peer or {}).get("subjectAltName", ()):
        if kind == "IP Address":
            try:
                if ipaddress.ip_address(str(value).strip()) == ip:
                    return None
            except ValueError:
                continue
    return f"its certificate is not valid for {ip}, the address its Node names"


def node_stats(
    address: str, node: str, tls: AgentTLS, request: pb.StatsRequest | None = None,
    timeout: float = 5.0,
) -> pb.StatsResponse:  # fmt: skip
    """One Stats call to node `node`'s agent at `address` (raises AgentUnreachable)."""
    with tls.channel(address, node) as channel:
        try:
            return pb_grpc.AgentStub(channel).Stats(request or pb.StatsRequest(), timeout=timeout)
        except grpc.RpcError as err:
            code, details = rpc_status(err)
            raise AgentUnreachable(
                f"agent of node {node} at {address}: {details or code.name}"
            ) from None


def agent_csr(node: str, addresses: list[str]) -> tuple[bytes, bytes]:
    """(CSR PEM, private key PEM) an agent sends at join for its serving
    certificate: its name and its IP addresses (loopback ones left out: the
    API server grants them to no node)."""
    ips: list[str] = []
    for a in addresses:
        try:
            ip = ipaddress.ip_address(a)
        except ValueError:
            continue  # the node's name is its only DNS name
        if not ip.is_loopback:  # never granted: every host's
            ips.append(str(ip))
    key_pem, csr_pem = new_request((("CN", f"system:node:{node}"),), [node], ips)
    return csr_pem, key_pem
