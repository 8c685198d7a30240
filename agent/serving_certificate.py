"""The agent endpoint's serving certificate, renewed as the kubelet renews
its own with serverTLSBootstrap (`--rotate-server-certificates`).

The first one comes with the node's credential at join (serving_tls.py).
Before it expires the agent asks for the next through the
CertificateSigningRequest API: signer `kubernetes.io/kubelet-serving`,
subject CN `system:node:NAME` and O `system:nodes`, the node's addresses as
subject alternative names (its name and Hostname addresses as DNS names,
its InternalIP and ExternalIP addresses as IPs; loopback never, as at
join), usages digital signature and server auth: at a random point between
70% and 90% of the current one's lifetime (jitter, as the kubelet's
certificate manager). The control plane's csrapproving controller approves
such a request from the node itself when its names are the Node's
addresses; its csrsigning controller signs it. The new key and
certificate replace `serving.key` (0600 from creation) and `serving.crt`,
and the endpoint, which follows those files, serves the new certificate
from the next TLS handshake on (connections open keep theirs). A request
that is denied, fails or is not answered is retried with backoff while the
current certificate is served.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent import serving_tls
from agent.client_certificate import (
    ISSUE_TIMEOUT,
    NODES_GROUP,
    RETRIED,
    csr_object,
    lifetime,
    renew_until_stopped,
    rotation_time,
    wait_issued,
)
from machinery.certrequest import new_request

log = logging.getLogger(__name__)

SIGNER = "kubernetes.io/kubelet-serving"
USAGES = ["digital signature", "server auth"]  # an ECDSA key: no key encipherment
DNS_TYPES = ("Hostname", "InternalDNS", "ExternalDNS")
IP_TYPES = ("InternalIP", "ExternalIP")


def subject_alt_names(node: str, addresses: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """The node's name and addresses as SANs, as the kubelet asks for them."""
    dns = [node]
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for entry in addresses:
        kind, value = entry.get("type", ""), entry.get("address", "")
        if kind in DNS_TYPES and value and value not in dns:
            dns.append(value)
        elif kind in IP_TYPES:
            try:
                ip = ipaddress.ip_address(value)
            except ValueError:
                continue
            if not ip.is_loopback and ip not in ips:
                ips.append(ip)
    return dns, [str(ip) for ip in ips]


def serving_request(node: str, addresses: list[dict[str, str]]) -> tuple[bytes, bytes]:
    """(private key PEM, CSR PEM) for node `node`'s serving certificate."""
    dns, ips = subject_alt_names(node, addresses)
    return new_request((("O", NODES_GROUP), ("CN", f"system:node:{node}")), dns, ips)


class ServingCertificateManager:
    """Renews `<root>/serving.crt` and `serving.key` (module docstring)."""

    def __init__(
        self,
        api: Any,  # create/get CertificateSigningRequests
        node: str,
        root: Path,
        addresses: Callable[[], list[dict[str, str]]],
        stop: threading.Event,
        seconds: int = 0,
        now: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
        rng: random.Random | None = None,
        issue_timeout: float = ISSUE_TIMEOUT,
    ) -> None:
        self.api = api
        self.node = node
        self.root = root
        self.addresses = addresses
        self.stop = stop
        self.seconds = seconds
        self.now = now
        self.rng = rng or random.Random()
        self.issue_timeout = issue_timeout  # how long one request waits for its certificate
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="serving-cert", daemon=True)
        self._thread.start()

    def due(self) -> float:
        """Seconds until the current certificate should be renewed (0: now)."""
        try:
            when = rotation_time((self.root / serving_tls.CERT_FILE).read_bytes(), self.rng)
        except (OSError, ValueError):
            return 0.0
        return max(0.0, (when - self.now()).total_seconds())

    def renew(self) -> None:
        """One request; on success the endpoint serves the new certificate."""
        key_pem, request_pem = serving_request(self.node, self.addresses())
        request = csr_object(request_pem, self.seconds, SIGNER, USAGES)
        cert, key = wait_issued(self.api, self.node, request, key_pem, self.stop,
                                self.issue_timeout)  # fmt: skip
        serving_tls.save(self.root, cert, key)
        _, end = lifetime(cert)
        log.info("node=%s serving certificate renewed, valid until %s", self.node,
                 end.isoformat())  # fmt: skip

    def run(self) -> None:
        # OSError too: the new pair is written to the node's disk.
        renew_until_stopped(self.stop, self.due, self.renew,
                            f"node={self.node} serving certificate", (*RETRIED, OSError))  # fmt: skip
