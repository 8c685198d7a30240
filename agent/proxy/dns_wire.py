"""DNS messages on the wire (RFC 1035, with RFC 2782 SRV and RFC 6891 EDNS).

`parse(data)` decodes a message — following compression pointers safely
(each pointer must go backwards, so a loop cannot happen) — and re-encodes the
names inside known record types uncompressed, so every `Record.rdata` stands
on its own; `Message.to_wire()` compresses owner names only. Helpers
build and read the rdata of the record types the cluster DNS answers with.
Nothing here opens a socket or knows about Kubernetes; malformed input
raises `FormatError`, never anything else.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass, field

# Record types and classes.
A, NS, CNAME, SOA, PTR, MX, TXT, AAAA, SRV, OPT, ANY = 1, 2, 5, 6, 12, 15, 16, 28, 33, 41, 255
IN = 1
# Response codes.
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5

HEADER = struct.Struct("!HHHHHH")
MAX_NAME = 255
MAX_LABEL = 63


class FormatError(ValueError):
    """The bytes are not a well-formed DNS message."""


@dataclass(frozen=True)
class Question:
    name: str  # dotted, without the trailing dot, case as sent
    qtype: int
    qclass: int = IN


@dataclass(frozen=True)
class Record:
    name: str
    rtype: int
    rclass: int
    ttl: int
    rdata: bytes


@dataclass
class Message:
    id: int = 0
    qr: bool = False
    opcode: int = 0
    aa: bool = False
    tc: bool = False
    rd: bool = False
    ra: bool = False
    rcode: int = NOERROR
    questions: list[Question] = field(default_factory=list)
    answers: list[Record] = field(default_factory=list)
    authorities: list[Record] = field(default_factory=list)
    additionals: list[Record] = field(default_factory=list)

    @property
    def flags(self) -> int:
        return (
            (int(self.qr) << 15)
            | ((self.opcode & 0xF) << 11)
            | (int(self.aa) << 10)
            | (int(self.tc) << 9)
            | (int(self.rd) << 8)
            | (int(self.ra) << 7)
            | (self.rcode & 0xF)
        )

    def edns(self) -> Record | None:
        for rec in self.additionals:
            if rec.rtype == OPT:
                return rec
        return None

    def to_wire(self) -> bytes:
        out = bytearray(
            HEADER.pack(
                self.id,
                self.flags,
                len(self.questions),
                len(self.answers),
                len(self.authorities),
                len(self.additionals),
            )
        )
        seen: dict[str, int] = {}
        for q in self.questions:
            out += _compressed(q.name, len(out), seen) + struct.pack("!HH", q.qtype, q.qclass)
        for rec in (*self.answers, *self.authorities, *self.additionals):
            out += _compressed(rec.name, len(out), seen)
            out += struct.pack("!HHIH", rec.rtype, rec.rclass, rec.ttl, len(rec.rdata))
            out += rec.rdata
        return bytes(out)


def encode_name(name: str) -> bytes:
    name = name.rstrip(".")
    out = bytearray()
    if name:
        for label in name.split("."):
            raw = label.encode("ascii", errors="strict") if label.isascii() else b""
            if not raw or len(raw) > MAX_LABEL:
                raise FormatError(f"bad label in {name!r}")
            out += bytes([len(raw)]) + raw
    out += b"\x00"
    if len(out) > MAX_NAME:
        raise FormatError(f"name too long: {name!r}")
    return bytes(out)


def _compressed(name: str, offset: int, seen: dict[str, int]) -> bytes:
    """`name` encoded at `offset`, ending in a pointer to an earlier copy of
    its longest known suffix (owner names only; rdata stays uncompressed)."""
    labels = [label for label in name.rstrip(".").split(".") if label]
    encode_name(name)  # validates labels and length
    out = bytearray()
    for i in range(len(labels)):
        suffix = ".".join(labels[i:])
        if suffix in seen:
            pointer = seen[suffix]
            return bytes(out) + struct.pack("!H", 0xC000 | pointer)
        if offset + len(out) < 0x3FFF:
            seen[suffix] = offset + len(out)
        raw = labels[i].encode("ascii")
        out += bytes([len(raw)]) + raw
    return bytes(out) + b"\x00"


def decode_name(data: bytes, offset: int) -> tuple[str, int]:
    """The name at `offset` and the offset just after it (after the first
    pointer, if the name is compressed)."""
    labels: list[str] = []
    end = -1
    pos = offset
    length = 0
    while True:
        if pos >= len(data):
            raise FormatError("name runs past the end")
        n = data[pos]
        if n & 0xC0 == 0xC0:
            if pos + 1 >= len(data):
                raise FormatError("truncated pointer")
            target = ((n & 0x3F) << 8) | data[pos + 1]
            if target >= pos:
                raise FormatError("compression pointer does not point backwards")
            if end < 0:
                end = pos + 2
            pos = target
            continue
        if n & 0xC0:
            raise FormatError("unknown label type")
        pos += 1
        if n == 0:
            break
        if pos + n > len(data):
            raise FormatError("label runs past the end")
        length += n + 1
        if length > MAX_NAME:
            raise FormatError("name too long")
        labels.append(data[pos : pos + n].decode("ascii", errors="replace"))
        pos += n
    return ".".join(labels), (end if end >= 0 else pos)


def _take(data: bytes, offset: int, size: int) -> bytes:
    if offset + size > len(data):
        raise FormatError("message truncated")
    return data[offset : offset + size]


def _rdata(data: bytes, rtype: int, start: int, length: int) -> bytes:
    """Rdata with embedded names decompressed, so it no longer needs `data`."""
    raw = _take(data, start, length)
    if rtype in (CNAME, NS, PTR):
        name, _ = decode_name(data, start)
        return encode_name(name)
    if rtype == SRV:
        if length < 7:
            raise FormatError("short SRV")
        target, _ = decode_name(data, start + 6)
        return raw[:6] + encode_name(target)
    if rtype == MX:
        if length < 3:
            raise FormatError("short MX")
        target, _ = decode_name(data, start + 2)
        return raw[:2] + encode_name(target)
    if rtype == SOA:
        mname, pos = decode_name(data, start)
        rname, pos = decode_name(data, pos)
        return encode_name(mname) + encode_name(rname) + _take(data, pos, 20)
    return raw


def parse(data: bytes) -> Message:
    if len(data) < HEADER.size:
        raise FormatError("shorter than a header")
    ident, flags, qd, an, ns, ar = HEADER.unpack_from(data)
    msg = Message(
        id=ident,
        qr=bool(flags >> 15 & 1),
        opcode=flags >> 11 & 0xF,
        aa=bool(flags >> 10 & 1),
        tc=bool(flags >> 9 & 1),
        rd=bool(flags >> 8 & 1),
        ra=bool(flags >> 7 & 1),
        rcode=flags & 0xF,
    )
    pos = HEADER.size
    for _ in range(qd):
        name, pos = decode_name(data, pos)
        qtype, qclass = struct.unpack("!HH", _take(data, pos, 4))
        pos += 4
        msg.questions.append(Question(name, qtype, qclass))
    for count, section in ((an, msg.answers), (ns, msg.authorities), (ar, msg.additionals)):
        for _ in range(count):
            name, pos = decode_name(data, pos)
            rtype, rclass, ttl, length = struct.unpack("!HHIH", _take(data, pos, 10))
            pos += 10
            rdata = _rdata(data, rtype, pos, length)
            pos += length
            section.append(Record(name, rtype, rclass, ttl, rdata))
    return msg


def header_id(data: bytes) -> int | None:
    return int.from_bytes(data[:2], "big") if len(data) >= 2 else None


# ---- rdata builders and readers ---------------------------------------------


def a_rdata(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def name_rdata(target: str) -> bytes:
    return encode_name(target)


def srv_rdata(priority: int, weight: int, port: int, target: str) -> bytes:
    return struct.pack("!HHH", priority, weight, port) + encode_name(target)


def soa_rdata(
    mname: str,
    rname: str,
    serial: int,
    refresh: int,
    retry: int,
    expire: int,
    minimum: int,
) -> bytes:
    return (
        encode_name(mname)
        + encode_name(rname)
        + struct.pack("!IIIII", serial, refresh, retry, expire, minimum)
    )


def opt_record(payload: int = 1232) -> Record:
    """An EDNS OPT pseudo-record (the class carries the UDP payload size)."""
    return Record("", OPT, payload, 0, b"")


def read_a(rec: Record) -> str:
    return str(ipaddress.IPv4Address(rec.rdata))


def read_name(rec: Record) -> str:
    return decode_name(rec.rdata, 0)[0]


def read_srv(rec: Record) -> tuple[int, int, int, str]:
    priority, weight, port = struct.unpack("!HHH", rec.rdata[:6])
    return priority, weight, port, decode_name(rec.rdata, 6)[0]
