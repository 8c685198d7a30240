"""A new private key and its certificate signing request, made in a
short-lived child (machinery.inchild runs certificates.request_pems), so that
a long-lived process asking for a certificate (the agent joining, its client
and serving certificate managers) never loads `cryptography`.
"""

from __future__ import annotations

from collections.abc import Sequence

from machinery import inchild


def new_request(
    subject: Sequence[tuple[str, str]], dns: Sequence[str] = (), ips: Sequence[str] = ()
) -> tuple[bytes, bytes]:
    """(private key PEM, CSR PEM): a new ECDSA P-256 key and its request for
    the `subject` attributes in order (("O", ...), ("CN", ...)), with the
    alternative names `dns` and `ips` (none: no extension)."""
    key_pem, csr_pem = inchild.call(
        "machinery.certificates", "request_pems", unless_loaded="cryptography",
        subject=[list(a) for a in subject], dns=list(dns), ips=list(ips),
    )  # fmt: skip
    return str(key_pem).encode(), str(csr_pem).encode()
