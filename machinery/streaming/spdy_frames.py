"""SPDY/3.1 frames: the codec for control frames (SYN_STREAM, SYN_REPLY,
RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE) and data frames,
and the zlib header compression with the SPDY/3 dictionary (`Framer`).

Pure byte arithmetic: the session that sends and receives them is spdy.py.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

VERSION = 3

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

SETTINGS_INITIAL_WINDOW_SIZE = 7

MAX_HEADER_BLOCK = 256 << 10  # one inflated header block (Go's net/http caps headers at 1 MiB)
MAX_FRAME_LENGTH = (1 << 24) - 1

# The SPDY/3 header compression dictionary (draft 3, section 2.6.10.1): a run
# of length-prefixed words followed by a run of raw text. Assembled below;
# tests check its length (1423) and SHA-256.
_DICTIONARY_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding "
    "accept-language accept-ranges age allow authorization cache-control "
    "connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect "
    "expires from host if-match if-modified-since if-none-match if-range "
    "if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te "
    "trailer transfer-encoding upgrade user-agent vary via warning "
    "www-authenticate method get status|200 OK|version|HTTP/1.1|url public "
    "set-cookie keep-alive origin"
)
_DICTIONARY_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414"
    "415416417502504505203 Non-Authoritative Information204 No Content301 Moved "
    "Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 "
    "Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Mar "
    "Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, "
    "Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,"
    "application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)


def _build_dictionary() -> bytes:
    words: list[str] = []
    for part in _DICTIONARY_WORDS.split("|"):
        if part in ("200 OK", "version", "HTTP/1.1"):
            words.append(part)
        else:
            words.extend(part.split())
    out = bytearray()
    for word in words:
        raw = word.encode()
        out += struct.pack(">I", len(raw)) + raw
    return bytes(out) + _DICTIONARY_TAIL.encode()


DICTIONARY = _build_dictionary()

Headers = dict[str, list[str]]


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3.1."""


# ---------------------------------------------------------------- frames


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    data: bytes
    flags: int = 0


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    headers: Headers
    flags: int = 0
    associated_id: int = 0
    priority: int = 0


@dataclass(frozen=True)
class SynReply:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True)
class Settings:
    entries: list[tuple[int, int, int]]  # (flags, id, value)
    flags: int = 0


@dataclass(frozen=True)
class Ping:
    ping_id: int


@dataclass(frozen=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True)
class HeadersFrame:
    stream_id: int
    headers: Headers
    flags: int = 0


@dataclass(frozen=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True)
class UnknownControl:
    frame_type: int
    flags: int
    payload: bytes


Frame = (
    DataFrame
    | SynStream
    | SynReply
    | RstStream
    | Settings
    | Ping
    | GoAway
    | HeadersFrame
    | WindowUpdate
    | UnknownControl
)


def encode_header_block(headers: Headers) -> bytes:
    """The uncompressed name/value block: count, then length-prefixed pairs.
    Names are lowercased; several values of one name are NUL-separated."""
    out = bytearray(struct.pack(">I", len(headers)))
    for name, values in headers.items():
        raw_name = name.lower().encode()
        raw_value = "\x00".join(values).encode()
        out += struct.pack(">I", len(raw_name)) + raw_name
        out += struct.pack(">I", len(raw_value)) + raw_value
    return bytes(out)


def decode_header_block(block: bytes) -> Headers:
    headers: Headers = {}
    try:
        (count,) = struct.unpack_from(">I", block, 0)
        pos = 4
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4 : pos + 4 + n].decode().lower()
            pos += 4 + n
            (n,) = struct.unpack_from(">I", block, pos)
            value = block[pos + 4 : pos + 4 + n].decode()
            pos += 4 + n
            headers.setdefault(name, []).extend(value.split("\x00"))
    except (struct.error, UnicodeDecodeError) as exc:
        raise ProtocolError(f"bad header block: {exc}") from exc
    return headers


