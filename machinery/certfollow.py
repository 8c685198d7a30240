"""A certificate and key followed on disk, and a TLS context that serves
the newest at each handshake (as Kubernetes' dynamic serving certificate
controller does for kube-apiserver, the kubelet and the other components).

Whoever replaces `<dir>/<name>.crt` and `.key` (`skiff certificate rotate`,
an agent renewing its serving certificate) needs to tell no one: each new
TLS handshake then gets the new certificate, with no restart and no dropped
connection; established connections keep the one they began with. Looking
costs one stat() per handshake; the files are read again only when the
certificate's modification time or size changed, and a pair that does not
load (half written, a key of another certificate) is ignored until it does,
with the last good one kept.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class ServingCertificate:
    """The current (cert PEM, key PEM) of `<pki_dir>/<name>.{crt,key}` (the
    serving certificate by default; the API server's client certificate
    towards agents is followed the same way)."""

    def __init__(self, pki_dir: str, cert_pem: bytes, key_pem: bytes, name: str = "server") -> None:
        self._crt = Path(pki_dir) / f"{name}.crt"
        self._key = Path(pki_dir) / f"{name}.key"
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self.cert_pem, self.key_pem = cert_pem, key_pem
        self.generation = 0

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self._crt)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def refresh(self) -> bool:
        """Re-read the files when they changed; whether the certificate did."""
        stamp = self._stat()
        if stamp is None or stamp == self._stamp:
            return False
        with self._lock:
            if stamp == self._stamp:
                return False
            # loaded only once a followed certificate changed (never at rest)
            from cryptography import x509
            from cryptography.hazmat.primitives import serialization

            try:
                cert, key = self._crt.read_bytes(), self._key.read_bytes()
                public = x509.load_pem_x509_certificate(cert).public_key()
                private = serialization.load_pem_private_key(key, None)
            except (OSError, ValueError) as err:
                log.warning("%s: not loaded (%s); keeping the current certificate", self._crt, err)
                return False
            if public != private.public_key():
                return False  # the key not yet written beside a new certificate
            self._stamp = stamp
            self.cert_pem, self.key_pem = cert, key
            self.generation += 1
            log.info("certificate reloaded from %s", self._crt)
            return True


def follow(
    serving: ServingCertificate, build: Callable[[bytes, bytes], ssl.SSLContext]
) -> ssl.SSLContext:
    """An SSLContext for the REST port whose handshakes switch to a context
    with the new certificate once it changed (`build(cert, key)` makes one)."""
    current: dict[str, Any] = {"generation": serving.generation, "context": None}

    def on_hello(sock: Any, server_name: str | None, context: ssl.SSLContext) -> None:
        serving.refresh()
        if current["generation"] != serving.generation:
            fresh = build(serving.cert_pem, serving.key_pem)
            fresh.sni_callback = on_hello
            current.update(generation=serving.generation, context=fresh)
        if current["context"] is not None and sock.context is not current["context"]:
            sock.context = current["context"]

    first = build(serving.cert_pem, serving.key_pem)
    first.sni_callback = on_hello
    return first
