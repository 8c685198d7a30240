"""The multi-node scenarios on real VMs: a control-plane VM and two node VMs
booted by vagrant/ under libvirt (TCG where KVM is unusable), inside the VM
cluster's own network namespace (tests/vm/vmcluster.py).

In order: both nodes joined; a Deployment spread over both nodes, pod to pod
across VMs; a ClusterIP service and its DNS name from a pod on every node; a
NodePort on every node from outside the cluster; a rolling update with no
unavailable replica; a node VM powered off, its pods Running on the other
node within the node-lifecycle budget; the VM powered on again, rejoining;
then the nodes switched to the VXLAN backend (re-provisioned, as a user
would), pods across VMs and a ClusterIP again, with the VXLAN MTU.
`make test-vm` runs this (marker `vm`, excluded from `make test`).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from typing import Any

import pytest

from controlplane.client.apiclient import GrpcApiClient
from tests.harness import cluster_workloads as h
from tests.harness.wait import wait_for
from tests.vm.vmcluster import VmCluster, VmError, VmNode, timed

pytestmark = [
    pytest.mark.vm,
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.timeout(5400),
]

TOLERATION = 4  # the pods' tolerationSeconds for not-ready/unreachable
TOLERATIONS = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def spread(app: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
        }
    ]


def web(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    c = h.container(h.WHOAMI, readinessProbe=h.readiness_http())
    pod_spec = {"containers": [c], "topologySpreadConstraints": spread(name)}
    pod_spec["tolerations"] = TOLERATIONS
    return h.deployment(name, replicas, h.WHOAMI, pod_spec=pod_spec, **spec)


def service(name: str, kind: str = "ClusterIP") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": kind,
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": 80, "protocol": "TCP"}],
        },
    }


def fetch_many(vm: VmCluster, client: dict[str, Any], url: str, n: int) -> list[str]:
    """GET `url` `n` times from inside `client` (busybox wget), on its node."""
    node = vm.node(client["spec"]["nodeName"])
    return node.exec_many(client["metadata"]["name"], ["wget", "-q", "-O", "-", url], n)


def retrying(fn: Any, *args: Any, timeout: float = 60, message: str = "") -> Any:
    def attempt() -> Any:
        try:
            return fn(*args)
        except VmError:
            return None

    return wait_for(attempt, timeout=timeout, interval=1, message=message)


def node_ready(api: GrpcApiClient, name: str) -> str:
    n = api.get("Node", name)
    conds = {c["type"]: c["status"] for c in (n.get("status") or {}).get("conditions") or []}
    return str(conds.get("Ready"))


def node_is_ready(api: GrpcApiClient, name: str) -> bool:
    return node_ready(api, name) == "True"


@pytest.fixture(scope="module")
def clients(vm: VmCluster, api: GrpcApiClient) -> list[dict[str, Any]]:
    """A client pod bound to each node."""
    names = []
    for n in vm.nodes:
        name = f"client-{n.name}"
        api.create("Pod", h.pod(name, h.SLEEPER, node=n.name, labels={"role": "client"}), "default")
        names.append(name)
    return [h.wait_pod_running(api, name, timeout=300) for name in names]


@pytest.fixture(scope="module")
def webpods(api: GrpcApiClient) -> list[dict[str, Any]]:
    api.create("Deployment", web("web", 4), "default")
    api.create("Service", service("web"), "default")
    return h.wait_ready_pods(api, {"app": "web"}, 4, timeout=300)


def test_nodes_joined(vm: VmCluster, api: GrpcApiClient) -> None:
    nodes = {n["metadata"]["name"]: n for n in api.list("Node").items}
    cidrs = set()
    for n in vm.nodes:
        obj = nodes[n.name]
        addrs = {a["address"] for a in obj["status"].get("addresses") or []}
        assert n.ip in addrs, addrs
        cidrs.add(obj["spec"]["podCIDR"])
    assert len(cidrs) == len(vm.nodes)


def test_pods_spread_over_both_nodes_and_reach_each_other(
    vm: VmCluster, webpods: list[dict[str, Any]], clients: list[dict[str, Any]]
) -> None:
    per_node: dict[str, int] = {}
    for p in webpods:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    assert per_node == {n.name: 2 for n in vm.nodes}
    for client in clients:
        for dst in webpods:
            url = f"http://{dst['status']['podIP']}/"
            got = retrying(fetch_many, vm, client, url, 1, message=f"{client} -> {url}")
            assert got == [dst["metadata"]["name"]]


def test_kubectl_from_the_host(vm: VmCluster, clients: list[dict[str, Any]]) -> None:
    """kubectl on the host, through the VM network's namespace, with the
    kubeconfig fetch-credentials.sh copied out: the REST API on the control
    plane's port, and `exec` into a pod on each node (the API server calls
    each agent over TLS, its serving certificate issued at join by CSR)."""
    nodes = json.loads(vm.kubectl("get", "nodes", "-o", "json"))["items"]
    ready = {
        n["metadata"]["name"]
        for n in nodes
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    }
    assert {n.name for n in vm.nodes} <= ready, ready
    for client in clients:
        name = client["metadata"]["name"]
        out = vm.kubectl("exec", name, "--", "hostname")
        assert out.strip() == name


def test_clusterip_and_dns_from_every_node(
    vm: VmCluster,
    api: GrpcApiClient,
    webpods: list[dict[str, Any]],
    clients: list[dict[str, Any]],
) -> None:
    ip = api.get("Service", "web", "default")["spec"]["clusterIP"]
    names = {p["metadata"]["name"] for p in webpods}
    for client in clients:
        node = vm.node(client["spec"]["nodeName"])
        seen = retrying(fetch_many, vm, client, f"http://{ip}/", 16, message="ClusterIP")
        assert set(seen) <= names and len(set(seen)) >= 2, seen
        by_name = retrying(
            fetch_many, vm, client, "http://web.default.svc.cluster.local/", 4, message="DNS"
        )
        assert set(by_name) <= names, by_name
        out = node.exec(client["metadata"]["name"], ["nslookup", "web.default.svc.cluster.local"])
        assert ip in out, out


def http_get_in_ns(vm: VmCluster, host: str, port: int) -> str:
    """GET / from the VM network's host side (an outside client)."""
    assert vm.sockets is not None
    with vm.sockets.connect((host, port), timeout=5) as s:
        s.settimeout(5)
        s.sendall(f"GET / HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    head, _, body = data.decode(errors="replace").partition("\r\n\r\n")
    assert head.split()[1] == "200", head
    return body.strip()


def test_nodeport_on_every_node(
    vm: VmCluster, api: GrpcApiClient, webpods: list[dict[str, Any]]
) -> None:
    svc = api.create(
        "Service",
        service("web", "NodePort") | {"metadata": {"name": "web-np", "namespace": "default"}},
        "default",
    )
    port = svc["spec"]["ports"][0]["nodePort"]
    names = {p["metadata"]["name"] for p in webpods}

    def get(host: str) -> str:
        try:
            return http_get_in_ns(vm, host, port)
        except OSError:
            return ""

    try:
        for n in vm.nodes:
            first = wait_for(functools.partial(get, n.ip), timeout=60, message=f"{n.ip}:{port}")
            assert first in names
            seen = {get(n.ip) for _ in range(16)}
            assert seen <= names and len(seen) >= 2, seen  # the other node's pods answer too
    finally:
        h.delete(api, "Service", "web-np")


def rollout_done(api: GrpcApiClient, name: str, replicas: int) -> bool:
    d = api.get("Deployment", name, "default")
    st = d.get("status") or {}
    return bool(
        st.get("observedGeneration", 0) >= d["metadata"].get("generation", 0)
        and st.get("updatedReplicas") == replicas
        and st.get("availableReplicas") == replicas
        and st.get("replicas") == replicas
    )


def test_rolling_update_no_unavailable_replica(vm: VmCluster, api: GrpcApiClient) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    api.create("Deployment", web("roll", 2, strategy=strategy), "default")
    sel = {"app": "roll"}
    stop = threading.Event()
    low: list[int] = []
    try:
        h.wait_ready_pods(api, sel, 2, timeout=300)
        wait_for(lambda: rollout_done(api, "roll", 2), timeout=120, message="roll available")

        def watch() -> None:
            with vm.client() as c:
                while not stop.is_set():
                    low.append(sum(1 for p in h.pods(c, sel) if h.is_ready(p)))
                    stop.wait(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        patch = {"spec": {"template": {"metadata": {"annotations": {"version": "2"}}}}}
        api.patch("Deployment", "roll", patch, "default")
        wait_for(lambda: rollout_done(api, "roll", 2), timeout=300, interval=0.5)
        got = h.wait_ready_pods(api, sel, 2, timeout=120)
        stop.set()
        watcher.join(10)
        assert all((p["metadata"].get("annotations") or {}).get("version") == "2" for p in got)
        assert low and min(low) >= 2, f"ready replicas fell to {min(low)} during the rollout"
    finally:
        stop.set()
        h.delete(api, "Deployment", "roll")


def test_node_powered_off_pods_run_on_the_other(
    vm: VmCluster, api: GrpcApiClient, clients: list[dict[str, Any]]
) -> None:
    """`fo`: two replicas, both on node2 (node1 cordoned while they start);
    node2's VM is powered off; after the grace period and the pods'
    toleration they are Running on node1."""
    victim, other = vm.nodes[1], vm.nodes[0]
    api.patch("Node", other.name, {"spec": {"unschedulable": True}})
    try:
        dep = web("fo", 2)
        del dep["spec"]["template"]["spec"]["topologySpreadConstraints"]
        api.create("Deployment", dep, "default")
        first = h.wait_ready_pods(api, {"app": "fo"}, 2, timeout=300)
    finally:
        api.patch("Node", other.name, {"spec": {"unschedulable": None}})
    assert {p["spec"]["nodeName"] for p in first} == {victim.name}
    lost = {p["metadata"]["name"] for p in first}
    started = time.monotonic()
    vm.virsh("destroy", vm.domain(victim.name))  # power off
    wait_for(
        lambda: node_ready(api, victim.name) != "True",
        timeout=vm.node_grace + 60,
        interval=1,
        message=f"{victim.name} NotReady",
    )
    not_ready = time.monotonic() - started

    def moved() -> list[dict[str, Any]]:
        ready = h.ready_pods(api, {"app": "fo"})
        names = {p["metadata"]["name"] for p in ready}
        return ready if len(ready) == 2 and not (names & lost) else []

    budget = vm.node_grace + TOLERATION + 90
    ready = wait_for(moved, timeout=budget, interval=1, message="fo pods on the other node")
    elapsed = time.monotonic() - started
    assert {p["spec"]["nodeName"] for p in ready} == {other.name}
    client = next(c for c in clients if c["spec"]["nodeName"] == other.name)
    for p in ready:
        url = f"http://{p['status']['podIP']}/"
        got = retrying(fetch_many, vm, client, url, 1, message=url)
        assert got == [p["metadata"]["name"]]
    print(
        f"\n[vm] {victim.name} NotReady after {not_ready:.1f} s, pods Running on "
        f"{other.name} after {elapsed:.1f} s (budget {budget} s)"
    )


def test_node_vm_back_rejoins(
    vm: VmCluster, api: GrpcApiClient, clients: list[dict[str, Any]]
) -> None:
    victim, other = vm.nodes[1], vm.nodes[0]
    if node_ready(api, victim.name) == "True":
        pytest.skip("runs after test_node_powered_off_pods_run_on_the_other")
    with timed(f"{victim.name} boot and rejoin"):
        vm.virsh("start", vm.domain(victim.name))
        wait_for(
            lambda: node_ready(api, victim.name) == "True",
            timeout=600,
            interval=2,
            message=f"{victim.name} Ready again",
        )
    wait_for(
        lambda: not (api.get("Node", victim.name).get("spec") or {}).get("taints"),
        timeout=120,
        interval=1,
        message="taints removed",
    )
    name = "back-on-node2"
    api.create("Pod", h.pod(name, h.WHOAMI, node=victim.name), "default")
    try:
        p = h.wait_pod_running(api, name, timeout=300)
        client = next(c for c in clients if c["spec"]["nodeName"] == other.name)
        url = f"http://{p['status']['podIP']}/"
        assert retrying(fetch_many, vm, client, url, 1, timeout=120, message=url) == [name]
    finally:
        h.delete(api, "Pod", name)


VXLAN_DEVICE = "skiff.1"  # the agent's default VNI 1
BIG = 1_000_000  # bytes: hundreds of full-size frames across the tunnel


def vxlan_state(vm: VmCluster, node: VmNode, peer: VmNode, peer_cidr: str) -> list[str]:
    """[underlay MTU, VXLAN device MTU, route to the peer's pod subnet] on
    `node`, or [] while the device is not there yet."""
    script = (
        f"dev=$(ip -o route get {peer.ip} | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p'); "
        f"cat /sys/class/net/$dev/mtu /sys/class/net/{VXLAN_DEVICE}/mtu 2>/dev/null "
        f"&& ip -o route show {peer_cidr}"
    )
    try:
        lines = vm.ssh(node.name, script, timeout=60).strip().splitlines()
    except VmError:
        return []
    return lines if len(lines) == 3 and VXLAN_DEVICE in lines[2] else []


def test_vxlan_backend_across_vms(vm: VmCluster, api: GrpcApiClient) -> None:
    """The nodes re-provisioned with SKIFF_CNI_BACKEND=vxlan: pod subnets now
    cross the VMs encapsulated; the VXLAN device and every new pod's link
    carry the underlay's MTU less 50; pods reach each other across VMs (also
    a response of many full-size frames) and a ClusterIP from each node."""
    with timed("switch to vxlan (node provisioner again)"):
        vm.provision_nodes(SKIFF_CNI_BACKEND="vxlan")
        for n in vm.nodes:
            ready = functools.partial(node_is_ready, api, n.name)
            wait_for(ready, timeout=300, interval=2, message=f"{n.name} Ready")
    cidrs = {n["metadata"]["name"]: n["spec"]["podCIDR"] for n in api.list("Node").items}
    mtu = 0
    for node, peer in ((vm.nodes[0], vm.nodes[1]), (vm.nodes[1], vm.nodes[0])):
        state = wait_for(
            functools.partial(vxlan_state, vm, node, peer, cidrs[peer.name]),
            timeout=120,
            interval=2,
            message=f"{node.name}: {VXLAN_DEVICE} and its route to {peer.name}'s pods",
        )
        assert int(state[1]) == int(state[0]) - 50, state
        mtu = int(state[1])

    big = h.WHOAMI[2].replace("exec", f"head -c {BIG} /dev/zero >/w/big && exec")
    serve = [*h.WHOAMI[:2], big]
    dep = web("vx", 2)
    dep["spec"]["template"]["spec"]["containers"][0]["command"] = serve
    names = [f"vxclient-{n.name}" for n in vm.nodes]
    try:
        api.create("Deployment", dep, "default")
        api.create("Service", service("vx"), "default")
        for n, name in zip(vm.nodes, names, strict=True):
            api.create("Pod", h.pod(name, h.SLEEPER, node=n.name), "default")
        clients = [h.wait_pod_running(api, name, timeout=300) for name in names]
        servers = h.wait_ready_pods(api, {"app": "vx"}, 2, timeout=300)
        assert {p["spec"]["nodeName"] for p in servers} == {n.name for n in vm.nodes}
        for client in clients:
            node = vm.node(client["spec"]["nodeName"])
            pod_mtu = node.exec(client["metadata"]["name"], ["cat", "/sys/class/net/eth0/mtu"])
            assert int(pod_mtu) == mtu, f"{node.name}: pod MTU {pod_mtu}, VXLAN {mtu}"
            for dst in servers:
                url = f"http://{dst['status']['podIP']}/"
                got = retrying(fetch_many, vm, client, url, 1, message=f"{client} -> {url}")
                assert got == [dst["metadata"]["name"]]
                if dst["spec"]["nodeName"] != node.name:
                    size = node.exec(
                        client["metadata"]["name"],
                        ["sh", "-c", f"wget -q -O - {url}big | wc -c"],
                        timeout=60,
                    )
                    assert int(size) == BIG, f"{node.name} got {size} of {BIG} bytes"
            ip = api.get("Service", "vx", "default")["spec"]["clusterIP"]
            seen = retrying(fetch_many, vm, client, f"http://{ip}/", 12, message="ClusterIP")
            assert set(seen) == {p["metadata"]["name"] for p in servers}, seen
    finally:
        for name in names:
            h.delete(api, "Pod", name)
        h.delete(api, "Service", "vx")
        h.delete(api, "Deployment", "vx")
