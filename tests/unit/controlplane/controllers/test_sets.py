"""StatefulSet and DaemonSet controllers on the in-memory API."""

from __future__ import annotations

from typing import Any

from controlplane.controllers.daemonset import node_eligible
from controlplane.controllers.statefulset import REVISION_LABEL


def statefulset(replicas: int = 3, policy: str = "OrderedReady", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "db:1"}]},
            },
        },
    }
    body["spec"].update(spec)
    return body


def names(e: Any) -> list[str]:
    return sorted(p["metadata"]["name"] for p in e.pods())


def test_ordered_ready_creates_one_at_a_time(env):
    e = env("statefulset")
    e.client.create("StatefulSet", statefulset())
    e.wait(lambda: names(e) == ["db-0"])
    e.wait(e.idle)
    assert names(e) == ["db-0"]  # db-1 waits for db-0 to be Running and Ready
    pod0 = e.client.get("Pod", "db-0")
    assert pod0["spec"]["hostname"] == "db-0" and pod0["spec"]["subdomain"] == "db"
    e.make_ready()
    e.wait(lambda: names(e) == ["db-0", "db-1"])
    e.make_ready()
    e.wait(lambda: names(e) == ["db-0", "db-1", "db-2"])
    e.make_ready()
    e.wait(lambda: e.client.get("StatefulSet", "db").get("status", {}).get("readyReplicas") == 3)
    # scale down: highest ordinal first, one at a time
    e.client.patch("StatefulSet", "db", {"spec": {"replicas": 1}})
    e.wait(lambda: names(e) == ["db-0"])


def test_parallel_and_rolling_update_with_partition(env):
    e = env("statefulset")
    e.client.create(
        "StatefulSet",
        statefulset(
            policy="Parallel",
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}},
        ),
    )
    e.wait(lambda: names(e) == ["db-0", "db-1", "db-2"])
    e.make_ready()
    old_rev = e.client.get("Pod", "db-0")["metadata"]["labels"][REVISION_LABEL]
    e.client.patch(
        "StatefulSet",
        "db",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "db:2"}]}}}},
    )

    def updated() -> bool:
        e.tick(0.05)  # lets retries after a Conflict fire
        e.make_ready()
        pods = {p["metadata"]["name"]: p for p in e.pods()}
        return len(pods) == 3 and all(
            pods[n]["spec"]["containers"][0]["image"] == "db:2" for n in ("db-1", "db-2")
        )

    e.wait(updated, timeout=20)
    pods = {p["metadata"]["name"]: p for p in e.pods()}
    assert pods["db-0"]["metadata"]["labels"][REVISION_LABEL] == old_rev  # below the partition
    assert pods["db-2"]["spec"]["containers"][0]["image"] == "db:2"
    assert pods["db-1"]["spec"]["containers"][0]["image"] == "db:2"


def test_failed_pod_is_recreated_with_same_name(env):
    e = env("statefulset")
    e.client.create("StatefulSet", statefulset(replicas=1))
    e.wait(lambda: names(e) == ["db-0"])
    uid = e.client.get("Pod", "db-0")["metadata"]["uid"]
    e.set_pod_status(e.client.get("Pod", "db-0"), phase="Failed", ready=False)
    e.wait(lambda: names(e) == ["db-0"] and e.client.get("Pod", "db-0")["metadata"]["uid"] != uid)


def node(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
    }


def daemonset(**pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "agent:1"}]}
    spec.update(pod_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": spec},
        },
    }


def pinned_node(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    return str(terms[0]["matchFields"][0]["values"][0])


def test_node_eligibility():
    assert node_eligible({}, node("a"))
    assert not node_eligible({"nodeSelector": {"disk": "ssd"}}, node("a"))
    assert node_eligible({"nodeSelector": {"disk": "ssd"}}, node("a", {"disk": "ssd"}))
    assert not node_eligible({}, node("a", taints=[{"key": "dedicated", "effect": "NoSchedule"}]))
    assert node_eligible(
        {}, node("a", taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])
    )
    assert node_eligible(
        {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
        node("a", taints=[{"key": "dedicated", "effect": "NoSchedule"}]),
    )
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}
                ]
            }
        }
    }
    assert node_eligible({"affinity": affinity}, node("a", {"zone": "z1"}))
    assert not node_eligible({"affinity": affinity}, node("a", {"zone": "z2"}))


def test_daemonset_one_pod_per_eligible_node(env):
    e = env("daemonset")
    for n, labels in (("a", {"role": "w"}), ("b", {"role": "w"}), ("c", {"role": "db"})):
        e.client.create("Node", node(n, labels))
    e.client.create("DaemonSet", daemonset(nodeSelector={"role": "w"}))
    e.wait(lambda: sorted(pinned_node(p) for p in e.pods()) == ["a", "b"])
    e.client.create("Node", node("d", {"role": "w"}))
    e.wait(lambda: sorted(pinned_node(p) for p in e.pods()) == ["a", "b", "d"])
    e.client.patch("Node", "a", {"metadata": {"labels": {"role": "db"}}})
    e.wait(lambda: sorted(pinned_node(p) for p in e.pods()) == ["b", "d"])
    st = e.client.get("DaemonSet", "agent")
    e.wait(
        lambda: (
            e.client.get("DaemonSet", "agent").get("status", {}).get("desiredNumberScheduled") == 2
        )
    )
    assert st["metadata"]["name"] == "agent"


def test_daemonset_rolling_update(env):
    e = env("daemonset")
    for n in ("a", "b", "c"):
        e.client.create("Node", node(n))
    e.client.create("DaemonSet", daemonset())
    e.wait(lambda: len(e.pods()) == 3)
    e.make_ready()
    e.client.patch(
        "DaemonSet",
        "agent",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}},
    )

    def updated() -> bool:
        e.tick(0.05)  # lets retries after a Conflict fire
        e.make_ready()
        pods = e.pods()
        return len(pods) == 3 and all(
            p["spec"]["containers"][0]["image"] == "agent:2" for p in pods
        )

    e.wait(updated, timeout=20)
    pods = e.pods()
    assert len(pods) == 3 and all(p["spec"]["containers"][0]["image"] == "agent:2" for p in pods)
    assert sorted(pinned_node(p) for p in pods) == ["a", "b", "c"]
