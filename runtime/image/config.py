"""Registry configuration in k3s's `registries.yaml` format.

```yaml
mirrors:
  docker.io:
    endpoint: ["http://127.0.0.1:5000"]
    rewrite: {"^library/(.*)": "mirrored/$1"}
  "*":
    endpoint: ["http://127.0.0.1:5000"]
configs:
  registry.example:5000:
    tls: {ca_file: /etc/ssl/ca.pem, insecure_skip_verify: false}
    auth: {username: u, password: p}
disable_default_endpoint: true
```

This module only turns that file into frozen dataclasses and answers "which
endpoints, in which order, with which TLS and credentials" for a registry
host. It never opens a connection. A missing file is an empty configuration,
as in k3s.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from runtime.errors import InvalidArgument

DOCKER_HUB_ENDPOINT = "https://registry-1.docker.io"


@dataclass(frozen=True)
class TLSConfig:
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False


@dataclass(frozen=True)
class Credentials:
    username: str = ""
    password: str = ""
    identity_token: str = ""
    registry_token: str = ""

    def __bool__(self) -> bool:
        return bool(self.username or self.password or self.identity_token or self.registry_token)

    @staticmethod
    def from_fields(
        username: str = "",
        password: str = "",
        auth: str = "",
        identity_token: str = "",
        registry_token: str = "",
    ) -> Credentials:
        """Build from CRI AuthConfig / registries.yaml fields (`auth` is base64 user:pass)."""
        if auth and not (username or password):
            try:
                username, _, password = base64.b64decode(auth).decode().partition(":")
            except (ValueError, UnicodeDecodeError) as exc:
                raise InvalidArgument("auth: not base64 of 'username:password'") from exc
        return Credentials(username, password, identity_token, registry_token)


@dataclass(frozen=True)
class HostConfig:
    tls: TLSConfig = TLSConfig()
    auth: Credentials = Credentials()


@dataclass(frozen=True)
class Mirror:
    endpoints: tuple[str, ...] = ()
    rewrites: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Endpoint:
    """One place to ask for a repository: base URL (`scheme://host[:port]`),
    the API path prefix (normally `/v2`), the repository path to use there."""

    scheme: str
    host: str
    api_prefix: str
    repository: str
    tls: TLSConfig
    auth: Credentials
    is_mirror: bool

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}{self.api_prefix}/{self.repository}"


@dataclass(frozen=True)
class RegistryConfig:
    mirrors: dict[str, Mirror] = field(default_factory=dict)
    configs: dict[str, HostConfig] = field(default_factory=dict)
    disable_default_endpoint: bool = False

    def endpoints(self, domain: str, repository: str) -> list[Endpoint]:
        """Where to look for `domain/repository`, in order: the mirrors, then
        (unless disabled for a mirrored host) the registry itself."""
        out: list[Endpoint] = []
        mirror = self.mirrors.get(domain) or self.mirrors.get("*")
        if mirror is not None:
            repo = repository
            for pattern, replacement in mirror.rewrites:
                if re.search(pattern, repo):
                    repo = re.sub(pattern, _go_replacement(replacement), repo, count=1)
                    break
            for raw in mirror.endpoints:
                out.append(self._endpoint(raw, repo, is_mirror=True))
        if mirror is None or not mirror.endpoints or not self.disable_default_endpoint:
            default = DOCKER_HUB_ENDPOINT if domain == "docker.io" else domain
            ep = self._endpoint(default, repository, is_mirror=False)
            if all(e.url != ep.url for e in out):
                out.append(ep)
        return out

    def _endpoint(self, raw: str, repository: str, *, is_mirror: bool) -> Endpoint:
        if "://" not in raw:
            host = raw
            wants_tls = host in self.configs and self.configs[host].tls != TLSConfig()
            scheme = "http" if is_loopback(host) and not wants_tls else "https"
            path = ""
        else:
            parts = urlsplit(raw)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise InvalidArgument(f"registry endpoint {raw!r}: need http(s)://host[:port]")
            scheme, host, path = parts.scheme, parts.netloc, parts.path.rstrip("/")
        prefix = path if path else "/v2"
        hc = self.configs.get(host) or HostConfig()
        return Endpoint(scheme, host, prefix, repository, hc.tls, hc.auth, is_mirror)


def _go_replacement(replacement: str) -> str:
    """k3s rewrites use Go's `$1`; Python's re wants `\\1`."""
    return re.sub(r"\$\{?(\d+)\}?", r"\\\1", replacement)


def is_loopback(host: str) -> bool:
    """True for localhost and 127.0.0.0/8 / ::1 hosts (with or without port)."""
    name = host
    if name.startswith("["):
        name = name[1 : name.find("]")]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def load(path: Path | None, disable_default_endpoint: bool = False) -> RegistryConfig:
    """Read a registries.yaml; a missing file (or None) is the empty config."""
    data: Any = {}
    if path is not None:
        try:
            text = path.read_text()
        except FileNotFoundError:
            text = ""
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise InvalidArgument(f"{path}: not valid YAML: {exc}") from exc
    return from_dict(data, disable_default_endpoint=disable_default_endpoint, source=str(path))


def from_dict(
    data: Any, *, disable_default_endpoint: bool = False, source: str = "registries.yaml"
) -> RegistryConfig:
    if not isinstance(data, dict):
        raise InvalidArgument(f"{source}: expected a mapping at the top level")
    mirrors: dict[str, Mirror] = {}
    for host, body in (data.get("mirrors") or {}).items():
        body = body or {}
        endpoints = body.get("endpoint") or []
        if isinstance(endpoints, str):
            endpoints = [endpoints]
        rewrites = tuple((str(k), str(v)) for k, v in (body.get("rewrite") or {}).items())
        mirrors[str(host)] = Mirror(tuple(str(e) for e in endpoints), rewrites)
    configs: dict[str, HostConfig] = {}
    for host, body in (data.get("configs") or {}).items():
        body = body or {}
        tls_raw = body.get("tls") or {}
        auth_raw = body.get("auth") or {}
        tls = TLSConfig(
            ca_file=tls_raw.get("ca_file"),
            cert_file=tls_raw.get("cert_file"),
            key_file=tls_raw.get("key_file"),
            insecure_skip_verify=bool(tls_raw.get("insecure_skip_verify", False)),
        )
        auth = Credentials.from_fields(
            username=str(auth_raw.get("username", "")),
            password=str(auth_raw.get("password", "")),
            auth=str(auth_raw.get("auth", "")),
            identity_token=str(auth_raw.get("identity_token", "")),
        )
        configs[str(host)] = HostConfig(tls, auth)
    disable = bool(data.get("disable_default_endpoint", False)) or disable_default_endpoint
    return RegistryConfig(mirrors, configs, disable)
