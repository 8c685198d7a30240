"""Reading container logs written in the CRI log format.

Each line of `<log dir>/<container>/<restart>.log` is
`<RFC3339Nano> <stdout|stderr> <P|F> <message>`; P marks a partial line that
the next entry continues. This module turns such files back into output
lines with their stream and time, and answers `tail`, `since`, `previous`
and `follow` as `kubectl logs` does. It only reads files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from machinery import rfc3339

_LINE = re.compile(rb"^(\S+) (stdout|stderr) ([PF]) ?(.*)$", re.DOTALL)


@dataclass(frozen=True)
class LogLine:
    timestamp_ns: int
    stream: str
    data: bytes  # ends with a newline unless the file ended mid-line


class Joiner:
    """Joins P(artial) entries with what follows them, per stream."""

    def __init__(self) -> None:
        self._pending: dict[str, tuple[int, bytes]] = {}

    def feed(self, entry: bytes) -> LogLine | None:
        m = _LINE.match(entry.rstrip(b"\n"))
        if not m:
            return None
        ts_raw, stream_b, tag, msg = m.groups()
        try:
            ts = rfc3339.parse_nano(ts_raw.decode())
        except ValueError:
            return None
        stream = stream_b.decode()
        start, buf = self._pending.pop(stream, (ts, b""))
        if tag == b"P":
            self._pending[stream] = (start, buf + msg)
            return None
        return LogLine(start, stream, buf + msg + b"\n")

    def flush(self) -> list[LogLine]:
        out = [LogLine(start, stream, buf) for stream, (start, buf) in self._pending.items()]
        self._pending.clear()
        return out


def parse_lines(raw: Iterator[bytes]) -> Iterator[LogLine]:
    joiner = Joiner()
    for entry in raw:
        line = joiner.feed(entry)
        if line is not None:
            yield line
    yield from joiner.flush()


def log_files(container_dir: Path) -> list[Path]:
    """`<n>.log` files of one container, oldest restart first."""
    files = [p for p in container_dir.glob("*.log") if p.stem.isdigit()]
    return sorted(files, key=lambda p: int(p.stem))


def pick_file(container_dir: Path, previous: bool) -> Path | None:
    files = log_files(container_dir)
    if previous:
        return files[-2] if len(files) >= 2 else None
    return files[-1] if files else None


def read_log(
    path: Path,
    tail: int = -1,
    since_ns: int = 0,
    follow: bool = False,
    keep_following: Callable[[], bool] = lambda: False,
    wait: Callable[[float], object] | None = None,
) -> Iterator[LogLine]:
    """Lines of `path`; with `follow`, new lines as they are written until
    `keep_following()` turns false (the container stopped, the client left)."""
    joiner = Joiner()
    with open(path, "rb") as f:
        done: list[LogLine] = []
        for entry in iter(f.readline, b""):
            if not entry.endswith(b"\n") and follow:
                f.seek(-len(entry), os.SEEK_CUR)  # half-written: read it again later
                break
            line = joiner.feed(entry)
            if line is not None and line.timestamp_ns >= since_ns:
                done.append(line)
        if not follow:
            done.extend(x for x in joiner.flush() if x.timestamp_ns >= since_ns)
        yield from done[-tail:] if tail > 0 else ([] if tail == 0 else done)
        if not follow:
            return
        while True:
            entry = f.readline()
            if entry.endswith(b"\n"):
                line = joiner.feed(entry)
                if line is not None:
                    yield line
                continue
            if entry:
                f.seek(-len(entry), os.SEEK_CUR)
            if not keep_following():
                yield from joiner.flush()
                return
            if wait is not None:
                wait(0.1)
