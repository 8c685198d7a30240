"""ResourceQuota admission under parallel creates, through the API server's
gRPC front door on SQLite and etcd: the last unit is taken once, a name
asked for twice at once is stored and charged once, CreateMany is charged
too, and status.used ends equal to what is stored."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controlplane.api.quantity import parse_quantity
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.errors import AlreadyExists, Forbidden
from tests.harness.apiserver import Cluster

NS = "quota-race"


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip


def set_hard(api: GrpcApiClient, pods: int) -> None:
    """The quota's status as the controller writes it (no controller runs here)."""
    q = api.get("ResourceQuota", "q", NS)
    used = (q.get("status") or {}).get("used") or {"pods": "0"}
    q["status"] = {"hard": {"pods": str(pods)}, "used": used}
    api.update_status("ResourceQuota", q)


def used_pods(api: GrpcApiClient) -> int:
    return int(parse_quantity(api.get("ResourceQuota", "q", NS)["status"]["used"]["pods"]))


def in_parallel(
    cluster: Cluster, n: int, call: Callable[[GrpcApiClient, int], object]
) -> list[object]:
    """call(client, i) for i in 0..n-1 from n threads released together, each
    with its own connection; each one's result or error."""
    clients = [cluster.client() for _ in range(n)]
    start = threading.Barrier(n)
    outcomes: list[object] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            outcomes[i] = call(clients[i], i)
        except Exception as err:
            outcomes[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in clients:
        c.close()
    assert not any(t.is_alive() for t in threads)
    return outcomes


def test_parallel_creates_take_the_last_unit_once(cluster: Cluster, client: GrpcApiClient) -> None:
    client.create("Namespace", {"metadata": {"name": NS}})
    client.create("ResourceQuota", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "5"}}}, NS)
    set_hard(client, 5)
    outcomes = in_parallel(cluster, 16, lambda api, i: api.create("Pod", pod(f"p{i}"), NS))
    made = [o for o in outcomes if isinstance(o, dict)]
    refused = [o for o in outcomes if isinstance(o, Forbidden)]
    assert (len(made), len(refused)) == (5, 11), outcomes
    assert all("exceeded quota: q, requested: pods=1, used: pods=5, limited: pods=5" in str(o)
               for o in refused)  # fmt: skip
    assert len(client.list("Pod", NS).items) == 5
    assert used_pods(client) == 5

    # One name asked for from many connections at once: stored and charged once.
    set_hard(client, 20)
    outcomes = in_parallel(cluster, 8, lambda api, i: api.create("Pod", pod("same"), NS))
    assert sum(isinstance(o, dict) for o in outcomes) == 1, outcomes
    assert sum(isinstance(o, AlreadyExists) for o in outcomes) == 7, outcomes
    assert used_pods(client) == 6

    # CreateMany is charged per object as well; past the limit it is refused.
    results = client.create_many([("Pod", pod(f"m{i}"), NS) for i in range(16)])
    assert sum(isinstance(r, dict) for r in results) == 14, results
    assert sum(isinstance(r, Forbidden) for r in results) == 2, results
    assert used_pods(client) == 20 == len(client.list("Pod", NS).items)


def test_creates_no_quota_limits_go_with_the_charged_ones(
    cluster: Cluster, client: GrpcApiClient
) -> None:
    """ConfigMaps created at once with pods in a namespace whose quota limits
    only pods: while charges are under way a create joins them (on etcd
    without reading the quotas itself), and one that no quota limits is
    stored uncharged all the same."""
    client.create("Namespace", {"metadata": {"name": NS}})
    client.create("ResourceQuota", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "6"}}}, NS)
    set_hard(client, 6)

    def make(api: GrpcApiClient, i: int) -> object:
        if i % 2:
            return api.create("ConfigMap", {"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}},
                              NS)  # fmt: skip
        return api.create("Pod", pod(f"p{i}"), NS)

    outcomes = in_parallel(cluster, 20, make)
    assert not [o for i, o in enumerate(outcomes) if i % 2 and not isinstance(o, dict)], outcomes
    pods = [o for i, o in enumerate(outcomes) if not i % 2]
    assert sum(isinstance(o, dict) for o in pods) == 6, outcomes
    assert all("exceeded quota: q" in str(o) for o in pods if not isinstance(o, dict))
    assert len(client.list("ConfigMap", NS).items) >= 10  # and the namespace's own root CA
    assert used_pods(client) == 6 == len(client.list("Pod", NS).items)
