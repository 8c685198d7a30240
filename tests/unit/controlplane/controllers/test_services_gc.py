"""Endpoints, garbage collector and namespace controllers on the in-memory API."""

from __future__ import annotations

from typing import Any

from controlplane.client.interface import DeleteOptions
from controlplane.controllers.endpoints import endpoints_subsets

from .conftest import replicaset


def service(
    name: str = "web", selector: dict[str, str] | None = None, target: Any = 8080
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "labels": {"svc": name}},
        "spec": {
            "selector": selector if selector is not None else {"app": "rs"},
            "ports": [{"name": "http", "port": 80, "targetPort": target, "protocol": "TCP"}],
        },
    }


def pod(
    name: str,
    labels: dict[str, str],
    ip: str,
    ready: bool,
    port_name: str = "web",
    port: int = 8080,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "c", "ports": [{"name": port_name, "containerPort": port}]}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_endpoints_subsets_pure():
    pods = [pod("a", {}, "10.0.0.1", True), pod("b", {}, "10.0.0.2", False), pod("c", {}, "", True)]
    subsets = endpoints_subsets(service(), pods)
    assert subsets == [
        {
            "addresses": [
                {
                    "ip": "10.0.0.1",
                    "nodeName": "n1",
                    "targetRef": {
                        "kind": "Pod",
                        "name": "a",
                        "namespace": "default",
                        "uid": "uid-a",
                    },
                }
            ],
            "notReadyAddresses": [
                {
                    "ip": "10.0.0.2",
                    "nodeName": "n1",
                    "targetRef": {
                        "kind": "Pod",
                        "name": "b",
                        "namespace": "default",
                        "uid": "uid-b",
                    },
                }
            ],
            "ports": [{"port": 8080, "protocol": "TCP", "name": "http"}],
        }
    ]
    # a named targetPort resolves per pod; different numbers make different subsets
    pods = [pod("a", {}, "10.0.0.1", True, port=8080), pod("b", {}, "10.0.0.2", True, port=9090)]
    subsets = endpoints_subsets(service(target="web"), pods)
    assert sorted(s["ports"][0]["port"] for s in subsets) == [8080, 9090]


def test_endpoints_name_pods_whose_subdomain_is_the_service():
    """`<hostname>.<svc>` resolves only if the address carries the hostname:
    set for a pod whose subdomain names this Service, not for another."""
    mine, other, bare = (pod(n, {}, f"10.0.0.{i}", True) for i, n in enumerate("abc", 1))
    mine["spec"].update(hostname="job-a-0", subdomain="web")
    other["spec"].update(hostname="job-b-0", subdomain="elsewhere")
    bare["spec"]["subdomain"] = "web"
    addresses = endpoints_subsets(service(), [mine, other, bare])[0]["addresses"]
    assert [a.get("hostname") for a in addresses] == ["job-a-0", None, None]


def test_endpoints_follow_pods(env):
    e = env("endpoint,replicaset")
    e.client.create("Service", service())
    e.client.create("ReplicaSet", replicaset(replicas=2))
    e.wait(lambda: len(e.pods()) == 2)
    e.wait(lambda: e.client.objects("Endpoints"))
    e.make_ready(limit=1, node=e.ready_node())

    def addresses():
        ep = e.client.get("Endpoints", "web")
        ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("addresses", [])]
        not_ready = [a["ip"] for s in ep.get("subsets", []) for a in s.get("notReadyAddresses", [])]
        return ready, not_ready

    e.wait(lambda: len(addresses()[0]) == 1)
    e.make_ready(node=e.ready_node())
    e.wait(lambda: len(addresses()[0]) == 2 and not addresses()[1])
    assert e.client.get("Endpoints", "web")["metadata"]["labels"] == {"svc": "web"}
    e.client.delete("Service", "web")
    e.wait(lambda: not e.client.objects("Endpoints"))


def test_gc_background_cascade(env):
    e = env("replicaset,garbagecollector")
    e.client.create("ReplicaSet", replicaset(replicas=3))
    e.wait(lambda: len(e.pods()) == 3)
    e.client.delete("ReplicaSet", "rs", options=DeleteOptions(propagation_policy="Background"))
    e.wait(lambda: not e.pods(alive=False))


def test_gc_foreground_deletes_dependents_first(env):
    e = env("replicaset,garbagecollector")
    e.client.create("ReplicaSet", replicaset(replicas=2))
    e.wait(lambda: len(e.pods()) == 2)
    e.wait(lambda: all(e.cached("Pod", p["metadata"]["name"]) for p in e.pods()))
    e.client.delete("ReplicaSet", "rs", options=DeleteOptions(propagation_policy="Foreground"))
    # the owner waits with the foregroundDeletion finalizer until its pods are gone
    assert "foregroundDeletion" in e.client.get("ReplicaSet", "rs")["metadata"]["finalizers"]
    e.wait(lambda: not e.pods(alive=False))
    e.wait(lambda: not e.client.objects("ReplicaSet"))


