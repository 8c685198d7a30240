"""The address the `kubernetes` Service's Endpoints publish for pods."""

from __future__ import annotations

from controlplane.apiserver.server import endpoint_host


def primary() -> str:
    return "10.0.0.5"


def test_advertised_host_wins() -> None:
    assert endpoint_host("10.1.1.1", "0.0.0.0:6443", primary) == "10.1.1.1"
    assert endpoint_host("10.1.1.1:6443", "0.0.0.0:6443", primary) == "10.1.1.1"
    assert endpoint_host("[fd00::1]:6443", "[::]:6443", primary) == "fd00::1"


def test_wildcard_or_loopback_on_a_wildcard_listener_is_the_primary_address() -> None:
    assert endpoint_host("", "0.0.0.0:6443", primary) == "10.0.0.5"
    # skiff up advertises 127.0.0.1 to local clients; pods need a routable one.
    assert endpoint_host("127.0.0.1:6443", "0.0.0.0:6443", primary) == "10.0.0.5"
    assert endpoint_host("", "0.0.0.0:6443", lambda: "") == "127.0.0.1"


def test_a_loopback_listener_publishes_loopback() -> None:
    assert endpoint_host("", "127.0.0.1:0", primary) == "127.0.0.1"
