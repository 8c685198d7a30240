"""Standard kubeconfig files: written for kubectl, read by skiff's clients.

`dump_kubeconfig` makes one cluster, one user (bearer token) and one
context, with the CA inline (certificate-authority-data), naming the REST
API as `https://host:port`. The cluster's `extensions` entry
`skiff.dev/grpc` carries the address of skiff's gRPC API (the same
host:port unless the control plane serves gRPC on a port of its own), so
skiffctl reads the same file (`parse_kubeconfig`). The file is written
0600 by controlplane.client.privatefile, never readable by others.
This module only reads and writes text; it opens no connection.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from controlplane.client.config import ClientConfig, ConfigError
from controlplane.client.privatefile import write_private

GRPC_EXTENSION = "skiff.dev/grpc"
NAME = "skiff"


def is_kubeconfig(data: Mapping[str, Any]) -> bool:
    return "clusters" in data or data.get("kind") == "Config"


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


def _named(entries: Any, name: str, what: str, where: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(what)
            if isinstance(value, dict):
                return value
    raise ConfigError(f"{what} {name!r} not found{where}")


def parse_kubeconfig(data: Mapping[str, Any], path: Path | None = None) -> ClientConfig:
    """The current context's cluster and user as a ClientConfig (the gRPC address)."""
    where = f" in {path}" if path else ""
    current = data.get("current-context")
    contexts = data.get("contexts") or []
    if not current:
        if len(contexts) != 1:
            raise ConfigError(f"current-context: required{where}")
        current = contexts[0].get("name")
    context = _named(contexts, str(current), "context", where)
    cluster = _named(data.get("clusters"), str(context.get("cluster")), "cluster", where)
    user = _named(data.get("users"), str(context.get("user")), "user", where)
    server = str(cluster.get("server") or "")
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == GRPC_EXTENSION:
            server = str((ext.get("extension") or {}).get("server") or server)
    server = server.removeprefix("https://").removeprefix("http://").rstrip("/")
    if not server:
        raise ConfigError(f"cluster server: required{where}")
    ca_pem = b""
    ca_data = cluster.get("certificate-authority-data")
    if ca_data:
        try:
            ca_pem = base64.b64decode(str(ca_data), validate=True)
        except (binascii.Error, ValueError) as err:
            raise ConfigError(f"certificate-authority-data: not valid base64{where}") from err
    elif cluster.get("certificate-authority"):
        try:
            ca_pem = Path(str(cluster["certificate-authority"])).expanduser().read_bytes()
        except OSError as err:
            raise ConfigError(f"certificate-authority: cannot read it{where}: {err}") from err
    token = user.get("token") or ""
    if not token and user.get("tokenFile"):
        try:
            token = Path(str(user["tokenFile"])).read_text().strip()
        except OSError as err:
            raise ConfigError(f"tokenFile: cannot read it{where}: {err}") from err
    if not isinstance(token, str):
        raise ConfigError(f"user token: must be a string{where}")
    return ClientConfig(server=server, ca_pem=ca_pem, token=token, path=path)


def write_kubeconfig(
    path: Path, server: str, ca_pem: bytes, token: str, grpc: str = "", user: str = "admin"
) -> None:
    write_private(path, dump_kubeconfig(server, ca_pem, token, grpc, user))
