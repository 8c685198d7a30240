"""The API server's serving certificate, followed on disk (as kube-apiserver's
dynamic serving certificate controller does).

`skiff certificate rotate` (or any writer of `pki/server.crt` and
`server.key`) replaces the files; each new TLS handshake, on the REST port
and on the gRPC ports, then gets the new certificate, with no restart and
no dropped connection: established connections keep the one they began
with. Looking costs one stat() per handshake; the files are read again only
when the certificate's modification time or size changed, and a pair that
does not load (half written, a key of another certificate) is ignored until
it does, with the last good one kept (machinery/certfollow.py). The API server's client certificate towards
agents (`apiserver-agent-client.crt`) is followed the same way, at the
next call to an agent (`agent_credential`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from machinery.certfollow import ServingCertificate, follow

if TYPE_CHECKING:
    from controlplane.client.agents import AgentTLS

__all__ = ["ServingCertificate", "agent_credential", "follow", "grpc_credentials"]


def grpc_credentials(serving: ServingCertificate) -> Any:
    """gRPC server credentials that take up a changed certificate per handshake."""
    import grpc

    def config() -> Any:
        return grpc.ssl_server_certificate_configuration([(serving.key_pem, serving.cert_pem)])

    def fetch() -> Any:
        return config() if serving.refresh() else None

    return grpc.dynamic_ssl_server_credentials(config(), fetch, require_client_authentication=False)


def agent_credential(
    pki_dir: str, ca_pem: bytes, cert_pem: bytes, key_pem: bytes
) -> Callable[[], AgentTLS]:
    """The API server's current credential towards agents, re-read when rotated."""
    from controlplane.client.agents import AgentTLS

    client = ServingCertificate(pki_dir, cert_pem, key_pem, "apiserver-agent-client")
    current = {"tls": AgentTLS(ca_pem, cert_pem, key_pem)}

    def get() -> AgentTLS:
        if client.refresh():
            current["tls"] = AgentTLS(ca_pem, client.cert_pem, client.key_pem)
        return current["tls"]

    return get
