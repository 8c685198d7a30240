"""Bad input to the VM cluster: each is named with its fix, and nothing is
left behind (no namespace, no daemon, no credentials). These run before the
cluster boots and take seconds."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.cluster import free_subnet
from tests.harness.netns import temp_veth, unique_name
from tests.vm import vmcluster
from tests.vm.vmcluster import CREDENTIALS, VMNET, VmError

pytestmark = [pytest.mark.vm, pytest.mark.root]


def netns_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


@pytest.fixture
def ns_env() -> Iterator[dict[str, str]]:
    """An environment for vmnet.sh with a namespace name of this test's own."""
    env = vmcluster.base_env()
    env["SKIFF_VM_NS"] = unique_name("skvm-", 12)
    yield env
    subprocess.run([str(VMNET), "down"], env=env, capture_output=True, check=False)
    assert not netns_exists(env["SKIFF_VM_NS"])


def test_no_free_address(ns_env: dict[str, str]) -> None:
    net = free_subnet()
    prefix = str(net.network_address).rsplit(".", 1)[0]
    with temp_veth() as veth:  # a link whose address routes prefix.0/24 on this host
        subprocess.run(["ip", "addr", "add", f"{prefix}.1/24", "dev", veth.host], check=True)
        subprocess.run(["ip", "link", "set", veth.host, "up"], check=True)
        proc = subprocess.run(
            [str(VMNET), "up"], env=ns_env | {"SKIFF_NET": prefix}, capture_output=True, text=True
        )
    assert proc.returncode != 0
    assert "no free address" in proc.stderr and "SKIFF_NET" in proc.stderr, proc.stderr
    assert not netns_exists(ns_env["SKIFF_VM_NS"])


def test_libvirt_not_running(ns_env: dict[str, str]) -> None:
    env = ns_env | {"SKIFF_LIBVIRTD": "/bin/false", "SKIFF_NET": "192.168.57"}
    proc = subprocess.run([str(VMNET), "up"], env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "libvirt not running" in proc.stderr, proc.stderr
    assert not netns_exists(ns_env["SKIFF_VM_NS"])
    assert not Path("/run/skiff-vm", ns_env["SKIFF_VM_NS"]).exists()


def test_missing_box(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vmcluster, "BOX", "skiff-no-such-box")
    with (
        pytest.raises(VmError, match=r"missing box.*make -C vagrant box"),
        vmcluster.vm_cluster(nodes=2),
    ):
        pytest.fail("a cluster came up without its box")
    assert not netns_exists(vmcluster.NS)
    assert not CREDENTIALS.exists()


def test_driver_probe_without_a_box(tmp_path: Path) -> None:
    """The KVM probe boots the box's kernel: without a box it says so."""
    env = vmcluster.base_env() | {"SKIFF_VM_CACHE": str(tmp_path)}
    proc = subprocess.run([str(VMNET), "driver"], env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "missing box" in proc.stderr and "make -C vagrant box" in proc.stderr, proc.stderr
    assert proc.stdout == ""
