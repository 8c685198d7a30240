"""Reaching a node's agent endpoint: its address, a channel, its Stats.

A Node advertises its agent as status.addresses (InternalIP, else Hostname)
and status.daemonEndpoints.kubeletEndpoint.Port (10250 by default). skiffctl
(logs, exec, top) and the HPA's metrics source dial it with the same bearer
token they give the API server. This module only reads Node objects and
calls the agent; it never writes anything.
"""

from __future__ import annotations

from typing import Any

import grpc

from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from proto.rpc_errors import rpc_status

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


class AgentConnection:
    """One channel to one node's agent, with the credential on every call
    (`metadata`); `node` names the node in messages."""

    def __init__(self, address: str, token: str, node: str = "") -> None:
        self.node = node
        self.address = address
        self.metadata: tuple[tuple[str, str], ...] = (
            (("authorization", f"Bearer {token}"),) if token else ()
        )
        self.channel = grpc.insecure_channel(address)
        self.stub = pb_grpc.AgentStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> AgentConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def node_stats(
    address: str, token: str, namespace: str = "", timeout: float = 5.0
) -> pb.StatsResponse:
    """One Stats call to the agent at `address` (raises AgentUnreachable)."""
    with AgentConnection(address, token) as conn:
        try:
            return conn.stub.Stats(
                pb.StatsRequest(namespace=namespace), timeout=timeout, metadata=conn.metadata
            )
        except grpc.RpcError as err:
            code, details = rpc_status(err)
            raise AgentUnreachable(f"agent at {address}: {details or code.name}") from None
