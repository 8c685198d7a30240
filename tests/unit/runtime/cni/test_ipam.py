"""skiff-ipam's allocator: host-local semantics on a fake store and on the
disk store (host-local's file format), without root."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from runtime.cni import ipam
from runtime.cni.skel import CNIError


class FakeStore:
    """In-memory Store with the same contract as DiskStore."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[str, str]] = {}
        self.last: dict[str, str] = {}
        self.locked = False

    def lock(self) -> None:
        assert not self.locked
        self.locked = True

    def unlock(self) -> None:
        self.locked = False

    def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool:
        assert self.locked
        if ip in self.held:
            return False
        self.held[ip] = (container_id, ifname)
        self.last[range_id] = ip
        return True

    def last_reserved(self, range_id: str) -> str | None:
        return self.last.get(range_id)

    def get_by_id(self, container_id: str, ifname: str) -> list[str]:
        return [ip for ip, owner in self.held.items() if owner == (container_id, ifname)]

    def release_by_id(self, container_id: str, ifname: str) -> list[str]:
        ips = self.get_by_id(container_id, ifname)
        for ip in ips:
            del self.held[ip]
        return ips

    def all_ids(self) -> dict[str, tuple[str, str]]:
        return dict(self.held)

    def release_ip(self, ip: str) -> None:
        self.held.pop(ip, None)


def conf(**ipam_keys: Any) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "net", "ipam": {"type": "skiff-ipam", **ipam_keys}}


def addr(result: dict[str, Any]) -> str:
    return str(result["ips"][0]["address"])


def test_first_address_skips_network_and_gateway() -> None:
    st = FakeStore()
    r = ipam.allocate(
        conf(subnet="10.1.2.0/24", routes=[{"dst": "0.0.0.0/0"}]), "a", "eth0", store=st
    )
    assert r["ips"] == [{"address": "10.1.2.2/24", "gateway": "10.1.2.1"}]
    assert r["routes"] == [{"dst": "0.0.0.0/0"}]


def test_round_robin_does_not_reuse_a_just_released_address() -> None:
    st = FakeStore()
    c = conf(subnet="10.1.2.0/29")  # .1 gateway, .2-.6 usable
    assert addr(ipam.allocate(c, "a", "eth0", store=st)) == "10.1.2.2/29"
    assert addr(ipam.allocate(c, "b", "eth0", store=st)) == "10.1.2.3/29"
    ipam.release(c, "a", "eth0", store=st)
    assert addr(ipam.allocate(c, "c", "eth0", store=st)) == "10.1.2.4/29"
    assert addr(ipam.allocate(c, "d", "eth0", store=st)) == "10.1.2.5/29"
    assert addr(ipam.allocate(c, "e", "eth0", store=st)) == "10.1.2.6/29"
    assert addr(ipam.allocate(c, "f", "eth0", store=st)) == "10.1.2.2/29"  # wrapped
    with pytest.raises(CNIError) as exc:
        ipam.allocate(c, "g", "eth0", store=st)
    assert exc.value.code == 11 and "10.1.2.0/29" in exc.value.msg


def test_range_start_end_gateway_and_idempotent_add() -> None:
    st = FakeStore()
    c = conf(
        subnet="10.1.0.0/16", rangeStart="10.1.5.10", rangeEnd="10.1.5.11", gateway="10.1.5.10"
    )
    assert addr(ipam.allocate(c, "a", "eth0", store=st)) == "10.1.5.11/16"
    assert addr(ipam.allocate(c, "a", "eth0", store=st)) == "10.1.5.11/16"  # same container
    with pytest.raises(CNIError):
        ipam.allocate(c, "b", "eth0", store=st)
    assert st.all_ids() == {"10.1.5.11": ("a", "eth0")}


def test_ranges_give_one_address_per_range_set_and_requested_ips() -> None:
    st = FakeStore()
    c = conf(
        ranges=[
            [{"subnet": "10.9.0.0/30"}, {"subnet": "10.9.1.0/24"}],
            [{"subnet": "fd00:9::/64"}],
        ]
    )
    r = ipam.allocate(c, "a", "eth0", store=st)
    assert [ip["address"] for ip in r["ips"]] == ["10.9.0.2/30", "fd00:9::2/64"]
    assert r["ips"][1]["gateway"] == "fd00:9::1"
    r = ipam.allocate(c, "b", "eth0", store=st)
    assert r["ips"][0]["address"] == "10.9.1.2/24"  # first range full: next range
    r = ipam.allocate(c, "c", "eth0", {"IP": "10.9.1.77"}, store=st)
    assert r["ips"][0]["address"] == "10.9.1.77/24"


@pytest.mark.parametrize(
    "keys",
    [
        {},
        {"subnet": "nonsense"},
        {"subnet": "10.0.0.0/31"},
        {"subnet": "10.0.0.0/24", "rangeStart": "10.0.1.1"},
    ],
)
def test_bad_config_is_code_7(keys: dict[str, Any]) -> None:
    with pytest.raises(CNIError) as exc:
        ipam.allocate(conf(**keys), "a", "eth0", store=FakeStore())
    assert exc.value.code == 7


def test_failed_second_range_set_releases_the_first() -> None:
    st = FakeStore()
    c = conf(ranges=[[{"subnet": "10.9.0.0/24"}], [{"subnet": "10.8.0.0/30"}]])
    ipam.allocate(c, "a", "eth0", store=st)
    with pytest.raises(CNIError):
        ipam.allocate(c, "b", "eth0", store=st)
    assert st.all_ids() == {"10.9.0.2": ("a", "eth0"), "10.8.0.2": ("a", "eth0")}


def test_gc_keeps_only_valid_attachments() -> None:
    st = FakeStore()
    c = conf(subnet="10.1.2.0/24")
    for cid in "abc":
        ipam.allocate(c, cid, "eth0", store=st)
    c["cni.dev/valid-attachments"] = [{"containerID": "b", "ifname": "eth0"}]
    assert sorted(ipam.gc(c, store=st)) == ["10.1.2.2", "10.1.2.4"]
    assert st.all_ids() == {"10.1.2.3": ("b", "eth0")}


def test_disk_store_is_host_local_format_and_survives_restart(tmp_path: Path) -> None:
    c = conf(subnet="10.1.2.0/24", dataDir=str(tmp_path))
    assert addr(ipam.allocate(c, "a", "eth0")) == "10.1.2.2/24"
    d = tmp_path / "net"
    assert (d / "10.1.2.2").read_bytes() == b"a\r\neth0"
    assert (d / "last_reserved_ip.0").read_text() == "10.1.2.2"
    # a new process (a fresh store) sees the allocation and continues after it
    assert addr(ipam.allocate(c, "b", "eth0")) == "10.1.2.3/24"
    assert ipam.check(c, "a", "eth0") == ["10.1.2.2"]
    assert ipam.release(c, "a", "eth0") == ["10.1.2.2"]
    assert ipam.release(c, "a", "eth0") == []
    with pytest.raises(CNIError):
        ipam.check(c, "a", "eth0")
    assert sorted(os.listdir(d)) == ["10.1.2.3", "last_reserved_ip.0", "lock"]


def test_disk_store_lock_serialises_concurrent_allocations(tmp_path: Path) -> None:
    c = conf(subnet="10.1.0.0/24", dataDir=str(tmp_path))
    got: list[str] = []
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            got.append(addr(ipam.allocate(c, f"c{i}", "eth0")))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(set(got)) == 40
