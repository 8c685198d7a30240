"""Certificate lifetimes, rotation near expiry and on demand, and the serving
certificate followed on disk (handshakes over memory BIOs: no socket)."""

from __future__ import annotations

import dataclasses
import datetime
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from controlplane.apiserver import tls
from controlplane.apiserver.certreload import ServingCertificate, agent_credential, follow
from controlplane.apiserver.rest.server import server_ssl_context
from controlplane.certcmd import main as certificate_main
from machinery import certificates

DAY = 86400.0


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _left_days(path: Path) -> float:
    now = datetime.datetime.now(datetime.UTC)
    return (_cert(path).not_valid_after_utc - now).total_seconds() / DAY


def test_lifetimes_are_a_year_and_the_ca_ten(tmp_path: Path) -> None:
    tls.ensure_pki(tmp_path)
    pki = tmp_path / "pki"
    assert 3649 < _left_days(pki / "ca.crt") <= 3650
    for leaf in ("server.crt", "apiserver-agent-client.crt"):
        assert 364 < _left_days(pki / leaf) <= 365
    expiries = tls.expirations(tmp_path)
    assert set(expiries) == {"ca.crt", "server.crt", "apiserver-agent-client.crt"}
    assert expiries["server.crt"] == _cert(pki / "server.crt").not_valid_after_utc.timestamp()


def _age(tmp_path: Path, name: str, days_left: int) -> None:
    """Re-sign pki/<name> (same key, same names) to expire in `days_left` days."""
    pki = tmp_path / "pki"
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    old = _cert(pki / name)
    public = old.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey)
    usage = old.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value[0]
    try:
        names = list(old.extensions.get_extension_for_class(x509.SubjectAlternativeName).value)
    except x509.ExtensionNotFound:
        names = []
    cn = old.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value
    pem = tls._sign(ca_key, _cert(pki / "ca.crt"), str(cn), public, usage, names,
                    datetime.timedelta(days=days_left))  # fmt: skip
    (pki / name).write_bytes(pem)


def test_certificates_within_90_days_of_expiry_are_reissued_at_start(tmp_path: Path) -> None:
    tls.ensure_pki(tmp_path, ["10.0.0.5"])
    pki = tmp_path / "pki"
    ca_before = (pki / "ca.crt").read_bytes()
    _age(tmp_path, "server.crt", 89)
    _age(tmp_path, "apiserver-agent-client.crt", 10)
    assert _left_days(pki / "server.crt") < 90
    tls.ensure_pki(tmp_path, ["10.0.0.5"])
    assert _left_days(pki / "server.crt") > 364
    assert _left_days(pki / "apiserver-agent-client.crt") > 364
    assert (pki / "ca.crt").read_bytes() == ca_before
    # An older skiff's ten-year leaf: re-issued once, for a year.
    _age(tmp_path, "server.crt", 3650)
    tls.ensure_pki(tmp_path, ["10.0.0.5"])
    assert 364 < _left_days(pki / "server.crt") <= 365
    # 91 days left: kept as it is.
    _age(tmp_path, "server.crt", 91)
    kept = (pki / "server.crt").read_bytes()
    tls.ensure_pki(tmp_path, ["10.0.0.5"])
    assert (pki / "server.crt").read_bytes() == kept


def test_certificate_rotate_keeps_names_and_ca(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tls.ensure_pki(tmp_path, ["10.9.8.7", "api.example"])
    pki = tmp_path / "pki"
    before = _cert(pki / "server.crt")
    ca = (pki / "ca.crt").read_bytes()
    assert certificate_main(["rotate", "--service", "api-server", "--data-dir", str(tmp_path)]) == 0
    assert "certificate server.crt rotated" in capsys.readouterr().out
    after = _cert(pki / "server.crt")
    assert after.serial_number != before.serial_number
    assert tls.certificate_addresses(after.public_bytes(serialization.Encoding.PEM)) == \
        tls.certificate_addresses(before.public_bytes(serialization.Encoding.PEM))  # fmt: skip
    assert (pki / "ca.crt").read_bytes() == ca
    with pytest.raises(SystemExit):
        certificate_main(["rotate", "--service", "nope", "--data-dir", str(tmp_path)])
    assert certificate_main(["check", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("server.crt\t") and line.endswith("OK") for line in lines)


def _handshake(server_ctx: ssl.SSLContext, ca_pem: bytes) -> bytes:
    """The server certificate a client sees (DER), over memory BIOs."""
    client_ctx = ssl.create_default_context(cadata=ca_pem.decode())
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname=tls.SERVER_NAME)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(20):
        for end in (client, server):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        try:
            client.do_handshake()
            server.do_handshake()
            break
        except ssl.SSLWantReadError:
            continue
    der = client.getpeercert(binary_form=True)
    assert der
    return der


def test_a_running_server_serves_the_rotated_certificate_at_the_next_handshake(
    tmp_path: Path,
) -> None:
    pki = tls.ensure_pki(tmp_path)
    serving = ServingCertificate(pki.pki_dir, pki.cert_pem, pki.key_pem)
    ctx = follow(
        serving, lambda c, k: server_ssl_context(dataclasses.replace(pki, cert_pem=c, key_pem=k))
    )
    first = x509.load_der_x509_certificate(_handshake(ctx, pki.ca_pem))
    assert first.serial_number == _cert(tmp_path / "pki" / "server.crt").serial_number
    # A half-done rotation (the new certificate beside the old key) is not taken up.
    other_key = certificates.key_pem(certificates.new_key())
    (tmp_path / "pki" / "server.crt.keep").write_bytes(
        (tmp_path / "pki" / "server.crt").read_bytes()
    )
    tls.rotate(tmp_path, ["api-server"])
    tls.ensure_pki(tmp_path)
    rotated = _cert(tmp_path / "pki" / "server.crt")
    second = x509.load_der_x509_certificate(_handshake(ctx, pki.ca_pem))
    assert second.serial_number == rotated.serial_number != first.serial_number
    (tmp_path / "pki" / "server.key").write_bytes(other_key)
    (tmp_path / "pki" / "server.crt").write_bytes(
        (tmp_path / "pki" / "server.crt.keep").read_bytes()
    )
    assert not serving.refresh()
    third = x509.load_der_x509_certificate(_handshake(ctx, pki.ca_pem))
    assert third.serial_number == rotated.serial_number


def test_the_client_certificate_towards_agents_is_followed_across_a_rotation(
    tmp_path: Path,
) -> None:
    pki = tls.ensure_pki(tmp_path)
    current = agent_credential(
        pki.pki_dir, pki.ca_pem, pki.agent_client_cert_pem, pki.agent_client_key_pem
    )
    assert current().cert_pem == pki.agent_client_cert_pem
    assert certificate_main(["rotate", "--data-dir", str(tmp_path)]) == 0
    rotated = (tmp_path / "pki" / "apiserver-agent-client.crt").read_bytes()
    assert rotated != pki.agent_client_cert_pem
    assert current().cert_pem == rotated
    assert current().key_pem == (tmp_path / "pki" / "apiserver-agent-client.key").read_bytes()
    assert _cert(tmp_path / "pki" / "apiserver-agent-client.crt").subject.rfc4514_string() == (
        f"CN={tls.AGENT_CLIENT_CN}"
    )
