"""Standard kubeconfig files: written for kubectl, read by skiff's clients.

`dump_kubeconfig` makes one cluster, one user (bearer token) and one
context, with the CA inline (certificate-authority-data), naming the REST
API as `https://host:port`. The cluster's `extensions` entry
`skiff.dev/grpc` carries the address of skiff's gRPC API (the same
host:port unless the control plane serves gRPC on a port of its own), so
skiffctl reads the same file (`controlplane.client.config.parse_kubeconfig`).
The file is written 0600 by machinery.atomicfile.write_private, never readable
by others. This module only writes text; it opens no connection.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from machinery.atomicfile import write_private

GRPC_EXTENSION = "skiff.dev/grpc"  # the cluster extension naming the gRPC address
NAME = "skiff"


def dump_kubeconfig(
    server: str, ca_pem: bytes, token: str, grpc: str = "", user: str = "admin"
) -> str:
    """The kubeconfig text; `server` and `grpc` are host:port."""
    cluster: dict[str, Any] = {
        "server": f"https://{server}",
        "certificate-authority-data": base64.b64encode(ca_pem).decode(),
        "extensions": [{"name": GRPC_EXTENSION, "extension": {"server": grpc or server}}],
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": user}}],
        "current-context": NAME,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write_kubeconfig(
    path: Path, server: str, ca_pem: bytes, token: str, grpc: str = "", user: str = "admin"
) -> None:
    write_private(path, dump_kubeconfig(server, ca_pem, token, grpc, user))
