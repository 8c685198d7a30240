"""The credential file: where the API server is and how to prove who we are.

Format (YAML, one mapping):

    server: "127.0.0.1:6443"
    certificate-authority-data: <base64 of the CA certificate PEM>
    token: <bearer token>
    grpc-server: "127.0.0.1:6444"   # optional
    client-certificate-data: <base64 of a client certificate PEM>   # optional,
    client-key-data: <base64 of its private key PEM>                # together

`server` is the API server's main port: the Kubernetes REST API (logs,
exec, top go there) and skiff's gRPC API behind it. `grpc-server`, when
the control plane serves gRPC on a port of its own (--grpc-listen), is
where gRPC clients go instead. With a client certificate (a node's, from
the CertificateSigningRequest API) the client proves who it is with that
and sends no token. A standard kubeconfig (what kubectl reads)
is accepted too: its current context's cluster (the REST address), CA and
token, and the gRPC address its `skiff.dev/grpc` extension names
(controlplane.client.kubeconfig).

`find_config_path()` applies the lookup order skiffctl and every client use:
an explicit `--config FILE`, else `$SKIFF_CONFIG`, else `$KUBECONFIG` (its
first file), else `~/.skiff/config`, else `~/.kube/config`, else
`/etc/skiff/admin.conf`. The control plane writes `<data-dir>/admin.conf`
in this format on first start (`write_config`), and `<data-dir>/kubeconfig`
beside it. This module only reads and writes the file; it never opens a
connection (see `apiclient.connect`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane.client.kubeconfig import GRPC_EXTENSION
from machinery.atomicfile import write_private

ENV_VAR = "SKIFF_CONFIG"
KUBECONFIG_VAR = "KUBECONFIG"
USER_CONFIG = Path("~/.skiff/config")
USER_KUBECONFIG = Path("~/.kube/config")
SYSTEM_CONFIG = Path("/etc/skiff/admin.conf")


class ConfigError(Exception):
    """No credential file was found, or it is malformed. Safe to show."""


@dataclass(frozen=True)
class ClientConfig:
    server: str  # "host:port"
    ca_pem: bytes = b""  # PEM of the CA that signed the server certificate; empty = insecure
    token: str = ""
    path: Path | None = None  # where it was read from, for messages
    grpc_server: str = ""  # "host:port" of a gRPC-only port, when there is one
    cert_pem: bytes = b""  # a client certificate (PEM), used instead of the token
    key_pem: bytes = b""  # its private key (PEM)

    @property
    def grpc_target(self) -> str:
        """Where gRPC clients connect: the gRPC-only port, else `server`."""
        return self.grpc_server or self.server

    def with_server(self, server: str | None) -> ClientConfig:
        """A copy with the address overridden (`--server`): both APIs go there."""
        if not server:
            return self
        return dataclasses.replace(self, server=server, grpc_server="")

    def with_certificate(self, cert_pem: bytes, key_pem: bytes) -> ClientConfig:
        """A copy that proves who it is with this client certificate."""
        return dataclasses.replace(self, cert_pem=cert_pem, key_pem=key_pem)


def candidate_paths(explicit: str | os.PathLike[str] | None = None) -> list[Path]:
    """The lookup order, most specific first."""
    if explicit:
        return [Path(explicit)]
    paths: list[Path] = []
    env = os.environ.get(ENV_VAR)
    if env:
        paths.append(Path(env))
    kube = [p for p in os.environ.get(KUBECONFIG_VAR, "").split(os.pathsep) if p]
    if kube:
        paths.append(Path(kube[0]))
    paths.append(USER_CONFIG.expanduser())
    paths.append(USER_KUBECONFIG.expanduser())
    paths.append(SYSTEM_CONFIG)
    return paths


def find_config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The first credential file in the lookup order that exists.

    An explicit path or $SKIFF_CONFIG that does not exist is an error (it is
    not silently skipped in favour of a later file).
    """
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"credential file {path} does not exist")
        return path
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env)
        if not path.is_file():
            raise ConfigError(f"credential file {path} (from ${ENV_VAR}) does not exist")
        return path
    for path in candidate_paths():
        if path.is_file():
            return path
    tried = ", ".join(str(p) for p in candidate_paths())
    raise ConfigError(
        f"no credential file found (tried --config, ${ENV_VAR}, ${KUBECONFIG_VAR}, {tried})"
    )


