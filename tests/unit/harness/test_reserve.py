"""Reservations hold across processes: what one test process reserved (a
port, a network) no other process on the machine is given until the first
exits; a port is never one the kernel might hand out as an ephemeral port."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.harness import reserve
from tests.harness.ports import _range, free_port

REPO = Path(__file__).resolve().parents[3]


def in_another_process(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip


def test_a_name_is_held_by_one_process_until_it_releases_it() -> None:
    name = f"unit-{free_port()}"
    mine = reserve.try_reserve(name)
    assert mine is not None and reserve.held(name)
    assert reserve.try_reserve(name) is None  # not twice in this process either
    check = f"from tests.harness import reserve; print(reserve.try_reserve({name!r}) is None)"
    assert in_another_process(check) == "True"
    mine.release()
    assert not reserve.held(name)
    assert in_another_process(check) == "False"  # its lock went with it


def test_ports_are_below_the_ephemeral_range_and_never_given_twice() -> None:
    low, high = _range()
    first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert high <= first_ephemeral and high <= 30000  # nor a NodePort
    mine = {free_port() for _ in range(200)}
    assert len(mine) == 200 and all(low <= p < high for p in mine)
    theirs = in_another_process(
        "from tests.harness.ports import free_port; print(*[free_port() for _ in range(200)])"
    )
    assert not mine & {int(p) for p in theirs.split()}


def test_a_network_conflicts_with_every_network_it_overlaps() -> None:
    for third in range(0, 256, 32):  # the first /19 no other run holds now
        cluster = ipaddress.IPv4Network(f"10.255.{third}.0/19")
        held = reserve.try_reserve_network(cluster)
        if held is not None:
            break
    assert held is not None
    try:
        inside = ipaddress.IPv4Network(f"10.255.{third + 6}.0/24")
        # Outside it: every /24 of the other /19s, some of which other runs
        # (parallel tests) may hold now; at least one of them is free.
        outside = [f"10.255.{(third + k) % 256}.0/24" for k in range(32, 256, 32)]
        probe = (
            "import ipaddress; from tests.harness import reserve; "
            "print([reserve.try_reserve_network(ipaddress.IPv4Network(n)) is None "
            f"for n in {(str(inside), *outside)!r}])"
        )
        taken = json.loads(
            in_another_process(probe).replace("True", "true").replace("False", "false")
        )
        assert taken[0] is True, "a /24 inside the held /19 was free"
        assert False in taken[1:], f"every /24 outside the held /19 conflicted: {taken}"
    finally:
        for r in held:
            r.release()
