"""`skiff up --disable ingress|servicelb|metrics-server` and
`--disable-network-policy` (k3s' `--disable traefik|servicelb|metrics-server`
and `--disable-network-policy`): what reaches the control plane (its
controller manager, its API server) and the agent."""

from __future__ import annotations

from pathlib import Path

from agent import main as agent_main
from agent import up
from agent.layout import Layout
from controlplane import main as cp_main
from controlplane.controllers import config
from controlplane.main_flags import METRICS_SERVER


def enabled(argv: list[str], tmp_path: Path) -> dict[str, bool]:
    args = up.build_parser().parse_args(argv)
    cp_args = cp_main.build_parser().parse_args(
        up.controlplane_argv(args, Layout.under(tmp_path), "127.0.0.1:6443")
    )
    controllers = config.config_from_args(cp_args).controllers
    return {n: config.is_enabled(n, controllers) for n in ("ingress", "servicelb", "endpoints")}


def agent_args(argv: list[str], tmp_path: Path) -> tuple[int, int, bool]:
    args = up.build_parser().parse_args(argv)
    lay = Layout.under(tmp_path)
    parsed = agent_main.build_parser().parse_args(
        up.agent_argv(args, lay, up.cluster_dns(args), "127.0.0.1:6443")
    )
    return parsed.ingress_http_port, parsed.ingress_https_port, parsed.disable_network_policy


def test_by_default_everything_runs(tmp_path: Path) -> None:
    assert enabled([], tmp_path) == {"ingress": True, "servicelb": True, "endpoints": True}
    assert agent_args([], tmp_path) == (80, 443, False)


def test_disable_ingress_and_servicelb(tmp_path: Path) -> None:
    got = enabled(["--disable", "ingress", "--disable", "servicelb"], tmp_path)
    assert got == {"ingress": False, "servicelb": False, "endpoints": True}
    # No IngressClass from the control plane, and no HAProxy on the node either.
    assert agent_args(["--disable", "ingress"], tmp_path)[0] == 0
    assert enabled(["--disable", "servicelb"], tmp_path)["ingress"] is True


def test_disable_network_policy_reaches_the_agent(tmp_path: Path) -> None:
    assert agent_args(["--disable-network-policy"], tmp_path) == (80, 443, True)
    ports = ["--ingress-http-port", "8080", "--ingress-https-port", "8443"]
    assert agent_args(ports, tmp_path) == (8080, 8443, False)


def test_disable_metrics_server_reaches_the_control_plane(tmp_path: Path) -> None:
    def disabled(argv: list[str]) -> list[str]:
        args = up.build_parser().parse_args(argv)
        lay = Layout.under(tmp_path)
        return list(cp_main.build_parser().parse_args(
            up.controlplane_argv(args, lay, "127.0.0.1:6443")).disable)  # fmt: skip

    assert METRICS_SERVER not in disabled([])
    assert METRICS_SERVER in disabled(["--disable", METRICS_SERVER])
    # The controllers and the agent are as without it.
    assert enabled(["--disable", METRICS_SERVER], tmp_path) == enabled([], tmp_path)
    assert agent_args(["--disable", METRICS_SERVER], tmp_path) == (80, 443, False)
