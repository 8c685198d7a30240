"""What a PEM X.509 certificate or certificate request says, read from its
DER without a crypto library: a certificate's validity dates and subject
alternative names, a request's subject and alternative names.

Reading a certificate's public fields is a walk over nested tag-length-value
records (RFC 5280 section 4.1); no key and no signature is involved, so a
process that only needs to know when a certificate expires (the agent's and
the API server's certificate metrics, a certificate manager deciding when to
renew, a start deciding whether to re-issue) does not load `cryptography`
(about 9 MB a process). Checking a signature or making a certificate is
`machinery.certificates`' job, in a short-lived child (machinery.inchild)
where a long-lived process calls it.

Raises ValueError for anything that is not a well-formed certificate (or
request). That a request is signed by its key is checked where it is
signed, or in a child (controlplane.api.csr).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
from dataclasses import dataclass, field

BEGIN, END = b"-----BEGIN CERTIFICATE-----", b"-----END CERTIFICATE-----"
SEQUENCE, UTC_TIME, GENERALIZED_TIME, OID = 0x30, 0x17, 0x18, 0x06
EXTENSIONS = 0xA3  # tbsCertificate's [3] EXPLICIT
SAN_OID = bytes([0x55, 0x1D, 0x11])  # 2.5.29.17, subjectAltName
# GeneralName's [1] rfc822Name, [2] dNSName, [6] URI, [7] iPAddress
EMAIL, DNS_NAME, URI, IP_ADDRESS = 0x81, 0x82, 0x86, 0x87
REQUEST_BEGIN = b"-----BEGIN CERTIFICATE REQUEST-----"
REQUEST_END = b"-----END CERTIFICATE REQUEST-----"
COMMON_NAME, ORGANIZATION = bytes([0x55, 0x04, 0x03]), bytes([0x55, 0x04, 0x0A])
# PKCS#9 extensionRequest, 1.2.840.113549.1.9.14
EXTENSION_REQUEST = bytes([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x0E])

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _tlv(der: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the record at `pos`."""
    if pos + 2 > end:
        raise ValueError("x509: truncated record")
    tag, first = der[pos], der[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or pos + count > end:
            raise ValueError("x509: bad length")
        length = int.from_bytes(der[pos : pos + count], "big")
        pos += count
    if pos + length > end:
        raise ValueError("x509: record longer than its container")
    return tag, pos, pos + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    found = []
    pos = start
    while pos < end:
        tag, value, after = _tlv(der, pos, end)
        found.append((tag, value, after))
        pos = after
    return found


def pem_to_der(pem: bytes, begin_line: bytes = BEGIN, end_line: bytes = END) -> bytes:
    """The DER of the first certificate (or other block) in `pem`."""
    begin = pem.find(begin_line)
    stop = pem.find(end_line, begin + len(begin_line)) if begin >= 0 else -1
    if begin < 0 or stop < 0:
        raise ValueError("x509: no PEM block " + begin_line.decode().strip("-"))
    try:
        body = b"".join(pem[begin + len(begin_line) : stop].split())
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("x509: bad base64 in the PEM block") from None


def _tbs(der: bytes) -> list[tuple[int, int, int]]:
    """The fields of tbsCertificate, the explicit version skipped."""
    tag, start, end = _tlv(der, 0, len(der))
    if tag != SEQUENCE or end != len(der):
        raise ValueError("x509: not a certificate")
    parts = _children(der, start, end)
    if len(parts) != 3 or parts[0][0] != SEQUENCE:
        raise ValueError("x509: not a certificate")
    fields = _children(der, parts[0][1], parts[0][2])
    if fields and fields[0][0] == 0xA0:
        fields = fields[1:]
    # serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, ...
    if len(fields) < 6 or fields[3][0] != SEQUENCE:
        raise ValueError("x509: not a certificate")
    return fields


def _time(der: bytes, tag: int, start: int, end: int) -> datetime.datetime:
    text = der[start:end].decode("ascii", "replace")
    if tag == UTC_TIME and len(text) == 13 and text.endswith("Z"):
        year = int(text[:2])
        text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"  # RFC 5280 4.1.2.5.1
    elif tag != GENERALIZED_TIME or len(text) != 15 or not text.endswith("Z"):
        raise ValueError("x509: bad validity time")
    try:
        at = datetime.datetime.strptime(text, "%Y%m%d%H%M%SZ")
    except ValueError:
        raise ValueError("x509: bad validity time") from None
    return at.replace(tzinfo=datetime.UTC)


def validity(pem: bytes) -> tuple[datetime.datetime, datetime.datetime]:
    """(notBefore, notAfter) of the first certificate in `pem`, in UTC."""
    der = pem_to_der(pem)
    field = _tbs(der)[3]
    times = _children(der, field[1], field[2])
    if len(times) != 2:
        raise ValueError("x509: bad validity")
    return _time(der, *times[0]), _time(der, *times[1])


def not_after(pem: bytes) -> datetime.datetime:
    return validity(pem)[1]


@dataclass
class Names:
    """A subject's common name and organizations, and the subject
    alternative names by kind, in the order written."""

    common_name: str = ""
    organizations: list[str] = field(default_factory=list)
    dns: list[str] = field(default_factory=list)
    ips: list[Address] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    uris: list[str] = field(default_factory=list)


def _text(der: bytes, start: int, end: int) -> str:
    try:
        return der[start:end].decode()
    except UnicodeDecodeError:
        raise ValueError("x509: a name is not text") from None


def _subject(der: bytes, start: int, end: int, names: Names) -> None:
    """The common name and organizations of a Name (RDNSequence)."""
    for _, set_start, set_end in _children(der, start, end):
        for _, atv_start, atv_end in _children(der, set_start, set_end):
            parts = _children(der, atv_start, atv_end)
            if len(parts) != 2 or parts[0][0] != OID:
                raise ValueError("x509: bad name")
            oid = der[parts[0][1] : parts[0][2]]
            if oid == COMMON_NAME:
                # Readers disagree on which of two common names counts (Go's
                # keeps the last, others the first): a name with two is
                # refused, so what is approved is what authenticates.
                if names.common_name:
                    raise ValueError("x509: more than one common name")
                names.common_name = _text(der, parts[1][1], parts[1][2])
            elif oid == ORGANIZATION:
                names.organizations.append(_text(der, parts[1][1], parts[1][2]))


def _extensions(der: bytes, start: int, end: int, names: Names) -> None:
    """The subjectAltName of an Extensions sequence."""
    for _, ext_start, ext_end in _children(der, start, end):
        parts = _children(der, ext_start, ext_end)
        if not parts or parts[0][0] != OID or der[parts[0][1] : parts[0][2]] != SAN_OID:
            continue
        _, value_start, value_end = parts[-1]  # the OCTET STRING holding GeneralNames
        _, names_start, names_end = _tlv(der, value_start, value_end)
        for ntag, nstart, nend in _children(der, names_start, names_end):
            if ntag == DNS_NAME:
                names.dns.append(_text(der, nstart, nend))
            elif ntag == IP_ADDRESS and nend - nstart in (4, 16):
                names.ips.append(ipaddress.ip_address(der[nstart:nend]))
            elif ntag == EMAIL:
                names.emails.append(_text(der, nstart, nend))
            elif ntag == URI:
                names.uris.append(_text(der, nstart, nend))


def certificate_names(pem: bytes) -> Names:
    """The subject and alternative names of the first certificate in `pem`."""
    der = pem_to_der(pem)
    fields = _tbs(der)
    names = Names()
    _subject(der, fields[4][1], fields[4][2], names)
    for tag, start, end in fields[6:]:
        if tag == EXTENSIONS:
            _, seq_start, seq_end = _tlv(der, start, end)
            _extensions(der, seq_start, seq_end, names)
    return names


def alt_names(pem: bytes) -> tuple[set[str], set[str]]:
    """(DNS names, IP addresses) of the first certificate's subjectAltName."""
    names = certificate_names(pem)
    return set(names.dns), {str(ip) for ip in names.ips}


def request_names(pem: bytes) -> Names:
    """The subject and requested alternative names of the first certificate
    request (PKCS#10) in `pem`; its signature is not checked here."""
    der = pem_to_der(pem, REQUEST_BEGIN, REQUEST_END)
    tag, start, end = _tlv(der, 0, len(der))
    if tag != SEQUENCE or end != len(der):
        raise ValueError("x509: not a certificate request")
    parts = _children(der, start, end)
    if len(parts) != 3 or parts[0][0] != SEQUENCE:
        raise ValueError("x509: not a certificate request")
    info = _children(der, parts[0][1], parts[0][2])  # version, subject, key, [0] attributes
    if len(info) < 3 or info[1][0] != SEQUENCE:
        raise ValueError("x509: not a certificate request")
    names = Names()
    _subject(der, info[1][1], info[1][2], names)
    for tag, start, end in info[3:]:
        if tag != 0xA0:
            continue
        for _, attr_start, attr_end in _children(der, start, end):
            attr = _children(der, attr_start, attr_end)
            if len(attr) == 2 and der[attr[0][1] : attr[0][2]] == EXTENSION_REQUEST:
                for _, ext_start, ext_end in _children(der, attr[1][1], attr[1][2]):
                    _extensions(der, ext_start, ext_end, names)
    return names


def check(pem: bytes) -> None:
    """ValueError unless `pem` holds a certificate whose structure parses."""
    der = pem_to_der(pem)
    _tbs(der)
    validity(pem)
