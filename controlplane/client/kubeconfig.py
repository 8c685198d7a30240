"""Standard kubeconfig files: written for kubectl, read by skiff's clients.

`dump_kubeconfig` makes one cluster, one user (bearer token) and one
context, with the CA inline (certificate-authority-data), naming the REST
API as `https://host:port`. The cluster's `extensions` entry
`skiff.dev/grpc` carries the address of skiff's gRPC API (the same
host:port unless the control plane serves gRPC on a port of its own), so
skiffctl reads the same file (`parse_kubeconfig`). `write_private` writes
any credential file: 0600 from its creation (O_EXCL on a fresh temporary
name), then an atomic rename; never readable by others, not even briefly.
This module only reads and writes text; it opens no connection.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Any

import yaml

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


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path` with mode 0600 atomically (see the module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_kubeconfig(
    path: Path, server: str, ca_pem: bytes, token: str, grpc: str = "", user: str = "admin"
) -> None:
    write_private(path, dump_kubeconfig(server, ca_pem, token, grpc, user))
