"""Readahead: run a stream's reads in a thread of their own, a few chunks
ahead of the reader, so that the stages of a pull overlap on several cores.

A layer goes through download, sha256 of the blob (and its copy into the
content store), inflate, sha256 of the tar, and file writes. hashlib, zlib
and os.write release the GIL on large buffers, so splitting that chain with
a `Readahead` between stages lets each stage run while the next one works on
the chunk before. The queue between them is bounded (`depth` chunks), so a
slow consumer holds the producer back instead of buffering a whole layer.

Errors cross the boundary unchanged: the reader gets the producer's exception
from its next `read` (and from every read after it). `close` stops the
producer and waits for it; nothing may close or reuse what the producer
reads from (a socket, an ingest file descriptor it tees into) before that.
This module knows nothing about images.
"""

from __future__ import annotations

import queue
import threading

from runtime.image.content import CHUNK, Readable

_Item = bytes | BaseException | None  # data, the producer's error, or EOF


class Readahead:
    """A Readable over `source` whose reads happen in a background thread."""

    def __init__(
        self, source: Readable, *, chunk: int = CHUNK, depth: int = 4, name: str = "readahead"
    ) -> None:
        self._source = source
        self._chunk = chunk
        self._queue: queue.Queue[_Item] = queue.Queue(depth)
        self._stop = threading.Event()
        self._head = b""
        self._end: BaseException | None = None
        self._finished = False
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        last: _Item = None
        try:
            while not self._stop.is_set():
                data = self._source.read(self._chunk)
                if not data:
                    break
                self._queue.put(data)
        except BaseException as exc:  # handed to the reader, raised there
            last = exc
        # Always the last item: the reader (or close) waits for it.
        self._queue.put(last)

    def _take(self) -> bytes:
        if self._finished:
            if self._end is not None:
                raise self._end
            return b""
        item = self._queue.get()
        if isinstance(item, bytes):
            return item
        self._finished = True
        self._thread.join()
        self._end = item
        if item is not None:
            raise item
        return b""

    def read(self, n: int = -1, /) -> bytes:
        if n == 0:
            return b""
        data = self._head or self._take()
        self._head = b""
        if 0 <= n < len(data):
            data, self._head = data[:n], data[n:]
        return data

    def drain(self) -> None:
        while self.read(CHUNK):
            pass

    def close(self) -> None:
        """Stop reading ahead and wait for the producer to finish its current
        read. The source is left as it is (not closed)."""
        if self._finished:
            return
        self._stop.set()
        while True:
            item = self._queue.get()
            if not isinstance(item, bytes):
                break
        self._finished = True
        self._thread.join()
        self._head = b""
        if self._end is None:
            self._end = ValueError("read from a closed Readahead")

    def __enter__(self) -> Readahead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
