"""The credential file: where the API server is and how to prove who we are.

Format (YAML, one mapping):

    server: "127.0.0.1:6443"
    certificate-authority-data: <base64 of the CA certificate PEM>
    token: <bearer token>

A standard kubeconfig (what kubectl reads) is accepted too: its current
context's cluster, CA and token, and the gRPC address its `skiff.dev/grpc`
extension names (controlplane.client.kubeconfig).

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
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from controlplane.client.privatefile import write_private

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

    def with_server(self, server: str | None) -> ClientConfig:
        """A copy with the address overridden (`--server`)."""
        if not server:
            return self
        return ClientConfig(server=server, ca_pem=self.ca_pem, token=self.token, path=self.path)


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
    ca_b64 = data.get("certificate-authority-data", "")
    ca_pem = b""
    if ca_b64:
        if not isinstance(ca_b64, str):
            raise ConfigError(f"certificate-authority-data: must be base64 text{where}")
        try:
            ca_pem = base64.b64decode(ca_b64, validate=True)
        except (binascii.Error, ValueError) as err:
            raise ConfigError(f"certificate-authority-data: not valid base64{where}") from err
    token = data.get("token", "")
    if not isinstance(token, str):
        raise ConfigError(f"token: must be a string{where}")
    return ClientConfig(server=server, ca_pem=ca_pem, token=token, path=path)


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
    from controlplane.client import kubeconfig

    if kubeconfig.is_kubeconfig(data):
        return kubeconfig.parse_kubeconfig(data, path).with_server(server)
    return parse_config(data, path).with_server(server)


def dump_config(config: ClientConfig) -> str:
    data = {
        "server": config.server,
        "certificate-authority-data": base64.b64encode(config.ca_pem).decode(),
        "token": config.token,
    }
    return yaml.safe_dump(data, sort_keys=False)


def write_config(path: Path, config: ClientConfig) -> None:
    """Write atomically with mode 0600 (the file holds a secret)."""
    write_private(path, dump_config(config))
