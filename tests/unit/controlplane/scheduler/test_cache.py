"""The cache: assumed pods, confirmation, expiry, node removal, arrays in step."""

from __future__ import annotations

from controlplane.scheduler.cache import CPU_COL, PODS_COL, Cache
from controlplane.scheduler.podinfo import PodInfo
from machinery.clock import FakeClock
from tests.fakes.scheduler_objects import make_node, make_pod


def test_assume_forget_confirm() -> None:
    clock = FakeClock()
    cache = Cache(clock, assumed_ttl=30)
    cache.add_node(make_node("n", cpu="2"))
    slot = cache.nodes["n"].slot
    p = PodInfo.of(make_pod("p", cpu="500m"))
    cache.assume_pod(p, "n")
    assert cache.req[slot, CPU_COL] == 500 and cache.req[slot, PODS_COL] == 1
    cache.forget_pod(p.key)
    assert cache.req[slot, CPU_COL] == 0 and cache.node_of(p.key) is None
    cache.assume_pod(p, "n")
    cache.finish_binding(p.key)
    bound = PodInfo.of(make_pod("p", cpu="500m", node_name="n"))
    cache.add_pod(bound)  # the informer confirms: counted once
    assert not cache.is_assumed(p.key)
    assert cache.req[slot, CPU_COL] == 500 and cache.req[slot, PODS_COL] == 1
    clock.step(100)
    assert cache.cleanup_expired() == []


def test_assumed_pod_expires_after_binding() -> None:
    clock = FakeClock()
    cache = Cache(clock, assumed_ttl=30)
    cache.add_node(make_node("n"))
    p = PodInfo.of(make_pod("p", cpu="1"))
    cache.assume_pod(p, "n")
    clock.step(100)
    assert cache.cleanup_expired() == []  # binding not finished: never expires
    cache.finish_binding(p.key)
    clock.step(29)
    assert cache.cleanup_expired() == []
    clock.step(2)
    assert cache.cleanup_expired() == [p.key]
    assert cache.req[cache.nodes["n"].slot, CPU_COL] == 0


def test_pods_before_their_node_and_node_removal() -> None:
    cache = Cache(FakeClock())
    cache.add_pod(PodInfo.of(make_pod("early", cpu="1", node_name="later")))
    cache.add_node(make_node("later"))
    slot = cache.nodes["later"].slot
    assert cache.req[slot, CPU_COL] == 1000
    cache.remove_node("later")
    assert not cache.valid[slot] and cache.node_count() == 0
    cache.add_node(make_node("other"))
    assert cache.nodes["other"].slot == slot  # slot reused, clean
    assert cache.req[slot, CPU_COL] == 0
    assert cache.remove_pod("default/early") is not None


def test_node_update_rewrites_labels_and_taints() -> None:
    cache = Cache(FakeClock())
    cache.add_node(
        make_node("n", labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    )
    slot = cache.nodes["n"].slot
    cache.update_node(make_node("n", labels={"disk": "ssd"}))
    assert cache.codes("zone")[slot] == -1
    assert cache.codes("disk")[slot] == cache.label_code("disk", "ssd")
    assert not cache.taint_mat[slot].any()


def test_grows_beyond_initial_capacity() -> None:
    cache = Cache(FakeClock(), capacity=2)
    for i in range(10):
        cache.add_node(make_node(f"n{i}", labels={"zone": f"z{i % 2}"}))
        cache.add_pod(
            PodInfo.of(make_pod(f"p{i}", cpu="1", labels={"app": "x"}, node_name=f"n{i}"))
        )
    assert cache.node_count() == 10
    assert int(cache.req[: cache.n, CPU_COL].sum()) == 10000
    counts = cache.count_matching("app=x", lambda ns, labels: labels.get("app") == "x")
    assert counts.tolist() == [1] * 10


def test_signatures_ignore_labels_no_selector_looks_at() -> None:
    from controlplane.scheduler.podinfo import AffinityTerm, label_selector

    cache = Cache(FakeClock())
    for i in range(3):
        cache.add_node(make_node(f"n{i}"))
    for i in range(30):
        labels = {"app": "db" if i % 2 else "web", "statefulset.kubernetes.io/pod-name": f"web-{i}"}
        cache.add_pod(PodInfo.of(make_pod(f"p{i}", labels=labels, node_name=f"n{i % 3}")))
    web = AffinityTerm(
        label_selector({"matchLabels": {"app": "web"}}), frozenset(["default"]), "zone"
    )
    assert cache.count_term(web).tolist() == [5, 5, 5]
    assert len(cache.sig_list) == 2  # unique pod names do not make 30 columns
    # A selector on a new key rebuilds the signatures; counts stay right.
    one = AffinityTerm(
        label_selector({"matchLabels": {"statefulset.kubernetes.io/pod-name": "web-4"}}),
        frozenset(["default"]),
        "zone",
    )
    assert cache.count_term(one).tolist() == [0, 1, 0]
    assert cache.count_term(web).tolist() == [5, 5, 5]
    cache.remove_pod("default/p4")
    assert cache.count_term(one).tolist() == [0, 0, 0]
    assert cache.count_term(web).tolist() == [5, 4, 5]


def test_a_finished_pod_is_not_counted_however_it_arrives() -> None:
    cache = Cache(FakeClock())
    cache.add_node(make_node("n", cpu="4"))
    slot = cache.nodes["n"].slot

    def pod(name: str, phase: str) -> PodInfo:
        obj = make_pod(name, cpu="1", node_name="n")
        obj["status"] = {"phase": phase}
        return PodInfo.of(obj)

    running = pod("a", "Running")
    cache.add_pod(running)
    assert not cache.refresh_pod(running.key, pod("a", "Succeeded").pod)  # the long way, then:
    cache.update_pod(pod("a", "Succeeded"))
    cache.add_pod(pod("b", "Failed"))  # first seen finished
    assumed = pod("c", "Pending")
    cache.assume_pod(assumed, "n")
    cache.confirm_pod(pod("c", "Succeeded"))  # bound and done before its event came
    assert cache.req[slot, CPU_COL] == 0 and cache.req[slot, PODS_COL] == 0
    assert not cache.is_assumed(assumed.key) and cache.node_of("default/a") is None
