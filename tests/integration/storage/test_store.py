"""One behaviour suite for both stores (SQLite and a real etcd)."""

from __future__ import annotations

import threading

import pytest

from controlplane.storage import etcd
from controlplane.storage.interface import (
    Compacted,
    EventType,
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    Store,
)


def test_create_get_and_global_revision(store: Store) -> None:
    r1 = store.create("/registry/pods/ns/a", b"A")
    r2 = store.create("/registry/pods/ns/b", b"B")
    assert r2 > r1
    kv = store.get("/registry/pods/ns/a")
    assert (kv.value, kv.mod_rev, kv.create_rev) == (b"A", r1, r1)
    assert store.current_revision() >= r2
    with pytest.raises(KeyExists):
        store.create("/registry/pods/ns/a", b"again")
    with pytest.raises(KeyNotFound):
        store.get("/registry/pods/ns/zzz")


def test_update_is_compare_and_swap(store: Store) -> None:
    r1 = store.create("/k", b"1")
    r2 = store.update("/k", b"2", r1)
    assert r2 > r1
    with pytest.raises(RevisionMismatch) as info:
        store.update("/k", b"3", r1)
    assert info.value.current == r2
    assert store.get("/k").value == b"2"
    with pytest.raises(KeyNotFound):
        store.update("/missing", b"x", 5)


def test_delete_with_and_without_precondition(store: Store) -> None:
    r1 = store.create("/k", b"1")
    r2 = store.update("/k", b"2", r1)
    with pytest.raises(RevisionMismatch):
        store.delete("/k", r1)
    r3 = store.delete("/k", r2)
    assert r3 > r2
    with pytest.raises(KeyNotFound):
        store.get("/k")
    with pytest.raises(KeyNotFound):
        store.delete("/k", 0)
    store.create("/k2", b"x")
    store.delete("/k2", 0)


def test_range_prefix_order_and_pages(store: Store) -> None:
    for name in ["c", "a", "b", "d"]:
        store.create(f"/registry/pods/ns1/{name}", name.encode())
    store.create("/registry/pods/ns2/a", b"other")
    store.create("/registry/podsx/ns1/a", b"not a pod")
    full = store.range("/registry/pods/ns1/")
    assert [kv.value for kv in full.items] == [b"a", b"b", b"c", b"d"]
    assert not full.more
    page1 = store.range("/registry/pods/", limit=2)
    assert [kv.key for kv in page1.items] == ["/registry/pods/ns1/a", "/registry/pods/ns1/b"]
    assert page1.more
    page2 = store.range("/registry/pods/", start_after=page1.items[-1].key, limit=10)
    assert [kv.key for kv in page2.items] == [
        "/registry/pods/ns1/c", "/registry/pods/ns1/d", "/registry/pods/ns2/a",
    ]  # fmt: skip
    assert not page2.more
    assert full.rev >= store.get("/registry/pods/ns1/d").mod_rev


def test_scan_pages_one_snapshot(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(etcd, "SCAN_FETCH", 4)  # etcd reads ranges of 4, cut in pages of 3
    revs = {f"/registry/pods/ns/{i:02d}": store.create(f"/registry/pods/ns/{i:02d}", b"%d" % i)
            for i in range(7)}  # fmt: skip
    store.create("/registry/podsx/ns/a", b"not a pod")
    scan = store.scan("/registry/pods/", 3)
    first = next(scan)
    assert first.items == [(b"%d" % i, revs[f"/registry/pods/ns/{i:02d}"]) for i in range(3)]
    # Writes after the first page are not part of the list: it is one snapshot.
    store.create("/registry/pods/ns/99", b"late")
    store.delete("/registry/pods/ns/05", 0)
    store.update("/registry/pods/ns/04", b"changed", revs["/registry/pods/ns/04"])
    pages = [first, *scan]
    assert [item for p in pages for item in p.items] == [
        (b"%d" % i, revs[f"/registry/pods/ns/{i:02d}"]) for i in range(7)
    ]
    assert {p.rev for p in pages} == {first.rev} and first.rev >= max(revs.values())
    assert all(len(p.items) <= 3 for p in pages) and not pages[-1].more
    assert [item for p in store.scan("/nothing/", 3) for item in p.items] == []


def test_history_and_watch_resume(store: Store) -> None:
    r0 = store.current_revision()
    r1 = store.create("/w/a", b"1")
    r2 = store.update("/w/a", b"2", r1)
    store.create("/other/x", b"x")
    r3 = store.delete("/w/a", r2)
    events = store.history(r0, r3, "/w/")
    assert [(e.type, e.value, e.rev) for e in events] == [
        (EventType.CREATE, b"1", r1),
        (EventType.UPDATE, b"2", r2),
        (EventType.DELETE, b"2", r3),
    ]
    assert events[1].prev_value == b"1"
    watch = store.watch("/w/", r1)
    it = iter(watch)
    first = next(it)
    assert (first.type, first.rev) == (EventType.UPDATE, r2)
    assert next(it).type == EventType.DELETE
    r4 = store.create("/w/b", b"live")
    live = next(it)
    assert (live.type, live.key, live.rev) == (EventType.CREATE, "/w/b", r4)
    watch.close()


def test_watch_from_compacted_revision_is_refused(store: Store) -> None:
    r0 = store.current_revision()
    r1 = store.create("/c/a", b"1")
    revs = [r1]
    for i in range(5):
        revs.append(store.update("/c/a", str(i).encode(), revs[-1]))
    store.compact(revs[3])
    with pytest.raises(Compacted):
        store.watch("/c/", r0)
    with pytest.raises(Compacted):
        store.history(r0, revs[-1])
    watch = store.watch("/c/", revs[3])
    assert next(iter(watch)).rev == revs[4]
    watch.close()


def test_concurrent_writers_all_acknowledged(store: Store) -> None:
    errors: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for j in range(20):
                store.create(f"/cc/{i:02d}/{j:02d}", b"v")
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.range("/cc/").items) == 160


