"""watch=true: a chunked stream of JSON watch events, fed by the Broadcaster.

No thread per watcher: the broadcaster's thread hands each event to an
AsyncWatcher (a Watcher whose queue is a deque in the event loop's hands)
and wakes the loop once for a whole batch of watchers (LoopFeed), so one
event reaching 100 watchers costs one wake-up. The event's line is encoded
once and shared by every watcher of the same kind and format. An idle live
stream whose connection has room is written to right in that wake-up (no
task switch, future or timer per watcher and event); a stream that is
catching up, or whose client reads slowly, is written by its own task,
which waits for the connection to drain. Each stream writes lines
`{"type":"ADDED","object":{...}}` as Kubernetes does, BOOKMARKs when idle
(allowWatchBookmarks), and ends after timeoutSeconds. Without a
resourceVersion (or with "0") the stream starts with an ADDED event for
every existing object, as kube-apiserver's does; a too old resourceVersion
is an ERROR event carrying a 410 Expired Status. A client that asked for
Tables (kubectl get -w) gets each object as a one-row Table. A client that
prefers protobuf (client-go's default for built-in kinds) gets
`application/vnd.kubernetes.protobuf;stream=watch`: length-prefixed
WatchEvent frames (api/k8sproto/envelope.py), each built once too.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http_writer import StreamWriter

from controlplane.api import jsoncodec
from controlplane.api.k8sproto import envelope
from controlplane.api.k8sproto import stored as pbstored
from controlplane.apiserver.codec import decode, with_version
from controlplane.apiserver.listing import Selectors
from controlplane.apiserver.rest import queryparams
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.lists import (
    include_object,
    partial,
    table_document,
    wants_metadata,
    wants_table,
)
from controlplane.apiserver.rest.respond import served, wants_protobuf
from controlplane.apiserver.rest.status import status_object
from controlplane.apiserver.watch import Broadcaster, Watcher, WatchItem
from controlplane.client.errors import ApiError, Gone, Invalid

log = logging.getLogger(__name__)


class LoopFeed:
    """Wakes the watchers that got events, one loop callback per batch."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: set[AsyncWatcher] = set()
        self._scheduled = False

    def wake(self, watcher: AsyncWatcher) -> None:
        with self._lock:
            self._pending.add(watcher)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._run)
        except RuntimeError:  # the loop is closed: the server is stopping
            pass

    def _run(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, set()
            self._scheduled = False
        for watcher in pending:
            watcher.wake()


class AsyncWatcher(Watcher):
    """A Watcher delivering into an event loop. `offer` (so `_deliver`) runs
    on the broadcaster's thread; everything else on the loop's."""

    def __init__(self, *args: Any, feed: LoopFeed) -> None:
        super().__init__(*args)
        self._feed = feed
        self._items: collections.deque[WatchItem] = collections.deque()
        self._limit = self.max_queue if self.max_queue > 0 else sys.maxsize
        self._waiter: asyncio.Future[bool] | None = None
        # Set by the stream while it waits idle: writes what was taken at once,
        # False when it cannot (the waiting task then takes over).
        self.direct: Callable[[], bool] | None = None

    def _deliver(self, item: WatchItem) -> None:
        if len(self._items) >= self._limit:
            self.dropped = self.stopped = True  # too slow: the client re-watches
        else:
            self._items.append(item)
        self._feed.wake(self)

    def empty(self) -> bool:
        return not self._items

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._feed.wake(self)
        self._broadcaster.unregister(self)

    def wake(self, woken: bool = True) -> None:
        """On the loop: deliver in place when the stream allows it, else end
        the current wait (woken=False: it timed out)."""
        if woken and self.direct is not None and self.direct():
            return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(woken)

    async def wait(self, timeout: float) -> bool:
        """Until there is something to take (True) or `timeout` passed (False).
        One future per wait and no task: cheap for many idle watchers."""
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        if self._items or self.stopped:
            return True
        timer = loop.call_later(timeout, self.wake, False)
        try:
            return bool(await waiter)
        finally:
            timer.cancel()
            self._waiter = None

    def take(self) -> list[WatchItem]:
        items = []
        while self._items:
            items.append(self._items.popleft())
        return items


def _table_line(call: Call, item: WatchItem, include: str) -> bytes:
    """The event with its object as a one-row Table (kubectl get -w asks so)."""
    table = table_document(call, [decode(item.data, item.rev)], include)
    table.setdefault("metadata", {})["resourceVersion"] = str(item.rev)
    return jsoncodec.dumps({"type": item.type, "object": table}) + b"\n"


def _line(item: WatchItem) -> bytes:
    line = item.line
    if line is None:
        line = b'{"type":"%s","object":%s}\n' % (
            item.type.encode(),
            with_version(item.data, item.rev),
        )
        item.line = line
    return line


def _bookmark(call: Call, rev: int, protobuf: bool = False) -> bytes:
    t = call.target
    obj = {"kind": t.info.kind, "apiVersion": t.group_version,
           "metadata": {"resourceVersion": str(rev)}}  # fmt: skip
    if protobuf:
        return envelope.watch_frame("BOOKMARK", envelope.encode(obj))
    return jsoncodec.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _frame(call: Call, item: WatchItem) -> bytes:
    """The event as a protobuf frame; shared by every watcher of the stored version."""
    t = call.target
    conversion = t.conversion
    cached = item.frame
    if conversion is None and cached is not None and cached[0] == t.group_version:
        return cached[1]
    if conversion is None:  # the stored version's message, encoded once (k8sproto/stored.py)
        frame = pbstored.watch_frame(item.type, item.data, item.rev, t.group_version, t.info.kind)
        item.frame = (t.group_version, frame)
        return frame
    obj = conversion.from_stored(decode(item.data, item.rev))
    return envelope.watch_frame(item.type, envelope.encode(obj, t.group_version, t.info.kind))


def _timeout(call: Call) -> float:
    text = call.query("timeoutSeconds")
    if text:
        try:
            return max(0.0, float(int(text)))
        except ValueError:
            raise Invalid(f"timeoutSeconds: {text!r} is not an integer") from None
    base = call.server.min_watch_timeout
    return base * (1 + random.random())  # spread re-watches, as kube-apiserver does


def _start(
    call: Call, broadcaster: Broadcaster, feed: LoopFeed, selectors: Selectors, rv: int | None,
    bookmarks: bool,
) -> tuple[AsyncWatcher, list[WatchItem]]:  # fmt: skip
    """Authorize, list the initial state when asked, and register the watcher
    (on the executor: the history replay reads the store)."""
    t = call.target
    initial: list[WatchItem] = []
    call.registry.authorizer.authorize(call.who, "watch", t.info, t.namespace, "",
                                       fields=selectors.fields, labels=selectors.labels)  # fmt: skip
    if rv is None:
        result = call.registry.list(
            t.info.key, call.namespace, call.query("labelSelector"), call.query("fieldSelector"),
            0, "", call.who,
        )  # fmt: skip
        initial = [WatchItem("ADDED", d, r) for d, r in result.items]
        rv = result.resource_version
    watcher = broadcaster.watch(
        t.info, t.namespace, selectors, rv, bookmarks,
        lambda *args: AsyncWatcher(*args, feed=feed),
    )  # fmt: skip
    assert isinstance(watcher, AsyncWatcher)
    return watcher, initial


async def watch(call: Call, feed: LoopFeed) -> web.StreamResponse:
    selectors = Selectors.parse(call.query("labelSelector"), call.query("fieldSelector"))
    rv_text = call.query("resourceVersion")
    rv: int | None = None
    if rv_text and rv_text != "0":
        try:
            rv = int(rv_text)
        except ValueError:
            raise Invalid(f"resourceVersion: {rv_text!r} is not valid") from None
    bookmarks = queryparams.flag(call.request.query, "allowWatchBookmarks")
    as_table = wants_table(call.request)
    as_metadata = not as_table and wants_metadata(call.request)
    include = include_object(call) if as_table else ""  # checked before the stream starts
    t = call.target
    protobuf = not (as_table or as_metadata) and wants_protobuf(call, t.group_version, t.info.kind)

    conversion = call.target.conversion

    def line(item: WatchItem) -> bytes:
        if as_table:
            return _table_line(call, item, include)
        if as_metadata:
            metadata = partial(decode(item.data, item.rev))
            return jsoncodec.dumps({"type": item.type, "object": metadata}) + b"\n"
        if protobuf:
            return _frame(call, item)
        if conversion is not None:
            obj = served(item.data, item.rev, conversion)
            return b'{"type":"%s","object":%s}\n' % (item.type.encode(), obj)
        return _line(item)

    render = None
    if conversion is not None and conversion.remote:  # a conversion webhook: off the loop

        async def render(items: list[WatchItem]) -> bytes:
            return await call.server.run(lambda: b"".join(line(i) for i in items))

    deadline = asyncio.get_running_loop().time() + _timeout(call)
    content_type = envelope.WATCH_MEDIA_TYPE if protobuf else "application/json"
    response = web.StreamResponse(headers={"Content-Type": content_type})
    response.enable_chunked_encoding()
    broadcaster = call.server.broadcaster
    try:
        watcher, initial = await call.server.run(
            _start, call, broadcaster, feed, selectors, rv, bookmarks
        )
    except Gone as err:
        await response.prepare(call.request)
        _, status = status_object(err)
        if protobuf:
            await response.write(envelope.watch_frame("ERROR", envelope.status(status)))
        else:
            await response.write(jsoncodec.dumps({"type": "ERROR", "object": status}) + b"\n")
        await response.write_eof()
        return response
    try:
        writer = await response.prepare(call.request)
        if initial:
            await response.write(await _rendered(initial, line, render))
        backlog, watcher.backlog = watcher.backlog, []
        if backlog:
            watcher.sent_rev = backlog[-1].rev
            await response.write(await _rendered(backlog, line, render))
        await _follow(call, watcher, response, writer, deadline, line, protobuf, render)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    except ApiError as err:  # a conversion webhook failed: the stream ends with its error
        _, status = status_object(err)
        await response.write(jsoncodec.dumps({"type": "ERROR", "object": status}) + b"\n")
    finally:
        watcher.stop()
    try:
        await response.write_eof()
    except ConnectionResetError:
        pass
    return response


CLIENT_CHECK = 1.0  # seconds between looks at a quiet watch's connection


def _client_gone(call: Call) -> bool:
    """Whether the watch's client closed its connection (aiohttp ends no handler for that)."""
    transport = call.request.transport
    return transport is None or transport.is_closing()


def _write_now(writer: StreamWriter, data: bytes) -> None:
    """Write `data` to the stream without yielding to the loop. With
    drain=False (and no compression) StreamWriter.write never awaits: it only
    hands the chunk to the transport, which buffers what the socket does not
    take; the task's next write waits for that buffer to drain."""
    pending = writer.write(data, drain=False)
    try:
        pending.send(None)
    except StopIteration:
        return
    pending.close()
    raise RuntimeError("the stream writer waited where it never does")


def _direct(
    watcher: AsyncWatcher, writer: StreamWriter, protocol: Any,
    line: Callable[[WatchItem], bytes],
) -> Callable[[], bool]:  # fmt: skip
    """The in-place delivery of an idle stream (AsyncWatcher.direct)."""

    def deliver() -> bool:
        if watcher.stopped or protocol.writing_paused:
            return False  # the task ends the stream, or waits for the drain
        items = watcher.take()
        if not items:
            return True
        watcher.sent_rev = items[-1].rev
        try:
            _write_now(writer, b"".join(line(i) for i in items))
        except Exception as err:  # the connection went away (or a bug): end this stream only
            log.debug("watch stream ended: %s", err)
            watcher.stopped = True
            return False
        return True

    return deliver


Render = Callable[[list[WatchItem]], Awaitable[bytes]]


async def _rendered(
    items: list[WatchItem], line: Callable[[WatchItem], bytes], render: Render | None
) -> bytes:
    if render is not None:
        return await render(items)
    return b"".join(line(i) for i in items)


async def _follow(
    call: Call, watcher: AsyncWatcher, response: web.StreamResponse,
    writer: AbstractStreamWriter | None, deadline: float, line: Callable[[WatchItem], bytes],
    protobuf: bool = False, render: Render | None = None,
) -> None:  # fmt: skip
    """`render`: how events become bytes when `line` must not run on the
    loop (a conversion webhook); then no in-place delivery either."""
    loop = asyncio.get_running_loop()
    interval = call.server.broadcaster.bookmark_interval
    deliver = None
    protocol = call.request.protocol
    if render is None and isinstance(writer, StreamWriter) and protocol is not None:
        deliver = _direct(watcher, writer, protocol, line)
    next_bookmark = loop.time() + interval
    bookmarked = -1  # the revision of the last bookmark sent
    while not watcher.stopped:
        items = watcher.take()
        if items:
            watcher.sent_rev = items[-1].rev
            await response.write(await _rendered(items, line, render))
            continue
        now = loop.time()
        left = deadline - now
        if left <= 0:
            return
        watcher.direct = deliver
        try:
            # Woken at least every CLIENT_CHECK seconds: a client that went away
            # without a word frees its watch slot then, not at the timeout.
            woken = await watcher.wait(min(left, CLIENT_CHECK, max(0.0, next_bookmark - now)))
        finally:
            watcher.direct = None
        if _client_gone(call):
            return
        if woken:
            continue
        if loop.time() >= next_bookmark:
            next_bookmark = loop.time() + interval
            if watcher.allow_bookmarks:
                # A bookmark also when nothing newer came since the last event
                # (as the cacher's, it tells the client where it stands), but
                # never twice for one revision.
                rev = call.server.broadcaster.progress(watcher)
                if rev is not None and rev >= watcher.sent_rev and rev != bookmarked:
                    watcher.sent_rev = bookmarked = rev
                    await response.write(_bookmark(call, rev, protobuf))
