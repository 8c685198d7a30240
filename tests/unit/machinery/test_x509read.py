"""machinery.x509read reads what cryptography reads (dates, subject, names)
from certificates and requests made by machinery.certificates, and
machinery.inchild runs a call in a child that leaves the caller without
`cryptography`."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import subprocess
import sys

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from machinery import certificates, inchild, x509read

NAMES: list[x509.GeneralName] = [
    x509.DNSName("node-1"),
    x509.DNSName("node-1.example"),
    x509.IPAddress(ipaddress.ip_address("10.0.0.7")),
    x509.IPAddress(ipaddress.ip_address("fd00::7")),
]


@pytest.mark.parametrize("days", [1, 365, 3650 * 5])  # UTCTime, and GeneralizedTime past 2049
def test_a_certificate_reads_as_cryptography_reads_it(days: int) -> None:
    key = certificates.new_key()
    extensions = certificates.leaf_extensions([ExtendedKeyUsageOID.SERVER_AUTH])
    extensions.append((x509.SubjectAlternativeName(NAMES), False))
    pem = certificates.self_signed(
        certificates.common_name("n"), key, datetime.timedelta(days=days), extensions
    )
    cert = x509.load_pem_x509_certificate(pem)
    assert x509read.validity(pem) == (cert.not_valid_before_utc, cert.not_valid_after_utc)
    assert x509read.alt_names(pem) == ({"node-1", "node-1.example"}, {"10.0.0.7", "fd00::7"})
    assert x509read.certificate_names(pem).common_name == "n"
    bare = certificates.self_signed(certificates.common_name("m"), key, datetime.timedelta(1))
    assert x509read.alt_names(bare) == (set(), set())


def test_a_request_reads_its_subject_and_names() -> None:
    subject = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes"),
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "two"),
        x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-1"),
    ])  # fmt: skip
    extra = [x509.RFC822Name("a@b.example"), x509.UniformResourceIdentifier("spiffe://x/y")]
    _, pem = certificates.signing_request(subject, [*NAMES, *extra])
    names = x509read.request_names(pem)
    assert (names.common_name, names.organizations) == (
        "system:node:node-1",
        ["system:nodes", "two"],
    )
    assert names.dns == ["node-1", "node-1.example"]
    assert names.ips == [ipaddress.ip_address("10.0.0.7"), ipaddress.ip_address("fd00::7")]
    assert (names.emails, names.uris) == (["a@b.example"], ["spiffe://x/y"])
    _, plain = certificates.signing_request(certificates.common_name("alice"))
    assert x509read.request_names(plain) == x509read.Names(common_name="alice")


def test_a_request_with_two_common_names_is_refused() -> None:
    """Go keeps the last common name, a first-wins reader the first: a CSR
    that could read as system:node:a to its approver and as another name
    to an authenticator is no request at all."""
    subject = x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, "system:node:node-1"),
        x509.NameAttribute(NameOID.COMMON_NAME, "admin"),
    ])  # fmt: skip
    _, pem = certificates.signing_request(subject)
    with pytest.raises(ValueError, match="more than one common name"):
        x509read.request_names(pem)


@pytest.mark.parametrize(
    "pem",
    [b"", b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
     b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n"],
)  # fmt: skip
def test_what_is_no_certificate_is_refused(pem: bytes) -> None:
    with pytest.raises(ValueError):
        x509read.validity(pem)
    with pytest.raises(ValueError):
        x509read.check(pem)


def test_a_call_in_a_child_leaves_the_caller_without_cryptography() -> None:
    code = (
        "import sys, json\n"
        "from machinery import certrequest, inchild, x509read\n"
        "key, csr = certrequest.new_request([('CN', 'n')], ['n'], ['10.0.0.1'])\n"
        "names = x509read.request_names(csr)\n"
        "try:\n"
        "    inchild.call('ipaddress', 'ip_address', address='nonsense')\n"
        "    refused = ''\n"
        "except ValueError as err:\n"
        "    refused = str(err)\n"
        "print(json.dumps([key.startswith(b'-----BEGIN PRIVATE KEY'), names.dns, refused,\n"
        "                  'cryptography' in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    key_made, dns, refused, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert key_made and dns == ["n"] and "does not appear to be" in refused
    assert loaded is False


def test_a_child_that_fails_otherwise_says_so() -> None:
    with pytest.raises(inchild.ChildError, match="no_such_module"):
        inchild.call("no_such_module", "f")


def test_a_call_runs_in_the_caller_once_its_import_is_loaded_with_the_same_errors() -> None:
    # json is loaded here; the module named below is not.
    assert inchild.call("os", "getpid", unless_loaded="json") == os.getpid()
    assert inchild.call("os", "getpid", unless_loaded="no_such_module_here") != os.getpid()
    with pytest.raises(ValueError, match="does not appear to be"):
        inchild.call("ipaddress", "ip_address", unless_loaded="json", address="nonsense")
    with pytest.raises(inchild.ChildError, match="no_such_module"):
        inchild.call("no_such_module", "f", unless_loaded="json")
    # the result passes through JSON as from a child: a tuple comes back a list
    assert inchild.call("os.path", "split", unless_loaded="json", p="/a/b") == ["/a", "b"]
