"""A small OCI distribution v2 client: manifests and blobs over HTTP(S).

One `RepositoryClient` talks to one endpoint (a mirror or the registry
itself) about one repository. It answers the registry's `WWW-Authenticate`
challenge (Bearer: fetch a token from the realm, with basic credentials when
it has them; Basic: send the credentials), follows redirects (dropping the
Authorization header when the host changes), and turns HTTP and socket
failures into domain errors: 404 is `NotFound` carrying the registry's own
message, connection problems and 5xx are `Unavailable`. Every socket has a
timeout, so nothing here blocks forever.

It never verifies content (that is `content.py`'s job) and never writes to
disk. Only loopback registries and endpoints configured with `http://` are
spoken to in plain HTTP.
"""

from __future__ import annotations

import base64
import http.client
import ipaddress
import json
import logging
import re
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

from runtime.errors import NotFound, Unavailable
from runtime.image.config import Credentials, Endpoint, TLSConfig
from runtime.image.errors import Unauthorized
from runtime.image.mediatypes import ACCEPT_MANIFESTS

log = logging.getLogger("skiff.runtime.image.registry")

MAX_MANIFEST_BYTES = 4 << 20
MAX_REDIRECTS = 5
USER_AGENT = "skiff/0.1"


@dataclass(frozen=True)
class PullSettings:
    """Timeouts and concurrency of registry traffic."""

    timeout: float = 30.0
    max_concurrent_downloads: int = 3
    # a layer may decompress to this many times its compressed size
    max_layer_expansion: int = 10


class Response:
    """A streaming HTTP response body that closes its connection when done."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse) -> None:
        self._conn = conn
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers
        length = resp.getheader("Content-Length")
        self.length = int(length) if length and length.isdigit() else None

    def read(self, n: int = -1) -> bytes:
        try:
            return self._resp.read(n) if n >= 0 else self._resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise Unavailable(f"reading from registry: {exc}") from exc

    def close(self) -> None:
        self._resp.close()
        self._conn.close()

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ssl_context(tls: TLSConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if tls.ca_file:
        ctx.load_verify_locations(tls.ca_file)
    if tls.cert_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    if tls.insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    scheme, _, rest = header.strip().partition(" ")
    params = {k.lower(): v for k, v in re.findall(r'(\w+)\s*=\s*"([^"]*)"', rest)}
    return scheme.lower(), params


def _sanitize(text: object, limit: int = 200) -> str:
    """Printable ASCII only, at most `limit` characters."""
    return "".join(c for c in str(text) if " " <= c <= "~")[:limit]


def _error_message(body: bytes, fallback: str) -> str:
    """The registry's own words, `errors[].code: message` of a v2 error body,
    sanitized; never any other body text (a redirect to an internal service
    must not have its answer reflected into an error): else `fallback`."""
    try:
        doc = json.loads(body)
        parts = [
            f"{_sanitize(e.get('code', ''), 64)}: {_sanitize(e.get('message', ''))}".strip(": ")
            for e in doc.get("errors", [])[:5]
            if isinstance(e, dict)
        ]
        if any(parts):
            return "; ".join(p for p in parts if p)
    except (ValueError, AttributeError, TypeError, RecursionError):
        pass
    return fallback


_METADATA_HOSTS = ("metadata", "metadata.google.internal", "metadata.azure.internal")


def _is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _addresses(host: str) -> list[str]:
    """The addresses `host` resolves to ([] if it does not)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []  # unresolvable: the request itself fails with a clear error
    return [str(info[4][0]).split("%")[0] for info in infos]


