"""Two e2e runs on one machine do not collide on the cluster DNS address:
each run's control planes and nodes use a service CIDR of the run's own
(checked against the machine's addresses), each node its own DNS interface
and proxy chains. On the old code every node took 10.43.0.10 on skiff-dns
and the second run's agents failed with "Address already in use"."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from tests.harness import nodeprocs
from tests.harness.nodeprocs import Node, NodeSpec


def node(cp_data_dir: Path) -> Node:
    return Node(spec=NodeSpec.unique(), base=cp_data_dir / "node", server="127.0.0.1:1",
                cp_data_dir=cp_data_dir, runtime_kind="skiff", registry_url="")  # fmt: skip


def flag(argv: list[str], name: str) -> str:
    return argv[len(argv) - 1 - argv[::-1].index(name) + 1]  # the last one counts


def test_a_run_has_its_own_service_cidr_and_dns(tmp_path: Path) -> None:
    cidr = flag(nodeprocs.controlplane_args(), "--service-cidr")
    assert cidr == nodeprocs.run_service_cidr() != "10.43.0.0/16"
    (tmp_path / "join-token").write_text("token\n")
    first, second = node(tmp_path), node(tmp_path)
    argv = first.agent_argv()
    dns = flag(argv, "--cluster-dns")
    assert dns == str(ipaddress.ip_network(cidr)[10]) and dns != "10.43.0.10"
    other = second.agent_argv()
    for name in ("--dns-interface", "--iptables-chain-prefix"):
        assert flag(argv, name) != flag(other, name), name
    assert flag(argv, "--dns-interface") != "skiff-dns"
    # A test's own flags still win.
    first.agent_args = ("--cluster-dns", "")
    assert flag(first.agent_argv(), "--cluster-dns") == ""


def test_service_cidrs_avoid_addresses_held_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another run's DNS address (10.X.0.10 on its interface) takes its /16 out."""
    held = {ipaddress.IPv4Address(f"10.{x}.0.10") for x in range(100, 200) if x != 150}
    monkeypatch.setattr(nodeprocs, "used_addresses", lambda: held)
    monkeypatch.setattr(nodeprocs, "used_routes", lambda: set())
    monkeypatch.setattr(nodeprocs, "try_reserve_network", lambda net: [])
    assert nodeprocs.free_service_cidrs(1) == ["10.150.0.0/16"]
    held.add(ipaddress.IPv4Address("10.150.0.10"))
    with pytest.raises(RuntimeError, match="no free"):
        nodeprocs.free_service_cidrs(1)


def test_service_cidrs_avoid_those_another_process_reserved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two runs that check the routes at the same moment, before either has
    installed anything, still never pick the same /16."""
    monkeypatch.setattr(nodeprocs, "used_addresses", lambda: set())
    monkeypatch.setattr(nodeprocs, "used_routes", lambda: set())
    free = ipaddress.IPv4Network("10.150.0.0/16")
    monkeypatch.setattr(nodeprocs, "try_reserve_network", lambda net: [] if net == free else None)
    assert nodeprocs.free_service_cidrs(1) == ["10.150.0.0/16"]
    monkeypatch.setattr(nodeprocs, "try_reserve_network", lambda net: None)
    with pytest.raises(RuntimeError, match="no free"):
        nodeprocs.free_service_cidrs(1)


def test_a_cluster_range_is_handed_back_and_a_full_machine_waits_then_says_so() -> None:
    from tests.harness.reserve import held, try_reserve_network
    from tests.harness.wait import WaitTimeout

    cidr = nodeprocs.free_cluster_cidr()
    first_block = f"net-{ipaddress.ip_network(cidr).network_address}-24"
    assert held(first_block)
    nodeprocs.release_cluster_cidr(cidr)
    assert not held(first_block)
    # Every range taken (by this process here; another run's in practice):
    # the pick waits, then names the problem, instead of failing at once.
    taken = []
    try:
        for i in range(64):
            net = ipaddress.IPv4Network(f"10.{248 + i // 8}.{32 * (i % 8)}.0/19")
            taken.extend(try_reserve_network(net) or [])
        with pytest.raises(WaitTimeout, match=r"no free 10\.248\.0\.0/13 sub-range"):
            nodeprocs.free_cluster_cidr(timeout=1.5)
    finally:
        for r in taken:
            r.release()
