"""ServiceProxy against the fake ApiClient and a recording iptables."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent.proxy.proxy import ProxySettings, ServiceProxy
from controlplane.client.informer import SharedInformerFactory
from tests.fakes.endpointslices import endpoint_slice
from tests.fakes.fake_apiclient import FakeApiClient
from tests.fakes.iptables import FakeIptables
from tests.harness.wait import wait_for


def service(name: str = "web", ip: str = "10.43.0.20") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"type": "ClusterIP", "clusterIP": ip, "ports": [{"port": 80}]},
    }


def endpoints(ips: list[str], name: str = "web") -> dict[str, Any]:
    """The Service's EndpointSlice (what the proxy reads) with these ready addresses."""
    return endpoint_slice(name, ips)


@pytest.fixture
def api() -> FakeApiClient:
    return FakeApiClient()


@pytest.fixture
def ipt() -> FakeIptables:
    return FakeIptables()


@pytest.fixture
def proxy(api: FakeApiClient, ipt: FakeIptables) -> Iterator[ServiceProxy]:
    p = ServiceProxy(api, "n1", ProxySettings(min_sync_interval=0.05), iptables=ipt)
    p.start()
    yield p
    p.stop()


def test_first_sync_and_endpoint_changes_reach_iptables(
    api: FakeApiClient, ipt: FakeIptables, proxy: ServiceProxy
) -> None:
    wait_for(proxy.has_synced, message="first sync")
    assert ipt.sysctls == {"net/ipv4/conf/all/route_localnet": "1"}
    api.create("Service", service())
    api.create("EndpointSlice", endpoints(["10.244.1.2"]))
    wait_for(lambda: "10.244.1.2:8080" in ipt.restores[-1], message="rule for the endpoint")
    api.update("EndpointSlice", endpoints(["10.244.1.3"]))
    wait_for(lambda: "10.244.1.3:8080" in ipt.restores[-1], message="rule for the new endpoint")
    assert "10.244.1.2:8080" not in ipt.restores[-1]
    api.delete("Service", "web", "default")
    wait_for(lambda: "10.244.1.3" not in ipt.restores[-1], message="rules of the deleted service")


def test_a_burst_of_changes_is_debounced(api: FakeApiClient, ipt: FakeIptables) -> None:
    p = ServiceProxy(api, "n1", ProxySettings(min_sync_interval=0.5), iptables=ipt)
    api.create("Service", service())
    api.create("EndpointSlice", endpoints(["10.244.1.1"]))
    p.start()
    try:
        wait_for(p.has_synced)
        before = len(ipt.restores)
        for i in range(2, 30):
            api.update("EndpointSlice", endpoints([f"10.244.1.{i}"]))
        wait_for(lambda: "10.244.1.29:8080" in ipt.restores[-1], message="last change applied")
        assert len(ipt.restores) - before <= 2
    finally:
        p.stop()


def test_failed_restore_is_retried(api: FakeApiClient, ipt: FakeIptables) -> None:
    ipt.fail_restores = 1
    p = ServiceProxy(
        api, "n1", ProxySettings(min_sync_interval=0.0, retry_interval=0.05), iptables=ipt
    )
    p.start()
    try:
        wait_for(p.has_synced, message="sync after a retry")
        assert p.last_error is None
    finally:
        p.stop()


def test_stop_cleans_up_our_chains(api: FakeApiClient, ipt: FakeIptables) -> None:
    p = ServiceProxy(api, "n1", ProxySettings(min_sync_interval=0.0), iptables=ipt)
    p.start()
    wait_for(p.has_synced)
    ipt.tables["nat"] = (
        "*nat\n:PREROUTING ACCEPT [0:0]\n:SKIFF-SERVICES - [0:0]\n"
        '-A PREROUTING -m comment --comment "skiff service portals" -j SKIFF-SERVICES\nCOMMIT\n'
    )
    p.stop()
    assert "-X SKIFF-SERVICES" in ipt.restores[-1]
    assert "-D PREROUTING" in ipt.restores[-1]