def _refuse_internal_redirect(url: str, resolve: Any = _addresses) -> None:
    """A registry may redirect blobs to storage elsewhere, never to a
    link-local or cloud metadata address (an SSRF into the node)."""
    host = (urlsplit(url).hostname or "").lower()
    if host in _METADATA_HOSTS:
        raise Unavailable(f"redirect to {host!r} refused: a metadata service")
    try:
        addrs = [ipaddress.ip_address(host)]
    except ValueError:
        addrs = [ipaddress.ip_address(a) for a in resolve(host)]
    for addr in addrs:
        if addr.is_link_local or str(addr) in ("100.100.100.200", "fd00:ec2::254"):
            raise Unavailable(f"redirect to {host!r} ({addr}) refused: a link-local address")


class RepositoryClient:
    """Manifests and blobs of one repository at one endpoint."""

    def __init__(
        self, endpoint: Endpoint, credentials: Credentials, settings: PullSettings
    ) -> None:
        self.endpoint = endpoint
        self.credentials = endpoint.auth or credentials
        self.settings = settings
        self._auth_header: str | None = None
        if self.credentials.registry_token:
            self._auth_header = f"Bearer {self.credentials.registry_token}"
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        self.resolve: Any = _addresses  # host -> addresses (tests: a fake, no DNS)

    # -- public API -----------------------------------------------------

    def get_manifest(self, reference: str) -> tuple[bytes, str, str | None]:
        """(body, media type, Docker-Content-Digest or None) of a tag or digest."""
        url = f"{self.endpoint.url}/manifests/{reference}"
        with self._get(url, {"Accept": ACCEPT_MANIFESTS}, what=f"manifest {reference}") as resp:
            if resp.length is not None and resp.length > MAX_MANIFEST_BYTES:
                raise Unavailable(f"{url}: manifest of {resp.length} bytes is too large")
            body = resp.read(MAX_MANIFEST_BYTES + 1)
            if len(body) > MAX_MANIFEST_BYTES:
                raise Unavailable(f"{url}: manifest is too large")
            media_type = (resp.headers.get("Content-Type") or "").split(";")[0].strip()
            return body, media_type, resp.headers.get("Docker-Content-Digest")

    def open_blob(self, digest: str) -> Response:
        """A streaming response for one blob; the caller verifies and closes it."""
        return self._get(f"{self.endpoint.url}/blobs/{digest}", {}, what=f"blob {digest}")

    # -- HTTP -------------------------------------------------------------

    def may_send_credentials(self, url: str) -> bool:
        """Credentials go only over TLS, except to loopback or to the
        endpoint itself when it is configured as plain http."""
        parts = urlsplit(url)
        if parts.scheme == "https":
            return True
        host = parts.hostname or ""
        if _is_loopback_host(host):
            return True
        return self.endpoint.scheme == "http" and parts.netloc == self.endpoint.host

    def _get(self, url: str, headers: dict[str, str], *, what: str) -> Response:
        challenged = False
        redirects = 0
        origin = urlsplit(url)
        while True:
            hdrs = {"User-Agent": USER_AGENT, **headers}
            parts = urlsplit(url)
            # same scheme too: an https -> http redirect keeps no credentials
            same_origin = (parts.scheme, parts.netloc) == (origin.scheme, origin.netloc)
            with self._lock:
                auth = self._auth_header
            if auth and same_origin and self.may_send_credentials(url):
                hdrs["Authorization"] = auth
            resp = self._raw("GET", url, hdrs)
            if resp.status in (301, 302, 303, 307, 308):
                location = resp.headers.get("Location")
                resp.close()
                redirects += 1
                if not location or redirects > MAX_REDIRECTS:
                    raise Unavailable(f"{what}: too many or empty redirects")
                url = urljoin(url, location)
                if urlsplit(url).scheme not in ("http", "https"):
                    raise Unavailable(f"{what}: redirect to a non-http URL refused")
                _refuse_internal_redirect(url, self.resolve)
                continue
            if resp.status == 401 and not challenged and same_origin:
                challenge = resp.headers.get("WWW-Authenticate") or ""
                resp.read()
                resp.close()
                challenged = True
                self._authorize(challenge, url)
                continue
            if 200 <= resp.status < 300:
                return resp
            body = resp.read(64 << 10)
            resp.close()
            message = _error_message(body, f"HTTP {resp.status}")
            where = f"{self.endpoint.host}/{self.endpoint.repository}"
            if resp.status == 404:
                raise NotFound(f"{what} not found at {where}: {message}")
            if resp.status in (401, 403):
                raise Unauthorized(
                    f"pull access denied for {where} ({what}): HTTP {resp.status}: {message}"
                )
            raise Unavailable(f"{what} at {where}: HTTP {resp.status}: {message}")

    def _raw(
        self, method: str, url: str, headers: dict[str, str], body: bytes | None = None
    ) -> Response:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            if self._ssl is None:
                self._ssl = _ssl_context(self.endpoint.tls)
            conn = http.client.HTTPSConnection(
                parts.netloc, timeout=self.settings.timeout, context=self._ssl
            )
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=self.settings.timeout)
        try:
            conn.request(method, path, body=body, headers=headers)
            raw = conn.getresponse()
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            conn.close()
            raise Unavailable(f"registry {parts.netloc} unreachable: {exc}") from exc
        return Response(conn, raw)

    def _authorize(self, challenge: str, url: str) -> None:
        scheme, params = _parse_challenge(challenge)
        creds = self.credentials
        if scheme == "basic":
            if not creds.username:
                raise Unauthorized(f"{url}: registry wants basic auth and no credentials are set")
            if not self.may_send_credentials(url):
                raise Unauthorized(f"{url}: basic auth over plain http refused")
            token = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
            with self._lock:
                self._auth_header = f"Basic {token}"
            return
        if scheme != "bearer" or "realm" not in params:
            raise Unauthorized(f"{url}: unsupported auth challenge {challenge!r}")
        token = self._fetch_token(params)
        with self._lock:
            self._auth_header = f"Bearer {token}"

    def _fetch_token(self, params: dict[str, str]) -> str:
        realm = params["realm"]
        query: dict[str, str] = {}
        if "service" in params:
            query["service"] = params["service"]
        scope = params.get("scope") or f"repository:{self.endpoint.repository}:pull"
        query["scope"] = scope
        creds = self.credentials
        headers = {"User-Agent": USER_AGENT}
        body: bytes | None = None
        method = "GET"
        if creds.identity_token:
            method = "POST"
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            body = urlencode(
                {
                    "grant_type": "refresh_token",
                    "refresh_token": creds.identity_token,
                    "client_id": "skiff",
                    **query,
                }
            ).encode()
            url = realm
        else:
            sep = "&" if "?" in realm else "?"
            url = f"{realm}{sep}{urlencode(query)}"
            if creds.username:
                basic = base64.b64encode(f"{creds.username}:{creds.password}".encode()).decode()
                headers["Authorization"] = f"Basic {basic}"
        if urlsplit(url).scheme not in ("http", "https"):
            raise Unauthorized(f"token realm {_sanitize(realm)!r} is not an http(s) URL")
        if not self.may_send_credentials(url):
            # a realm over plain http would get Basic credentials in clear,
            # and its token could be swapped on the way
            raise Unauthorized(
                f"token realm {_sanitize(realm)!r} must be https "
                "(or the registry configured as plain http)"
            )
        with self._raw(method, url, headers, body) as resp:
            data = resp.read(1 << 20)
            if resp.status != 200:
                raise Unauthorized(
                    f"token server {_sanitize(realm)} refused: HTTP {resp.status}: {_error_message(data, '')}"
                )
        try:
            doc: Any = json.loads(data)
            token = doc.get("token") or doc.get("access_token")
        except (ValueError, AttributeError) as exc:
            raise Unauthorized(f"token server {_sanitize(realm)}: answer is not JSON") from exc
        if not isinstance(token, str) or not token:
            raise Unauthorized(f"token server {_sanitize(realm)}: no token in the answer")
        return token
