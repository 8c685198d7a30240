from __future__ import annotations

import random
import struct

import pytest

from agent.proxy import dns_wire as w


def query(name: str, qtype: int = w.A, ident: int = 0x1234, edns: bool = False) -> w.Message:
    msg = w.Message(id=ident, rd=True, questions=[w.Question(name, qtype)])
    if edns:
        msg.additionals.append(w.opt_record(4096))
    return msg


def test_round_trip_of_every_section() -> None:
    msg = w.Message(
        id=7,
        qr=True,
        aa=True,
        rd=True,
        ra=True,
        rcode=w.NXDOMAIN,
        questions=[w.Question("Web.Default.svc.cluster.local", w.SRV)],
        answers=[
            w.Record("a.b", w.A, w.IN, 5, w.a_rdata("10.43.0.1")),
            w.Record("a.b", w.SRV, w.IN, 5, w.srv_rdata(0, 100, 80, "web.default.svc")),
            w.Record("a.b", w.CNAME, w.IN, 5, w.name_rdata("example.com")),
        ],
        authorities=[w.Record("b", w.SOA, w.IN, 5, w.soa_rdata("ns.b", "h.b", 1, 2, 3, 4, 5))],
        additionals=[w.opt_record(1232)],
    )
    back = w.parse(msg.to_wire())
    assert back == msg
    assert w.read_a(back.answers[0]) == "10.43.0.1"
    assert w.read_srv(back.answers[1]) == (0, 100, 80, "web.default.svc")
    assert w.read_name(back.answers[2]) == "example.com"
    assert back.edns() is not None and back.edns().rclass == 1232  # type: ignore[union-attr]


def test_compressed_names_are_followed_and_rdata_made_standalone() -> None:
    # Question "web.svc", answer name = pointer to it, SRV target = "x" + pointer.
    header = struct.pack("!HHHHHH", 1, 0x8400, 1, 1, 0, 0)
    qname = b"\x03web\x03svc\x00"
    question = qname + struct.pack("!HH", w.SRV, w.IN)
    target = b"\x01x\xc0\x0c"  # "x." + the question name at offset 12
    rdata = struct.pack("!HHH", 0, 10, 53) + target
    answer = b"\xc0\x0c" + struct.pack("!HHIH", w.SRV, w.IN, 30, len(rdata)) + rdata
    msg = w.parse(header + question + answer)
    assert msg.answers[0].name == "web.svc"
    assert w.read_srv(msg.answers[0]) == (0, 10, 53, "x.web.svc")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00" * 11,
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\x03ab",  # label past the end
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\xc0\x0c\x00\x01\x00\x01",  # self pointer
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\xc0\x20\x00\x01\x00\x01",  # forward
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\x01a\x00\x00",  # short question
        struct.pack("!HHHHHH", 1, 0, 1, 0, 0, 0) + b"\x41" + b"a" * 65 + b"\x00\x00\x01\x00\x01",
        struct.pack("!HHHHHH", 1, 0, 0, 1, 0, 0) + b"\x00" + struct.pack("!HHIH", 1, 1, 0, 9),
    ],
)
def test_malformed_messages_raise_format_error(data: bytes) -> None:
    with pytest.raises(w.FormatError):
        w.parse(data)


def test_names_longer_than_255_are_refused() -> None:
    long_name = ".".join(["a" * 60] * 5)
    with pytest.raises(w.FormatError):
        w.encode_name(long_name)
    with pytest.raises(w.FormatError):
        w.encode_name("a" * 64)


def test_random_bytes_only_ever_raise_format_error() -> None:
    rng = random.Random(9)
    base = query("web.default.svc.cluster.local", edns=True).to_wire()
    for _ in range(3000):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = data[: rng.randint(0, len(data))]
        try:
            w.parse(bytes(data))
        except w.FormatError:
            pass
