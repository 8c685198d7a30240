"""The quota admission keeps the quotas it charged (on SQLite, whose store
counts the writes under a prefix) instead of reading them back for the next
create: a run of creates reads the namespace's quotas once, and any write
by someone else (a status the controller wrote, a raised limit, a quota
created or deleted in the namespace, even a label) is seen by the very next
create; parallel creates with another writer at work never pass hard."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from controlplane.apiserver.codec import decode
from controlplane.apiserver.quota_admission import QuotaAdmission
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import Forbidden
from tests.unit.controlplane.apiserver.test_quota_admission import in_parallel, pod


def make_quota(reg: Registry, name: str, hard: dict[str, str], used: dict[str, str]) -> None:
    reg.create("ResourceQuota", {"metadata": {"name": name, "namespace": "default"},
                                 "spec": {"hard": hard}})  # fmt: skip
    set_status(reg, name, hard, used)


def set_status(reg: Registry, name: str, hard: dict[str, str], used: dict[str, str]) -> None:
    """A status written by someone else (the quota controller)."""
    reg.patch("ResourceQuota", name, {"status": {"hard": hard, "used": used}}, "default",
              subresource="status")  # fmt: skip


def used(reg: Registry, name: str = "q") -> dict[str, str]:
    q = decode(reg.get("ResourceQuota", name, "default")[0])
    found: dict[str, str] = q["status"]["used"]
    return found


def quota_reads(reg: Registry, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The namespaces whose ResourceQuotas are listed from now on."""
    reads: list[str] = []
    real = reg.list

    def counting(kind: str, namespace: str | None = None, *args: Any, **kwargs: Any) -> Any:
        if kind == "ResourceQuota":
            reads.append(str(namespace))
        return real(kind, namespace, *args, **kwargs)

    monkeypatch.setattr(reg, "list", counting)
    return reads


def test_a_run_of_creates_reads_the_quotas_once(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_quota(reg, "q", {"pods": "10", "requests.cpu": "2"}, {"pods": "0", "requests.cpu": "0"})
    reads = quota_reads(reg, monkeypatch)
    for i in range(6):
        reg.create("Pod", pod(f"p{i}", requests={"cpu": "250m"}))
    assert reads == ["default"]  # the first create's read; its charges were kept
    assert used(reg) == {"pods": "6", "requests.cpu": "1500m"}
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("big", requests={"cpu": "600m"}))
    assert "requested: requests.cpu=600m, used: requests.cpu=1500m, limited: requests.cpu=2" in (
        str(err.value)
    )
    assert reads == ["default"]
    assert len(reg.list("Pod", "default").items) == 6


def test_a_write_by_another_is_seen_by_the_next_create(reg: Registry) -> None:
    make_quota(reg, "q", {"pods": "3"}, {"pods": "0"})
    reg.create("Pod", pod("a"))
    # The controller counted pods made elsewhere: the next create sees them.
    set_status(reg, "q", {"pods": "3"}, {"pods": "3"})
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("b"))
    assert "requested: pods=1, used: pods=3, limited: pods=3" in str(err.value)
    set_status(reg, "q", {"pods": "5"}, {"pods": "1"})  # a raised limit, a fresh count
    reg.create("Pod", pod("b"))
    assert used(reg) == {"pods": "2"}
    # A second quota made in the namespace limits the next create at once.
    make_quota(reg, "q2", {"pods": "2"}, {"pods": "2"})
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("c"))
    assert "exceeded quota: q2, requested: pods=1, used: pods=2, limited: pods=2" in str(err.value)
    reg.delete("ResourceQuota", "q2", "default")
    reg.create("Pod", pod("c"))
    assert used(reg) == {"pods": "3"}
    # Even a label written on it is a write by someone else: read again, charged right.
    reg.patch("ResourceQuota", "q", {"metadata": {"labels": {"team": "a"}}}, "default")
    reg.create("Pod", pod("d"))
    assert used(reg) == {"pods": "4"}
    assert len(reg.list("Pod", "default").items) == 4


