"""An agent endpoint's TLS for tests that embed the agent's endpoint: the
serving certificate a join would have issued, from the cluster's own CA."""

from __future__ import annotations

import ssl
from pathlib import Path

from agent import serving_tls
from controlplane.apiserver.tls import ensure_pki, sign_agent_csr
from controlplane.client.agents import AgentTLS, agent_csr


def agent_server_context(cp_data_dir: Path, node: str, root: Path) -> ssl.SSLContext:
    """What `skiff agent` serves after joining as `node` (files under `root`)."""
    pki = ensure_pki(cp_data_dir)
    csr, key = agent_csr(node, ["127.0.0.1"])
    serving_tls.save(root, sign_agent_csr(pki, node, csr), key)
    return serving_tls.server_context(root, pki.ca_pem)


def apiserver_agent_tls(cp_data_dir: Path) -> AgentTLS:
    """The API server's credential towards agents."""
    pki = ensure_pki(cp_data_dir)
    return AgentTLS(pki.ca_pem, pki.agent_client_cert_pem, pki.agent_client_key_pem)
