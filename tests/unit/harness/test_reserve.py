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


# /19s of a range no picker of tests/harness hands out (they keep theirs
# until their process exits, so late in a run most of 10.248.0.0/13 is held):
# only this test reserves here.
SPARE = [ipaddress.IPv4Network(f"10.{240 + i // 8}.{32 * (i % 8)}.0/19") for i in range(64)]


def _two_free_networks() -> tuple[list[reserve.Reservation], ipaddress.IPv4Network,
                                  ipaddress.IPv4Network]:  # fmt: skip
    """(what holds the first, the first, the second): two /19s free now; the
    first held, the second released again."""
    found: list[tuple[list[reserve.Reservation], ipaddress.IPv4Network]] = []
    for net in SPARE:
        held = reserve.try_reserve_network(net)
        if held is not None:
            found.append((held, net))
            if len(found) == 2:
                break
    assert len(found) == 2, "no two free /19s in 10.240.0.0/13"
    for r in found[1][0]:
        r.release()
    return found[0][0], found[0][1], found[1][1]


def test_a_network_conflicts_with_every_network_it_overlaps() -> None:
    held, mine, other = _two_free_networks()
    try:
        inside = next(mine.subnets(new_prefix=24))
        outside = next(other.subnets(new_prefix=24))
        probe = (
            "import ipaddress; from tests.harness import reserve; "
            "print([reserve.try_reserve_network(ipaddress.IPv4Network(n)) is None "
            f"for n in {(str(inside), str(outside))!r}])"
        )
        taken = json.loads(
            in_another_process(probe).replace("True", "true").replace("False", "false")
        )
        assert taken[0] is True, "a /24 inside the held /19 was free"
        assert taken[1] is False, "a /24 outside the held /19 conflicted"
    finally:
        for r in held:
            r.release()
