"""The CRI container log format: `<RFC3339Nano> <stdout|stderr> <F|P> <msg>`.

A `LineWriter` turns a byte stream into such lines: complete lines end in
`F`, a line longer than `max_line` is cut into `P` chunks, and what is left
at the end of the stream is written as a full line. Standard library only:
the monitor imports this module and must stay small.
"""

from __future__ import annotations

from typing import BinaryIO

from machinery.rfc3339 import format_nano_trimmed

MAX_LINE = 16 * 1024


class LineWriter:
    def __init__(self, stream: str, max_line: int = MAX_LINE) -> None:
        self.tag = stream.encode()
        self.buf = b""
        self.max_line = max_line

    def _line(self, msg: bytes, partial: bool) -> bytes:
        ts = format_nano_trimmed().encode()
        return b"%s %s %s %s\n" % (ts, self.tag, b"P" if partial else b"F", msg)

    def feed(self, data: bytes) -> bytes:
        """Return the log lines that `data` completes."""
        self.buf += data
        out = []
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0 or nl > self.max_line:
                if len(self.buf) > self.max_line:
                    out.append(self._line(self.buf[: self.max_line], True))
                    self.buf = self.buf[self.max_line :]
                    continue
                break
            out.append(self._line(self.buf[:nl], False))
            self.buf = self.buf[nl + 1 :]
        return b"".join(out)

    def flush(self) -> bytes:
        if not self.buf:
            return b""
        out = self._line(self.buf, False)
        self.buf = b""
        return out


def write_all(f: BinaryIO, data: bytes) -> None:
    if data:
        f.write(data)
        f.flush()
