"""The service-account signing key is parsed at its first use (cryptography
stays out of a control plane at rest), but a wrong or torn sa.key is still
refused when the API server starts, as before."""

from __future__ import annotations

import pytest

from controlplane.apiserver.satokens import ServiceAccountTokens
from machinery import certificates


def no_lookup(*_: object) -> None:
    return None


def test_a_whole_key_is_taken_and_signs_at_first_use() -> None:
    tokens = ServiceAccountTokens(certificates.key_pem(certificates.new_key()), no_lookup)
    account = {"metadata": {"name": "sa", "uid": "uid-1"}}
    issued = tokens.issue(
        "default", account, ["https://kubernetes.default.svc.cluster.local"], 3600
    )
    assert issued.token.count(".") == 2 and len(tokens.kid) == 32


@pytest.mark.parametrize(
    ("pem", "problem"),
    [
        (b"", "no PEM block of a private key"),
        (b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n", "no PEM block"),
        (b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI", "no PEM block BEGIN EC PRIVATE KEY"),  # torn
        (b"-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----\n", "bad base64"),
    ],
)
def test_a_wrong_or_torn_key_is_refused_at_start(pem: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ServiceAccountTokens(pem, no_lookup)
