"""The etcd store: the same contract as SQLite, on an etcd v3 cluster.

Several control-plane hosts can share one etcd. It speaks etcd's v3 gRPC API
through our own stubs (proto/etcd/): Range, Txn (compare-and-swap on
mod_revision for create/update/delete), Watch (with prev_kv, to know what a
deleted or changed object looked like) and Compact. etcd's revision is the
global resourceVersion. Every key lives under `root` (default `/skiff`), so an
etcd shared with other users is not disturbed. A background thread compacts
history older than `retention` revisions every `compact_interval` seconds.

This module must never keep state that another control-plane host would need:
everything is in etcd.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

import grpc

from controlplane.storage.interface import (
    Compacted,
    Event,
    EventType,
    KeyExists,
    KeyNotFound,
    KeyValue,
    Range,
    RevisionMismatch,
    ScanPage,
    StorageError,
    StoreUnavailable,
    prefix_end,
)
from machinery.rpc_errors import rpc_status
from proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc
from proto.etcd.mvccpb import kv_pb2

log = logging.getLogger(__name__)

TIMEOUT = 10.0
MAX_TXN_OPS = 128  # etcd's default --max-txn-ops


def _target(endpoints: list[str]) -> str:
    hosts = []
    for ep in endpoints:
        for part in ep.split(","):
            part = part.strip()
            if not part:
                continue
            hosts.append(part.split("://", 1)[-1].rstrip("/"))
    if not hosts:
        raise ValueError("no etcd endpoints given")
    if len(hosts) == 1:
        return hosts[0]
    return "ipv4:" + ",".join(hosts)


def _map_error(err: grpc.RpcError, what: str) -> StorageError:
    code, details = rpc_status(err)
    if code == grpc.StatusCode.OUT_OF_RANGE:  # etcd's ErrGRPCCompacted
        return Compacted(0, 0)
    return StoreUnavailable(f"etcd {what} failed: {code}: {details}")


class _EtcdWatch:
    """One etcd Watch stream turned into an iterator of store Events."""

    def __init__(self, store: EtcdStore, prefix: str, after: int) -> None:
        self._store = store
        self._requests: queue.SimpleQueue[rpc_pb2.WatchRequest | None] = queue.SimpleQueue()
        prefix = prefix or "/"
        create = rpc_pb2.WatchCreateRequest(
            key=store._k(prefix),
            range_end=store._k(prefix_end(prefix)),
            start_revision=after + 1,
            prev_kv=True,
            progress_notify=True,
        )
        self._requests.put(rpc_pb2.WatchRequest(create_request=create))
        self._call: Any = store._watch_stub.Watch(self._request_iter())
        self._closed = False
        try:
            first = next(self._call)
        except grpc.RpcError as err:
            raise _map_error(err, "watch") from err
        except StopIteration as err:
            raise StoreUnavailable("etcd watch ended before it was created") from err
        if first.canceled:
            self.close()
            if first.compact_revision:
                raise Compacted(after, first.compact_revision - 1)
            raise StoreUnavailable(f"etcd refused the watch: {first.cancel_reason}")
        self._pending = list(first.events)

    def _request_iter(self) -> Iterator[rpc_pb2.WatchRequest]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def _convert(self, ev: kv_pb2.Event) -> Event:
        key = ev.kv.key.decode()[len(self._store.root) :]
        if ev.type == kv_pb2.Event.DELETE:
            prev = ev.prev_kv.value if ev.HasField("prev_kv") else b""
            return Event(EventType.DELETE, key, prev, ev.kv.mod_revision, prev)
        if ev.kv.create_revision == ev.kv.mod_revision:
            return Event(EventType.CREATE, key, ev.kv.value, ev.kv.mod_revision)
        prev_value = ev.prev_kv.value if ev.HasField("prev_kv") else None
        return Event(EventType.UPDATE, key, ev.kv.value, ev.kv.mod_revision, prev_value)

    def __iter__(self) -> Iterator[Event]:
        for ev in self._pending:
            yield self._convert(ev)
        self._pending = []
        try:
            for resp in self._call:
                if resp.canceled:
                    if resp.compact_revision:
                        raise Compacted(0, resp.compact_revision - 1)
                    return
                for ev in resp.events:
                    yield self._convert(ev)
        except grpc.RpcError as err:
            if self._closed:
                return
            raise _map_error(err, "watch") from err

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._requests.put(None)
        self._call.cancel()


SCAN_FETCH = 5000  # keys per etcd Range while scanning


class EtcdStore:
    """See the module docstring. Thread-safe."""

    # range(rev=N) reads the state at revision N (consistent List pages).
    snapshot_reads = True

    def __init__(
        self,
        endpoints: list[str],
        root: str = "/skiff",
        retention: int = 100_000,
        compact_interval: float = 60.0,
    ) -> None:
        self.root = root.rstrip("/")
        self.retention = retention
        self._channel = grpc.insecure_channel(
            _target(endpoints),
            options=[
                ("grpc.max_receive_message_length", 1 << 30),
                ("grpc.max_send_message_length", 1 << 30),
            ],
        )
        self._kv = rpc_pb2_grpc.KVStub(self._channel)
        self._watch_stub = rpc_pb2_grpc.WatchStub(self._channel)
        self._maintenance = rpc_pb2_grpc.MaintenanceStub(self._channel)
        self._compacted = 0
        self._stop = threading.Event()
        try:
            self.current_revision()
        except StoreUnavailable as err:
            self._channel.close()
            raise StoreUnavailable(f"cannot reach etcd at {', '.join(endpoints)}: {err}") from err
        self._compactor: threading.Thread | None = None
        if compact_interval > 0:
            self._compactor = threading.Thread(
                target=self._compact_loop,
                args=(compact_interval,),
                name="etcd-compactor",
                daemon=True,
            )
            self._compactor.start()

    def _k(self, key: str) -> bytes:
        return (self.root + key).encode()

    def _call(self, method: Any, request: Any, what: str) -> Any:
        try:
            return method(request, timeout=TIMEOUT)
        except grpc.RpcError as err:
            raise _map_error(err, what) from err

    def _create_txn(self, key: str, value: bytes) -> rpc_pb2.TxnRequest:
        k = self._k(key)
        return rpc_pb2.TxnRequest(
            compare=[
                rpc_pb2.Compare(
                    key=k,
                    target=rpc_pb2.Compare.CREATE,
                    result=rpc_pb2.Compare.EQUAL,
                    create_revision=0,
                )
            ],
            success=[rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=k, value=value))],
        )

    def create(self, key: str, value: bytes) -> int:
        resp = self._call(self._kv.Txn, self._create_txn(key, value), "create")
        if not resp.succeeded:
            raise KeyExists(key)
        return int(resp.header.revision)

    def bulk_create(self, items: list[tuple[str, bytes]]) -> int:
        """Create many keys (loading, benchmarks), 64 per transaction."""
        rev = 0
        for start in range(0, len(items), 64):
            chunk = items[start : start + 64]
            txn = rpc_pb2.TxnRequest(
                compare=[
                    rpc_pb2.Compare(key=self._k(k), target=rpc_pb2.Compare.CREATE,
                                    result=rpc_pb2.Compare.EQUAL, create_revision=0)
                    for k, _ in chunk
                ],
                success=[
                    rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=self._k(k), value=v))
                    for k, v in chunk
                ],
            )  # fmt: skip
            resp = self._call(self._kv.Txn, txn, "bulk create")
            if not resp.succeeded:
                raise KeyExists(chunk[0][0])
            rev = int(resp.header.revision)
        return rev

    def get(self, key: str) -> KeyValue:
        resp = self._call(self._kv.Range, rpc_pb2.RangeRequest(key=self._k(key)), "get")
        if not resp.kvs:
            raise KeyNotFound(key)
        kv = resp.kvs[0]
        return KeyValue(key, kv.value, kv.mod_revision, kv.create_revision)

    def range(self, prefix: str, start_after: str = "", limit: int = 0, rev: int = 0) -> Range:
        start = self._k(prefix)
        if start_after and start_after >= prefix:
            start = self._k(start_after) + b"\x00"
        req = rpc_pb2.RangeRequest(
            key=start, range_end=self._k(prefix_end(prefix)), limit=limit, revision=rev
        )
        try:
            resp = self._kv.Range(req, timeout=TIMEOUT * 6)
        except grpc.RpcError as err:
            mapped = _map_error(err, "range")
            if isinstance(mapped, Compacted):
                raise Compacted(rev, self._compacted) from err
            raise mapped from err
        n = len(self.root)
        items = [
            KeyValue(kv.key.decode()[n:], kv.value, kv.mod_revision, kv.create_revision)
            for kv in resp.kvs
        ]
        return Range(items, rev or int(resp.header.revision), bool(resp.more))

    def scan(self, prefix: str, page: int) -> Iterator[ScanPage]:
        # Later ranges are read at the first one's revision: one snapshot.
        # Ranges are bigger than pages (fewer round trips to etcd, each of
        # which looks the revision up again); pages are cut from them.
        fetch = max(page, SCAN_FETCH)
        last = self.range(prefix, "", fetch)
        rev = last.rev
        while True:
            items = [(kv.value, kv.mod_rev) for kv in last.items]
            more = bool(last.more and last.items)
            for start in range(0, max(len(items), 1), page):
                chunk = items[start : start + page]
                yield ScanPage(chunk, rev, more or start + page < len(items))
            if not more:
                return
            last = self.range(prefix, last.items[-1].key, fetch, rev)

    def _cas(self, key: str, expected_rev: int, op: rpc_pb2.RequestOp, what: str) -> int:
        k = self._k(key)
        if expected_rev:
            compare = rpc_pb2.Compare(
                key=k,
                target=rpc_pb2.Compare.MOD,
                result=rpc_pb2.Compare.EQUAL,
                mod_revision=expected_rev,
            )
        else:
            compare = rpc_pb2.Compare(
                key=k, target=rpc_pb2.Compare.VERSION, result=rpc_pb2.Compare.GREATER, version=0
            )
        txn = rpc_pb2.TxnRequest(
            compare=[compare],
            success=[op],
            failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=k, keys_only=True))],
        )
        resp = self._call(self._kv.Txn, txn, what)
        if resp.succeeded:
            return int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        if not kvs:
            raise KeyNotFound(key)
        raise RevisionMismatch(key, int(kvs[0].mod_revision))

    def update(self, key: str, value: bytes, expected_rev: int) -> int:
        if not expected_rev:
            raise ValueError("update needs the expected revision")
        op = rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=self._k(key), value=value))
        return self._cas(key, expected_rev, op, "update")

    def create_many(self, items: list[tuple[str, bytes]]) -> list[int | StorageError]:
        """Independent creates; results in order (revision or error)."""
        results: list[int | StorageError] = []
        for key, value in items:
            try:
                results.append(self.create(key, value))
            except StorageError as err:
                results.append(err)
        return results

    def update_many(self, items: list[tuple[str, bytes, int]]) -> list[int | StorageError]:
        """Independent compare-and-swaps; results in order (revision or error)."""
        results: list[int | StorageError] = []
        for key, value, expected_rev in items:
            try:
                results.append(self.update(key, value, expected_rev))
            except StorageError as err:
                results.append(err)
        return results

    def update_and_create(
        self, updates: list[tuple[str, bytes, int]], creates: list[tuple[str, bytes]]
    ) -> list[int | StorageError]:
        """The updates in one Txn that also checks every create's key is free,
        then the creates side by side, each its own Txn and revision (one Txn
        gives all its keys one revision, and an object's resourceVersion must be
        its own): interface.Store.update_and_create (the updates' revision
        first, one for all of them)."""
        seen: set[str] = set()
        for key, _ in creates:
            if key in seen:
                raise KeyExists(key)
            seen.add(key)
        results: list[int | StorageError] = []
        if updates:
            # The names' checks spare a taken name its charge; past etcd's limit
            # of operations per Txn (--max-txn-ops) the creates alone check them.
            free = [key for key, _ in creates] if len(updates) + len(creates) <= MAX_TXN_OPS else []
            results += [self._guarded_updates(updates, free)] * len(updates)
        calls = [(key, self._kv.Txn.future(self._create_txn(key, value), timeout=TIMEOUT))
                 for key, value in creates]  # fmt: skip
        for key, call in calls:
            try:
                resp = call.result()
            except grpc.RpcError as err:
                results.append(_map_error(err, "create"))
                continue
            results.append(int(resp.header.revision) if resp.succeeded else KeyExists(key))
        return results

    def _guarded_updates(self, updates: list[tuple[str, bytes, int]], free: list[str]) -> int:
        keys = [self._k(key) for key, _, _ in updates] + [self._k(key) for key in free]
        txn = rpc_pb2.TxnRequest(
            compare=[
                rpc_pb2.Compare(key=k, target=rpc_pb2.Compare.MOD, result=rpc_pb2.Compare.EQUAL,
                                mod_revision=rev)
                for k, (_, _, rev) in zip(keys, updates, strict=False)
            ] + [
                rpc_pb2.Compare(key=k, target=rpc_pb2.Compare.CREATE,
                                result=rpc_pb2.Compare.EQUAL, create_revision=0)
                for k in keys[len(updates):]
            ],
            success=[rpc_pb2.RequestOp(request_put=rpc_pb2.PutRequest(key=k, value=value))
                     for k, (_, value, _) in zip(keys, updates, strict=False)],
            failure=[rpc_pb2.RequestOp(request_range=rpc_pb2.RangeRequest(key=k, keys_only=True))
                     for k in keys],
        )  # fmt: skip
        resp = self._call(self._kv.Txn, txn, "update")
        if resp.succeeded:
            return int(resp.header.revision)
        found = [r.response_range.kvs for r in resp.responses]
        for (key, _, rev), kvs in zip(updates, found, strict=False):
            if not kvs:
                raise KeyNotFound(key)
            if kvs[0].mod_revision != rev:
                raise RevisionMismatch(key, int(kvs[0].mod_revision))
        for key, kvs in zip(free, found[len(updates) :], strict=True):
            if kvs:
                raise KeyExists(key)
        raise StoreUnavailable("etcd refused a transaction whose every comparison held")

    def delete(self, key: str, expected_rev: int) -> int:
        op = rpc_pb2.RequestOp(request_delete_range=rpc_pb2.DeleteRangeRequest(key=self._k(key)))
        return self._cas(key, expected_rev, op, "delete")

    def current_revision(self) -> int:
        req = rpc_pb2.RangeRequest(key=self._k("/"), count_only=True)
        resp = self._call(self._kv.Range, req, "revision")
        return int(resp.header.revision)

    def compacted_revision(self) -> int:
        return self._compacted

    def compact(self, rev: int) -> None:
        """Drop history at and before `rev` (watches must start after it)."""
        if rev <= self._compacted:
            return
        try:
            self._kv.Compact(rpc_pb2.CompactionRequest(revision=rev + 1), timeout=TIMEOUT)
        except grpc.RpcError as err:
            if rpc_status(err)[0] != grpc.StatusCode.OUT_OF_RANGE:  # not compacted already
                raise _map_error(err, "compact") from err
        self._compacted = rev

    def _compact_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                target = self.current_revision() - self.retention
                if target > self._compacted:
                    self.compact(target)
            except StorageError as err:
                log.warning("etcd compaction failed: %s", err)

    def history(self, after: int, upto: int, prefix: str = "") -> list[Event]:
        if upto <= after:
            return []
        # Watch the whole root so the last event (rev == upto) is seen even when
        # it is outside `prefix`; filter afterwards.
        watch = self.watch("", after)
        events: list[Event] = []
        try:
            for event in watch:
                if event.rev > upto:
                    break
                if event.key.startswith(prefix):
                    events.append(event)
                if event.rev >= upto:
                    break
        finally:
            watch.close()
        return events

    def watch(self, prefix: str, after: int) -> _EtcdWatch:
        if after < self._compacted:
            raise Compacted(after, self._compacted)
        try:
            return _EtcdWatch(self, prefix, after)
        except Compacted as err:
            self._compacted = max(self._compacted, err.compacted)
            raise Compacted(after, err.compacted) from err

    def close(self) -> None:
        self._stop.set()
        self._channel.close()