def test_a_quota_created_as_a_charged_object_is_seen(reg: Registry) -> None:
    """A ResourceQuota made in a namespace whose quota counts them: the charge
    and the new quota are one write, and the new quota limits what follows."""
    make_quota(reg, "q", {"resourcequotas": "5", "pods": "5"},
               {"resourcequotas": "1", "pods": "0"})  # fmt: skip
    reg.create("Pod", pod("a"))
    reg.create("ResourceQuota", {"metadata": {"name": "q2", "namespace": "default"},
                                 "spec": {"hard": {"pods": "1"}}})  # fmt: skip
    assert used(reg) == {"resourcequotas": "2", "pods": "1"}
    reg.create("Pod", pod("b"))  # q2 limits nothing before the controller counted it
    set_status(reg, "q2", {"pods": "1"}, {"pods": "1"})
    with pytest.raises(Forbidden) as err:
        reg.create("Pod", pod("c"))
    assert "exceeded quota: q2, requested: pods=1, used: pods=1, limited: pods=1" in str(err.value)
    assert used(reg) == {"resourcequotas": "2", "pods": "2"}


def test_parallel_creates_with_another_writer_never_pass_hard(reg: Registry) -> None:
    make_quota(reg, "q", {"pods": "30"}, {"pods": "0"})
    done, wrote = threading.Event(), threading.Event()
    labels = [0]

    def relabel() -> None:  # someone else writing the quota all along, every few ms
        while True:
            labels[0] += 1
            reg.patch("ResourceQuota", "q", {"metadata": {"labels": {"n": str(labels[0])}}},
                      "default")  # fmt: skip
            wrote.set()
            if done.wait(0.003):
                return

    other = threading.Thread(target=relabel)
    other.start()
    assert wrote.wait(30)
    try:
        outcomes = in_parallel(40, lambda i: reg.create("Pod", pod(f"p{i}")))
    finally:
        done.set()
        other.join(30)
    assert not other.is_alive()
    refused = [o for o in outcomes if isinstance(o, Forbidden)]
    stored = [o for o in outcomes if not isinstance(o, Exception)]
    assert (len(stored), len(refused)) == (30, 10), outcomes
    assert all("exceeded quota: q" in str(o) for o in refused)
    assert used(reg) == {"pods": "30"}
    assert len(reg.list("Pod", "default").items) == 30


def test_a_create_meeting_a_charge_just_written_waits_for_it_instead_of_reading(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A charge is counted by the store as it commits, and kept by its leader
    a moment later: a create arriving in between waits for the leader to
    keep the quotas as charged instead of reading and parsing them back."""
    make_quota(reg, "q", {"pods": "5"}, {"pods": "0"})
    reg.create("Pod", pod("a"))  # the quotas read once, then kept
    plugin = next(p for p in reg.plugins if isinstance(p, QuotaAdmission))
    reads = quota_reads(reg, monkeypatch)
    store: Any = reg.store
    real_write, real_count = store.update_and_create, store.prefix_writes
    counted = threading.Event()
    seen: list[Any] = []

    def count(prefix: str) -> int:
        if threading.current_thread() is not threading.main_thread():
            counted.set()
        return int(real_count(prefix))

    def meet() -> None:
        seen.append(plugin.known(reg, "default"))

    other = threading.Thread(target=meet)

    def write(*args: Any) -> Any:
        written = real_write(*args)  # committed and counted, not yet kept
        if not other.is_alive() and not seen:
            other.start()
            assert counted.wait(30)  # it found the count moved
        return written

    monkeypatch.setattr(store, "prefix_writes", count)
    monkeypatch.setattr(store, "update_and_create", write)
    reg.create("Pod", pod("b"))
    other.join(30)
    assert not other.is_alive() and len(seen) == 1
    assert reads == []  # neither the create nor the one it met read the quotas
    assert {n: s.used.formatted(["pods"]) for n, s in seen[0].states.items()} == {
        "q": {"pods": "2"}
    }
    reg.create("Pod", pod("c"))
    assert reads == [] and used(reg) == {"pods": "3"}