def test_conflicting_cas_exactly_one_wins(store: Store) -> None:
    rev = store.create("/race", b"0")
    wins: list[int] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        try:
            store.update("/race", str(i).encode(), rev)
            with lock:
                wins.append(i)
        except RevisionMismatch:
            pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1


def test_update_and_create_all_or_nothing(store: Store) -> None:
    q = store.create("/registry/resourcequotas/ns/q", b"used=0")
    made = store.update_and_create(
        [("/registry/resourcequotas/ns/q", b"used=2", q)],
        [("/registry/pods/ns/a", b"A"), ("/registry/pods/ns/b", b"B")],
    )
    quota = store.get("/registry/resourcequotas/ns/q")
    assert quota.value == b"used=2" and quota.mod_rev > q
    updated, a, b = made  # the update's new revision, then the creates'
    assert updated == quota.mod_rev
    assert isinstance(a, int) and isinstance(b, int)
    assert a != b and a >= quota.mod_rev and b >= quota.mod_rev  # each key its own revision
    assert store.get("/registry/pods/ns/a") == ("/registry/pods/ns/a", b"A", a, a)
    assert store.get("/registry/pods/ns/b").value == b"B"
    now = quota.mod_rev
    # A stale revision, a missing key, a taken name, a name twice: nothing written.
    failures: list[tuple[list[tuple[str, bytes, int]], list[tuple[str, bytes]], type]] = [
        ([("/registry/resourcequotas/ns/q", b"used=3", q)], [("/registry/pods/ns/c", b"C")],
         RevisionMismatch),
        ([("/registry/resourcequotas/ns/gone", b"x", now)], [("/registry/pods/ns/c", b"C")],
         KeyNotFound),
        ([("/registry/resourcequotas/ns/q", b"used=3", now)],
         [("/registry/pods/ns/c", b"C"), ("/registry/pods/ns/a", b"A2")], KeyExists),
        ([("/registry/resourcequotas/ns/q", b"used=3", now)],
         [("/registry/pods/ns/c", b"C"), ("/registry/pods/ns/c", b"C2")], KeyExists),
    ]  # fmt: skip
    for updates, creates, error in failures:
        with pytest.raises(error) as caught:
            store.update_and_create(updates, creates)
        if error is KeyExists:  # it names the key taken (the quota admission's taken create)
            assert str(caught.value) == creates[1][0], caught.value
    assert store.get("/registry/resourcequotas/ns/q") == quota
    assert [kv.key for kv in store.range("/registry/pods/").items] == [
        "/registry/pods/ns/a", "/registry/pods/ns/b",
    ]  # fmt: skip
    assert store.get("/registry/pods/ns/a").value == b"A"
    # Creates alone, and updates alone.
    (c,) = store.update_and_create([], [("/registry/pods/ns/c", b"C")])
    assert store.get("/registry/pods/ns/c").mod_rev == c
    (updated,) = store.update_and_create([("/registry/resourcequotas/ns/q", b"used=3", now)], [])
    assert store.get("/registry/resourcequotas/ns/q") == (
        "/registry/resourcequotas/ns/q", b"used=3", updated, q,
    )  # fmt: skip


def test_update_and_create_conflicting_exactly_one_wins(store: Store) -> None:
    """Writers that all read the quota at one revision: one charge and its
    object are written, every other writer's neither."""
    rev = store.create("/race", b"0")
    wins: list[int] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        try:
            store.update_and_create([("/race", str(i).encode(), rev)], [(f"/objs/{i}", b"o")])
            with lock:
                wins.append(i)
        except RevisionMismatch:
            pass

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert store.get("/race").value == str(wins[0]).encode()
    assert [kv.key for kv in store.range("/objs/").items] == [f"/objs/{wins[0]}"]


def test_update_and_create_past_etcds_operations_per_txn(store: Store) -> None:
    """More creates than etcd takes operations in one Txn (128) are written all the same."""
    rev = store.create("/many/q", b"0")
    made = store.update_and_create(
        [("/many/q", b"150", rev)], [(f"/many/objs/{i:03d}", b"o") for i in range(150)]
    )
    assert all(isinstance(r, int) for r in made) and len(set(made[1:])) == 150
    assert made[0] == store.get("/many/q").mod_rev
    assert len(store.range("/many/objs/").items) == 150
    assert store.get("/many/q").value == b"150"
