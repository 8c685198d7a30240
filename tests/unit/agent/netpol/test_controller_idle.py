"""NetworkPolicy enforcement costs a node nothing while no policy exists: no
hook on the packet path, no watch of every pod and namespace; the first
policy brings both, never a table planned from caches not yet filled.
The kernel is a stand-in here (tests/linux/proxy/test_netpol_netns.py
runs the real one)."""

from __future__ import annotations

from typing import Any

from agent.netpol.controller import NetpolSettings, NetworkPolicyController
from tests.fakes.fake_apiclient import FakeApiClient
from tests.fakes.nft import FakeNft
from tests.harness.wait import wait_for


def pod(name: str, ip: str, node: str = "n1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"phase": "Running", "podIP": ip}}  # fmt: skip


def deny(name: str = "deny") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}}}}  # fmt: skip


def hooked(text: str) -> bool:
    return "hook forward" in text


def watched(api: FakeApiClient, kind: str) -> bool:
    return bool(api.calls_of("list", kind) or api.calls_of("watch", kind))


def enforcer(api: FakeApiClient, nft: FakeNft) -> NetworkPolicyController:
    settings = NetpolSettings(min_sync_interval=0.0, prepare_bridge=False)
    ctl = NetworkPolicyController(api, "n1", settings, nft=nft)
    ctl.start()
    return ctl


def synced_past(ctl: NetworkPolicyController, n: int) -> None:
    wait_for(lambda: ctl.syncs > n and ctl.last_error is None, message="netpol sync")


def test_no_policy_no_hook_and_no_watch_of_every_pod() -> None:
    api, nft = FakeApiClient(), FakeNft()
    api.create("Pod", pod("web", "10.244.1.2"), "default")
    ctl = enforcer(api, nft)
    try:
        synced_past(ctl, 0)
        assert nft.applied and not any(hooked(t) for t in nft.applied)
        assert not watched(api, "Pod") and not watched(api, "Namespace")
        assert ctl.pods is None

        n = ctl.syncs
        api.create("NetworkPolicy", deny(), "default")
        synced_past(ctl, n)
        assert watched(api, "Pod") and watched(api, "Namespace")
        assert hooked(nft.applied[-1]) and "10.244.1.2" in nft.applied[-1]

        # The last policy gone: no hook again (the caches stay).
        n = ctl.syncs
        api.delete("NetworkPolicy", "deny", "default")
        synced_past(ctl, n)
        assert not hooked(nft.applied[-1])
    finally:
        ctl.stop()


def test_a_policy_waits_for_the_pods_never_planned_without_them() -> None:
    """An agent restarted where policies exist: the first table it writes
    already isolates the pods (an empty pod cache would open them)."""
    api, nft = FakeApiClient(), FakeNft()
    api.create("Pod", pod("web", "10.244.1.2"), "default")
    api.create("NetworkPolicy", deny(), "default")
    ctl = enforcer(api, nft)
    try:
        synced_past(ctl, 0)
        assert hooked(nft.applied[0]) and "10.244.1.2" in nft.applied[0]
    finally:
        ctl.stop()


def test_sync_called_before_the_peers_are_known_writes_nothing() -> None:
    api, nft = FakeApiClient(), FakeNft()
    api.create("Pod", pod("web", "10.244.1.2"), "default")
    ctl = NetworkPolicyController(api, "n1", NetpolSettings(prepare_bridge=False), nft=nft)
    try:
        ctl.policies.start()
        ctl.policies.wait_for_sync(5)
        api.create("NetworkPolicy", deny(), "default")
        wait_for(lambda: ctl.policies.store.list(), message="policy cached")
        ctl.sync()  # the pods are not known yet: nothing is written
        assert nft.applied == [] and ctl.syncs == 0 and ctl.pods is not None
        assert ctl.pods.wait_for_sync(5) and ctl.namespaces is not None
        assert ctl.namespaces.wait_for_sync(5)
        ctl.sync()
        assert len(nft.applied) == 1 and hooked(nft.applied[0])
    finally:
        ctl.stop()
        ctl.factory.shutdown()