def parse_config(data: Mapping[str, object], path: Path | None = None) -> ClientConfig:
    where = f" in {path}" if path else ""
    server = data.get("server")
    if not isinstance(server, str) or not server:
        raise ConfigError(f"server: required (host:port){where}")
    ca_pem = _base64(data, "certificate-authority-data", where)
    token = data.get("token", "")
    if not isinstance(token, str):
        raise ConfigError(f"token: must be a string{where}")
    grpc_server = data.get("grpc-server", "")
    if not isinstance(grpc_server, str):
        raise ConfigError(f"grpc-server: must be host:port{where}")
    cert_pem = _pem(data, "client-certificate-data", where)
    key_pem = _pem(data, "client-key-data", where)
    if bool(cert_pem) != bool(key_pem):
        raise ConfigError(
            f"client-certificate-data and client-key-data: give both or neither{where}"
        )
    return ClientConfig(server, ca_pem, token, path, grpc_server, cert_pem, key_pem)


def _base64(data: Mapping[str, object], key: str, where: str) -> bytes:
    """The bytes of the base64 field `key` (b"": absent or empty)."""
    value = data.get(key, "")
    if not value:
        return b""
    if not isinstance(value, str):
        raise ConfigError(f"{key}: must be base64 text{where}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ConfigError(f"{key}: not valid base64{where}") from err


def _pem(data: Mapping[str, object], key: str, where: str) -> bytes:
    pem = _base64(data, key, where)
    if pem and not pem.lstrip().startswith(b"-----BEGIN "):
        raise ConfigError(f"{key}: not a PEM block{where}")
    return pem


def is_kubeconfig(data: Mapping[str, Any]) -> bool:
    return "clusters" in data or data.get("kind") == "Config"


def _named(entries: Any, name: str, what: str, where: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(what)
            if isinstance(value, dict):
                return value
    raise ConfigError(f"{what} {name!r} not found{where}")


def parse_kubeconfig(data: Mapping[str, Any], path: Path | None = None) -> ClientConfig:
    """The current context's cluster and user as a ClientConfig (the REST
    address, and the gRPC address of the skiff.dev/grpc extension)."""
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
    server = _host_port(str(cluster.get("server") or ""))
    if not server:
        raise ConfigError(f"cluster server: required{where}")
    grpc_server = ""
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, dict) and ext.get("name") == GRPC_EXTENSION:
            grpc_server = _host_port(str((ext.get("extension") or {}).get("server") or ""))
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
    return ClientConfig(server, ca_pem, token, path, "" if grpc_server == server else grpc_server)


def _host_port(url: str) -> str:
    return url.removeprefix("https://").removeprefix("http://").rstrip("/")


def load_config(
    explicit: str | os.PathLike[str] | None = None, server: str | None = None
) -> ClientConfig:
    """Read the credential file found by the lookup order; `server` overrides its address."""
    path = find_config_path(explicit)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot read credential file {path}: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"credential file {path}: expected a mapping")
    if is_kubeconfig(data):
        return parse_kubeconfig(data, path).with_server(server)
    return parse_config(data, path).with_server(server)


def dump_config(config: ClientConfig) -> str:
    data = {
        "server": config.server,
        "certificate-authority-data": base64.b64encode(config.ca_pem).decode(),
        "token": config.token,
    }
    if config.grpc_server:
        data["grpc-server"] = config.grpc_server
    if config.cert_pem:
        data["client-certificate-data"] = base64.b64encode(config.cert_pem).decode()
        data["client-key-data"] = base64.b64encode(config.key_pem).decode()
    return yaml.safe_dump(data, sort_keys=False)


def write_config(path: Path, config: ClientConfig) -> None:
    """Write atomically with mode 0600 (the file holds a secret)."""
    write_private(path, dump_config(config))