def test_gc_orphan_keeps_dependents(env):
    e = env("replicaset,garbagecollector")
    e.client.create("ReplicaSet", replicaset(replicas=2))
    e.wait(lambda: len(e.pods()) == 2)
    e.wait(lambda: all(e.cached("Pod", p["metadata"]["name"]) for p in e.pods()))
    # the API server adds the `orphan` finalizer for propagationPolicy=Orphan
    e.client.patch("ReplicaSet", "rs", {"metadata": {"finalizers": ["orphan"]}})
    e.client.delete("ReplicaSet", "rs", options=DeleteOptions(propagation_policy="Orphan"))
    e.wait(lambda: not e.client.objects("ReplicaSet"))
    pods = e.pods()
    assert len(pods) == 2 and all(not p["metadata"].get("ownerReferences") for p in pods)


def test_gc_never_deletes_with_live_owner_and_drops_dangling_refs(env):
    e = env("garbagecollector")
    cm = e.client.create(
        "ConfigMap",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "owner", "namespace": "default"},
        },
    )
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": cm["metadata"]["uid"]},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "nope"},
    ]
    e.client.create(
        "Secret",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "dep", "namespace": "default", "ownerReferences": refs},
        },
    )
    e.wait(lambda: len(e.client.get("Secret", "dep")["metadata"]["ownerReferences"]) == 1)
    # the owner goes: the dependent follows
    e.client.delete("ConfigMap", "owner")
    e.wait(lambda: not e.client.objects("Secret"))


def test_namespace_controller_empties_then_releases(env):
    e = env("namespace")
    e.client.create(
        "Namespace",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            # metadata finalizer "hold" stands in for the API server keeping a
            # namespace with spec.finalizers (the fake only honours metadata ones)
            "metadata": {"name": "doomed", "finalizers": ["hold"]},
            "spec": {"finalizers": ["kubernetes"]},
        },
    )
    for name in ("a", "b"):
        e.client.create(
            "ConfigMap",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "doomed"},
            },
        )
    e.client.create(
        "ConfigMap",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "keep", "namespace": "default"},
        },
    )
    e.client.delete("Namespace", "doomed")
    e.settle(lambda: not e.client.objects("ConfigMap", "doomed"), step=1.0)
    e.settle(lambda: e.client.get("Namespace", "doomed")["spec"]["finalizers"] == [], step=1.0)
    assert e.client.get("Namespace", "doomed")["status"]["phase"] == "Terminating"
    assert [c["metadata"]["name"] for c in e.client.objects("ConfigMap", "default")] == ["keep"]


def test_gc_releases_a_queue_deleted_in_the_foreground(env):
    """As Kubernetes' collector, which monitors every deletable resource: a
    Queue (a kind the collector once did not list) deleted with
    propagationPolicy Foreground loses the finalizer once it has no
    dependents, and goes; so does a kind of no built-in list at all."""
    e = env("garbagecollector")
    e.client.create("Queue", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                              "metadata": {"name": "q"}, "spec": {"weight": 1}})  # fmt: skip
    e.client.delete("Queue", "q", options=DeleteOptions(propagation_policy="Foreground"))
    assert "foregroundDeletion" in e.client.get("Queue", "q")["metadata"]["finalizers"]
    e.wait(lambda: not e.client.objects("Queue"))
    e.client.create("ClusterRole", {"metadata": {"name": "r"}, "rules": []})
    e.client.delete("ClusterRole", "r", options=DeleteOptions(propagation_policy="Foreground"))
    e.wait(lambda: not [r for r in e.client.objects("ClusterRole") if r["metadata"]["name"] == "r"])


def test_endpoints_publish_only_ips_the_pods_node_could_have_given() -> None:
    """A node writes its pods' status: a mirror pod claiming another pod's or
    any host's IP would otherwise take a Service's traffic (issue 32)."""
    node = {"metadata": {"name": "n1"}, "spec": {"podCIDR": "10.244.0.0/24"},
            "status": {"addresses": [{"type": "InternalIP", "address": "192.168.1.5"}]}}  # fmt: skip
    nodes = {"n1": node}
    inside = pod("inside", {"app": "rs"}, "10.244.0.7", True)
    outside = pod("outside", {"app": "rs"}, "10.244.9.7", True)  # another node's range
    host = pod("host", {"app": "rs"}, "192.168.1.5", True)
    host["spec"]["hostNetwork"] = True
    hijack = pod("hijack", {"app": "rs"}, "8.8.8.8", True)
    hijack["spec"]["hostNetwork"] = True
    lost = pod("lost", {"app": "rs"}, "10.244.0.8", True)
    lost["spec"]["nodeName"] = "gone"
    subsets = endpoints_subsets(service(), [inside, outside, host, hijack, lost], nodes.get)
    ips = sorted(a["ip"] for s in subsets for a in s.get("addresses", []))
    assert ips == ["10.244.0.7", "192.168.1.5"]