def test_a_prefixed_proxy_syncs_and_cleans_up_only_its_own_chains(
    api: FakeApiClient, ipt: FakeIptables
) -> None:
    """A second agent on the host (skiff up --data-dir): SKIFFab12c-* chains;
    the default agent's SKIFF-* chains and jumps are never named."""
    ipt.tables["nat"] = (
        "*nat\n:PREROUTING ACCEPT [0:0]\n:SKIFF-SERVICES - [0:0]\n:SKIFF-SVC-X - [0:0]\n"
        '-A PREROUTING -m comment --comment "skiff service portals" -j SKIFF-SERVICES\nCOMMIT\n'
    )
    settings = ProxySettings(min_sync_interval=0.0, chain_prefix="SKIFFab12c")
    p = ServiceProxy(api, "n1", settings, iptables=ipt)
    p.start()
    api.create("Service", service())
    api.create("EndpointSlice", endpoints(["10.244.1.2"]))
    wait_for(lambda: ipt.restores and "10.244.1.2:8080" in ipt.restores[-1], message="rules")
    assert "-j SKIFFab12c-SERVICES" in ipt.restores[0]
    ipt.tables["nat"] += (
        "*nat\n:SKIFFab12c-SERVICES - [0:0]\n"
        '-A PREROUTING -m comment --comment "skiff service portals" -j SKIFFab12c-SERVICES\n'
        "COMMIT\n"
    )
    p.stop()
    for text in ipt.restores:
        assert "SKIFF-" not in text, text
    assert "-X SKIFFab12c-SERVICES" in ipt.restores[-1]
    assert "-D PREROUTING" in ipt.restores[-1]


def test_shared_factory_is_not_shut_down_by_the_proxy(
    api: FakeApiClient, ipt: FakeIptables
) -> None:
    factory = SharedInformerFactory(api)
    pods = factory.informer_for("Pod")
    p = ServiceProxy(api, "n1", ProxySettings(), informers=factory, iptables=ipt)
    p.start()
    wait_for(p.has_synced)
    p.stop(cleanup_rules=False)
    assert pods.started() and not pods.reflector.stopped()
    factory.shutdown()


def test_udp_conntrack_entries_of_removed_endpoints_are_deleted(
    api: FakeApiClient, ipt: FakeIptables, proxy: ServiceProxy
) -> None:
    svc = service("dns", "10.43.0.53")
    svc["spec"]["ports"] = [{"port": 53, "protocol": "UDP"}]
    eps = endpoints(["10.244.1.2", "10.244.1.3"], "dns")
    eps["ports"] = [{"port": 53, "protocol": "UDP"}]
    api.create("Service", svc)
    api.create("EndpointSlice", eps)
    wait_for(lambda: "10.244.1.3:53" in ipt.restores[-1], message="UDP rules")
    eps["endpoints"] = eps["endpoints"][1:]
    api.update("EndpointSlice", eps)
    wait_for(
        lambda: (
            ("-p", "udp", "--orig-dst", "10.43.0.53", "--dst-nat", "10.244.1.2")
            in ipt.conntrack_deletes
        ),
        message="conntrack -D of the removed endpoint",
    )


def test_only_full_syncs_read_the_tables_back(api: FakeApiClient, ipt: FakeIptables) -> None:
    p = ServiceProxy(api, "n1", ProxySettings(min_sync_interval=0.0), iptables=ipt)
    api.create("Service", service())
    api.create("EndpointSlice", endpoints(["10.244.1.1"]))
    p.start()
    try:
        wait_for(p.has_synced)
        saves = ipt.saves
        assert saves == 2  # the first sync is a full one (filter + nat)
        api.update("EndpointSlice", endpoints(["10.244.1.2"]))
        wait_for(lambda: "10.244.1.2:8080" in ipt.restores[-1], message="incremental sync")
        assert ipt.saves == saves
        assert "*filter" not in ipt.restores[-1]
        p.sync(full=True)
        assert ipt.saves == saves + 2 and "*filter" in ipt.restores[-1]
        # A failed restore makes the next sync a full one.
        ipt.fail_restores = 1
        api.update("EndpointSlice", endpoints(["10.244.1.3"]))
        wait_for(lambda: "10.244.1.3:8080" in ipt.restores[-1], message="retried sync")
        assert "*filter" in ipt.restores[-1]
    finally:
        p.stop()
