"""`skiff up` side by side (issue #8): what each instance names on the host,
and the agent flags it gets; the default instance keeps today's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import main as agent_main
from agent.layout import Layout
from agent.proxy.rules import Chains
from agent.up import agent_argv, build_parser, cluster_dns

HOST_GLOBAL = (
    "cni_bridge",
    "cgroup_root",
    "runtime_cgroup",
    "cni_network",
    "chain_prefix",
    "dns_interface",
)


def test_the_default_instance_keeps_todays_names() -> None:
    lay = Layout.standard()
    assert (lay.cni_bridge, lay.cgroup_root, lay.runtime_cgroup) == (
        "skiff0",
        "/skiff/pods",
        "/skiff",
    )
    assert (lay.cni_network, lay.chain_prefix, lay.dns_interface) == ("skiff", "SKIFF", "skiff-dns")
    args = build_parser().parse_args([])
    assert (args.api_port, args.agent_port) == (6443, 10250)
    assert cluster_dns(args) == "10.43.0.10"


def test_instances_under_data_dirs_share_no_host_global_name(tmp_path: Path) -> None:
    a, b = Layout.under(tmp_path / "a"), Layout.under(tmp_path / "b")
    std = Layout.standard()
    for attr in HOST_GLOBAL:
        assert len({getattr(a, attr), getattr(b, attr), getattr(std, attr)}) == 3, attr
    for lay in (a, b):
        Chains(lay.chain_prefix)  # a valid prefix: every chain name fits iptables
        assert len(lay.dns_interface) <= 15 and len(lay.cni_bridge) <= 15
        assert lay.cgroup_root.startswith(lay.runtime_cgroup + "/")
    # skiff up clears the runtime's cgroup tree on stop, the pods' root with it.
    assert std.cgroup_root.startswith(std.runtime_cgroup + "/")
    assert Layout.under(tmp_path / "a") == a  # the same data dir, the same names


def test_cluster_dns_follows_the_service_cidr() -> None:
    p = build_parser()
    assert cluster_dns(p.parse_args(["--service-cidr", "10.45.0.0/16"])) == "10.45.0.10"
    assert cluster_dns(p.parse_args(["--service-cidr", "10.46.8.0/24"])) == "10.46.8.10"
    given = ["--service-cidr", "10.45.0.0/16", "--cluster-dns", "10.45.0.53"]
    assert cluster_dns(p.parse_args(given)) == "10.45.0.53"
    with pytest.raises(SystemExit):
        cluster_dns(p.parse_args(["--service-cidr", "nonsense"]))


def test_the_agent_of_a_second_instance_gets_its_own_names_and_ports(tmp_path: Path) -> None:
    argv = [
        "--data-dir", str(tmp_path / "b"), "--api-port", "26443", "--agent-port", "20250",
        "--cluster-cidr", "10.245.0.0/16", "--service-cidr", "10.45.0.0/16",
    ]  # fmt: skip
    args = build_parser().parse_args(argv)
    lay = Layout.under(tmp_path / "b")
    ag = agent_main.build_parser().parse_args(
        agent_argv(args, lay, cluster_dns(args), "127.0.0.1:26443")
    )
    assert ag.server == "127.0.0.1:26443"
    assert ag.listen == "0.0.0.0:20250" and agent_main.listen_port(ag.listen) == 20250
    assert (ag.cluster_cidr, ag.cluster_dns) == ("10.245.0.0/16", "10.45.0.10")
    assert ag.iptables_chain_prefix == lay.chain_prefix != "SKIFF"
    assert ag.dns_interface == lay.dns_interface != "skiff-dns"
    assert ag.cni_network_name == lay.cni_network != "skiff"
    assert ag.cni_bridge == lay.cni_bridge and ag.cgroup_root == lay.cgroup_root


def test_the_default_agent_flags_are_unchanged() -> None:
    ag = agent_main.build_parser().parse_args([])
    assert (ag.listen, ag.cluster_dns) == ("0.0.0.0:10250", "10.43.0.10")
    assert (ag.iptables_chain_prefix, ag.dns_interface, ag.cni_network_name) == (
        "SKIFF",
        "skiff-dns",
        "skiff",
    )
    assert agent_main.listen_port("") == agent_main.listen_port("0.0.0.0:0") == 10250


def test_the_cni_network_is_named_per_agent() -> None:
    from agent.network import NetworkSettings, conflist

    assert conflist(NetworkSettings(), "10.244.0.0/24", "", [])["name"] == "skiff"
    named = conflist(NetworkSettings(name="skiff-ab12c"), "10.245.0.0/24", "", [])
    assert named["name"] == "skiff-ab12c"