class Framer:
    """Encodes and decodes frames; holds the two zlib contexts of a session.

    SPDY compresses every header block of a direction as one zlib stream, so
    frames must be encoded in the order they are written: callers serialise
    `encode` and the socket write under one lock.
    """

    def __init__(self) -> None:
        self._compress = zlib.compressobj(
            zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, 15, 8, zdict=DICTIONARY
        )
        self._decompress = zlib.decompressobj(zdict=DICTIONARY)

    def _pack_headers(self, headers: Headers) -> bytes:
        block = encode_header_block(headers)
        return self._compress.compress(block) + self._compress.flush(zlib.Z_SYNC_FLUSH)

    def _unpack_headers(self, payload: bytes) -> Headers:
        try:
            # bounded: a few KiB of compressed zeros must not inflate to GiBs
            block = self._decompress.decompress(payload, MAX_HEADER_BLOCK + 1)
        except zlib.error as exc:
            raise ProtocolError(f"header decompression failed: {exc}") from exc
        if len(block) > MAX_HEADER_BLOCK or self._decompress.unconsumed_tail:
            raise ProtocolError(f"header block inflates to more than {MAX_HEADER_BLOCK} bytes")
        return decode_header_block(block)

    @staticmethod
    def _control(frame_type: int, flags: int, payload: bytes) -> bytes:
        if len(payload) > MAX_FRAME_LENGTH:
            raise ValueError("frame too long")
        return (
            struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload))
            + payload
        )

    def encode(self, frame: Frame) -> bytes:
        if isinstance(frame, DataFrame):
            if len(frame.data) > MAX_FRAME_LENGTH:
                raise ValueError("frame too long")
            head = struct.pack(
                ">II", frame.stream_id & 0x7FFFFFFF, (frame.flags << 24) | len(frame.data)
            )
            return head + frame.data
        if isinstance(frame, SynStream):
            fixed = struct.pack(
                ">IIBB",
                frame.stream_id & 0x7FFFFFFF,
                frame.associated_id & 0x7FFFFFFF,
                (frame.priority & 0x7) << 5,
                0,
            )
            return self._control(SYN_STREAM, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, SynReply):
            fixed = struct.pack(">I", frame.stream_id & 0x7FFFFFFF)
            return self._control(SYN_REPLY, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, HeadersFrame):
            fixed = struct.pack(">I", frame.stream_id & 0x7FFFFFFF)
            return self._control(HEADERS, frame.flags, fixed + self._pack_headers(frame.headers))
        if isinstance(frame, RstStream):
            return self._control(
                RST_STREAM, 0, struct.pack(">II", frame.stream_id & 0x7FFFFFFF, frame.status)
            )
        if isinstance(frame, Settings):
            body = struct.pack(">I", len(frame.entries))
            for flags, ident, value in frame.entries:
                body += struct.pack(">II", (flags << 24) | (ident & 0xFFFFFF), value)
            return self._control(SETTINGS, frame.flags, body)
        if isinstance(frame, Ping):
            return self._control(PING, 0, struct.pack(">I", frame.ping_id))
        if isinstance(frame, GoAway):
            return self._control(
                GOAWAY, 0, struct.pack(">II", frame.last_good_stream_id & 0x7FFFFFFF, frame.status)
            )
        if isinstance(frame, WindowUpdate):
            return self._control(
                WINDOW_UPDATE,
                0,
                struct.pack(">II", frame.stream_id & 0x7FFFFFFF, frame.delta & 0x7FFFFFFF),
            )
        return self._control(frame.frame_type, frame.flags, frame.payload)

    def decode(self, head: bytes, payload: bytes) -> Frame:
        """Decode one frame from its 8-byte head and its payload."""
        first, second = struct.unpack(">II", head)
        flags = second >> 24
        if not first & 0x80000000:
            return DataFrame(first & 0x7FFFFFFF, payload, flags)
        version = (first >> 16) & 0x7FFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        frame_type = first & 0xFFFF
        try:
            if frame_type == SYN_STREAM:
                sid, assoc, prio, _slot = struct.unpack_from(">IIBB", payload)
                headers = self._unpack_headers(payload[10:])
                return SynStream(sid & 0x7FFFFFFF, headers, flags, assoc & 0x7FFFFFFF, prio >> 5)
            if frame_type in (SYN_REPLY, HEADERS):
                (sid,) = struct.unpack_from(">I", payload)
                headers = self._unpack_headers(payload[4:])
                if frame_type == SYN_REPLY:
                    return SynReply(sid & 0x7FFFFFFF, headers, flags)
                return HeadersFrame(sid & 0x7FFFFFFF, headers, flags)
            if frame_type == RST_STREAM:
                sid, status = struct.unpack_from(">II", payload)
                return RstStream(sid & 0x7FFFFFFF, status)
            if frame_type == SETTINGS:
                (count,) = struct.unpack_from(">I", payload)
                entries = []
                for i in range(count):
                    word, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                    entries.append((word >> 24, word & 0xFFFFFF, value))
                return Settings(entries, flags)
            if frame_type == PING:
                (ping_id,) = struct.unpack_from(">I", payload)
                return Ping(ping_id)
            if frame_type == GOAWAY:
                sid, status = struct.unpack_from(">II", payload)
                return GoAway(sid & 0x7FFFFFFF, status)
            if frame_type == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(sid & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error as exc:
            raise ProtocolError(f"short control frame type {frame_type}") from exc
        return UnknownControl(frame_type, flags, payload)
