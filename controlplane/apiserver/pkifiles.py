"""The control plane's certificate files, made where they are missing by a
short-lived child process, so that the long-lived control plane (and `skiff
up`, which holds it) never loads `cryptography` for them.

`open_pki` is what a start calls: when everything under `<data-dir>/pki/` is
in place and current (tls.pki_current and frontproxy.front_proxy_current,
which read certificates without cryptography) it only reads the files;
otherwise a child runs `ensure` (tls.ensure_pki and
aggregator.frontproxy.ensure_front_proxy: the same files, made the same
way) and the files are read once it is done. `sign_agent_csr_in_child`
signs an agent's serving certificate at join the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from controlplane.apiserver.aggregator.frontproxy import (
    FrontProxy,
    ensure_front_proxy,
    front_proxy_current,
    load_front_proxy,
)
from controlplane.apiserver.tls import Pki, ensure_pki, load_pki, pki_current, sign_agent_csr
from machinery import inchild, x509read
from machinery.x509read import Address


def ensure(data_dir: str, extra_sans: list[str]) -> None:
    """(In the child.) Make whatever is missing or due under data_dir/pki."""
    ensure_pki(Path(data_dir), extra_sans)
    ensure_front_proxy(Path(data_dir))


def open_pki(data_dir: Path, extra_sans: list[str]) -> Pki:
    """The cluster PKI (tls.Pki), its missing files made first in a child."""
    if not pki_current(data_dir, extra_sans) or not front_proxy_current(data_dir):
        inchild.call(__name__, "ensure", unless_loaded="cryptography", data_dir=str(data_dir),
                     extra_sans=list(extra_sans))  # fmt: skip
    return load_pki(data_dir)


def open_front_proxy(data_dir: Path) -> FrontProxy:
    """The front proxy's credentials (open_pki made them)."""
    return load_front_proxy(data_dir)


def sign_agent_csr_file(pki_dir: str, node: str, csr_pem: str, checked: dict[str, str]) -> str:
    """(In the child.) tls.sign_agent_csr with the CA under `pki_dir`; an
    address is refused as `checked` says ("" : not refused), and refused
    when the caller did not check it."""

    def refuse(ip: Address) -> str | None:
        problem = checked.get(str(ip))
        return "not checked by the API server" if problem is None else (problem or None)

    pki = load_pki(Path(pki_dir).parent)
    return sign_agent_csr(pki, node, csr_pem.encode(), refuse).decode()


def sign_agent_csr_in_child(
    pki: Pki, node: str, csr_pem: bytes, refuse: Callable[[Address], str | None]
) -> bytes:
    """tls.sign_agent_csr in a child: the addresses the request asks for are
    read here (without checking its signature: the child checks it) and
    put to `refuse`, the child refuses what was refused or not asked."""
    try:
        asked = x509read.request_names(csr_pem).ips
    except ValueError:
        asked = []  # the child says what is wrong with it
    checked = {str(ip): refuse(ip) or "" for ip in asked}
    cert: str = inchild.call(__name__, "sign_agent_csr_file", unless_loaded="cryptography",
                             pki_dir=pki.pki_dir, node=node,
                             csr_pem=csr_pem.decode(errors="replace"), checked=checked)  # fmt: skip
    return cert.encode()
