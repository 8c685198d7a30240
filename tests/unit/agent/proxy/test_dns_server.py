"""DnsServer over real UDP and TCP sockets on 127.0.0.1 (free ports).

Answers come from the fake ApiClient through informers. Forwarding goes only
to an upstream stub on 127.0.0.1 started by the test (itself a DnsServer for
another domain, with forwarding off) — never to the machine's resolvers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from agent.proxy.dns import DnsServer, DnsSettings, parse_upstream, resolv_conf_nameservers
from tests.fakes.endpointslices import endpoint_slice
from tests.fakes.fake_apiclient import FakeApiClient


def local(**kw: Any) -> DnsSettings:
    base: dict[str, Any] = {"listen_host": "127.0.0.1", "port": 0, "forward": False}
    base.update(kw)
    return DnsSettings(**base)


def headless(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    svc = {"metadata": {"name": "big", "namespace": "default"}, "spec": {"clusterIP": "None"}}
    eps = endpoint_slice("big", [f"10.244.{i // 200}.{i % 200 + 1}" for i in range(n)], [])
    return svc, eps


@pytest.fixture
def api() -> FakeApiClient:
    api = FakeApiClient()
    api.create(
        "Service",
        {
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "10.43.0.20", "ports": [{"name": "http", "port": 80}]},
        },
    )
    svc, eps = headless(100)
    api.create("Service", svc)
    api.create("EndpointSlice", eps)
    return api


@pytest.fixture
def upstream() -> Iterator[DnsServer]:
    class Stub:
        def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
            return {"spec": {"clusterIP": "192.0.2.1"}} if name == "www" else None

        def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
            return []

        def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
            return []

    server = DnsServer(settings=local(domain="example.test"), lookup=Stub())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def server(api: FakeApiClient, upstream: DnsServer) -> Iterator[DnsServer]:
    host, port = upstream.address
    s = DnsServer(api, local(forward=True, upstreams=(f"{host}:{port}",)))
    s.start()
    yield s
    s.stop()


def test_upstream_parsing(tmp_path: Any) -> None:
    assert parse_upstream("10.0.0.2") == ("10.0.0.2", 53)
    assert parse_upstream("127.0.0.1:5353") == ("127.0.0.1", 5353)
    assert parse_upstream("[::1]:5353") == ("::1", 5353)
    assert parse_upstream("fe80::1") == ("fe80::1", 53)
    conf = tmp_path / "resolv.conf"
    conf.write_text(
        "search x\nnameserver 10.0.0.2\n# c\nnameserver fe80::1%eth0\noptions ndots:5\n"
    )
    assert resolv_conf_nameservers(str(conf)) == ["10.0.0.2", "fe80::1"]
    assert resolv_conf_nameservers(str(tmp_path / "missing")) == []
    s = DnsServer(
        settings=DnsSettings(listen_host="10.43.0.10", resolv_conf=str(conf)),
        lookup=object(),  # type: ignore[arg-type]
    )
    assert s.upstreams() == [("10.0.0.2", 53), ("fe80::1", 53)]
