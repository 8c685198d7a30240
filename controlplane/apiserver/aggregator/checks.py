"""Reaching an extension API server as the front proxy: TLS and the discovery check.

`client_context(proxy, ca_bundle, insecure)` is the TLS context towards an
APIService's server: the proxy's client certificate, and the server's
certificate checked against the APIService's caBundle (the system roots
when it has none; nothing with insecureSkipTLSVerify), for the name
`<service>.<namespace>.svc` as kube-aggregator asks for it.
`discovery_check(...)` is the availability controller's probe: GET
/apis/<group>/<version> (with the proxy's credential and no user), 2xx
passes; the resource list it answers is kept for aggregated discovery,
and its /openapi/v2 document is merged into the API server's.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from typing import Any

from controlplane.apiserver.aggregator.frontproxy import GROUP_HEADER, USER_HEADER, FrontProxy
from controlplane.client.agents import load_chain

TIMEOUT = 5.0
MAX_DOCUMENT = 16 << 20


def client_context(proxy: FrontProxy, ca_bundle: str, insecure: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    load_chain(context, proxy.cert_pem, proxy.key_pem)
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif ca_bundle:
        context.load_verify_locations(cadata=base64.b64decode(ca_bundle).decode())
    else:
        context.load_default_certs()
    return context


class _Connection(http.client.HTTPSConnection):
    """HTTPS to an address, checking the certificate for another name."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, name: str) -> None:
        super().__init__(host, port, timeout=TIMEOUT, context=context)
        self._context: ssl.SSLContext = context
        self._name = name

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._name)


def split_url(url: str) -> tuple[str, int]:
    host, _, port = url.removeprefix("https://").rpartition(":")
    return host.strip("[]"), int(port)


def get_json(url: str, context: ssl.SSLContext, server_name: str, path: str) -> dict[str, Any]:
    """GET `path` from the server at `url` as the aggregator (a JSON object,
    {} when the body is none); raises ValueError with kube-aggregator's
    FailedDiscoveryCheck message."""
    where = f"{url}{path}"
    host, port = split_url(url)
    connection = _Connection(host, port, context, server_name)
    try:
        try:
            connection.request("GET", path, headers={"Accept": "application/json",
                                                     USER_HEADER: "system:kube-aggregator",
                                                     GROUP_HEADER: "system:masters"})  # fmt: skip
            response = connection.getresponse()
            body = response.read(MAX_DOCUMENT)
        except (OSError, http.client.HTTPException) as err:
            raise ValueError(f"failing or missing response from {where}: {err}") from err
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        raise ValueError(f"failing or missing response from {where}: bad status from {where}: "
                         f"{response.status}")  # fmt: skip
    try:
        doc = json.loads(body)
    except ValueError:
        doc = {}
    return doc if isinstance(doc, dict) else {}


def discovery_check(
    url: str, context: ssl.SSLContext, server_name: str, group_version: str
) -> dict[str, Any]:
    """The APIResourceList the server at `url` answers for the group/version;
    raises ValueError with kube-aggregator's FailedDiscoveryCheck message."""
    path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    return get_json(url, context, server_name, path)


def openapi_v2(url: str, context: ssl.SSLContext, server_name: str) -> dict[str, Any] | None:
    """The server's Swagger 2.0 document (/openapi/v2), None when it has none."""
    try:
        doc = get_json(url, context, server_name, "/openapi/v2")
    except ValueError:
        return None
    return doc if isinstance(doc.get("definitions"), dict) else None
