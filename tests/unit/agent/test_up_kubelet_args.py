"""`skiff up --kubelet-arg`: flags passed on to the agent, checked first."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import up
from agent.layout import Layout


def argv(*kubelet_args: str) -> list[str]:
    args = up.build_parser().parse_args([f"--kubelet-arg={v}" for v in kubelet_args])
    return up.agent_argv(args, Layout.under(Path("/tmp/skiff-kubelet-args")), "10.43.0.10", "")


def test_flags_reach_the_agent_after_skiff_ups_own() -> None:
    got = argv("eviction-hard=nodefs.available<24Mi", "--eviction-pressure-transition-period=5s")
    assert got[-2:] == ["--eviction-hard=nodefs.available<24Mi",
                        "--eviction-pressure-transition-period=5s"]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("root-dir=/elsewhere", "skiff up sets --root-dir itself"),
        ("cni-bridge=br0", "skiff up sets --cni-bridge itself"),
        ("no-such-flag=1", "skiff agent has no flag --no-such-flag"),
        ("eviction-hard", "want FLAG=VALUE"),
        ("=1", "want FLAG=VALUE"),
    ],
)
def test_bad_ones_are_refused_naming_the_flag(value: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        argv(value)


def test_skiff_up_refuses_before_starting_anything(capsys: pytest.CaptureFixture[str]) -> None:
    assert up.main(["--kubelet-arg", "root-dir=/x"]) == 2
    assert "skiff up sets --root-dir itself" in capsys.readouterr().err
