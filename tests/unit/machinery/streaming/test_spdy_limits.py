"""SPDY header blocks inflate with a limit (issue 17): a few KiB of
compressed zeros in a SYN_STREAM must not inflate to megabytes."""

from __future__ import annotations

import struct
import zlib

import pytest

from machinery.streaming import spdy_frames as spdy


def test_header_block_bomb_refused() -> None:
    c = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zdict=spdy.DICTIONARY)
    bomb = c.compress(bytes(64 << 20)) + c.flush(zlib.Z_SYNC_FLUSH)
    assert len(bomb) < 128 << 10
    payload = struct.pack(">IIBB", 1, 0, 0, 0) + bomb
    head = struct.pack(">HHI", 0x8000 | 3, spdy.SYN_STREAM, len(payload))
    with pytest.raises(spdy.ProtocolError, match="inflates to more than"):
        spdy.Framer().decode(head, payload)


def test_normal_headers_still_decode() -> None:
    a, b = spdy.Framer(), spdy.Framer()
    wire = a.encode(spdy.SynStream(1, {"streamtype": ["stdout"], "x": ["y" * 1000]}))
    frame = b.decode(wire[:8], wire[8:])
    assert isinstance(frame, spdy.SynStream) and frame.headers["streamtype"] == ["stdout"]
