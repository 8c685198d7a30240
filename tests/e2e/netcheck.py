"""Issue 31's must-show checks, shared by `skiff up` (tests/e2e/agent) and the
3-node netns cluster (tests/e2e/cluster): an Ingress without a class routed
by host and path, over TLS with SNI, 404 for other hosts; a LoadBalancer
Service with addresses that answer; default-deny then allow-by-label
NetworkPolicies enforced pod to pod in both policy directions, watched
without a gap through agent restarts.

The pods run busybox (httpd answering with the pod's role, plus a prober):
`Scene` says where they run, how to exec in them, where their logs are and
how a node's agent is restarted. Probers write one line per attempt to
their stdout (`probe <ip> ok|no`), so the container log, timestamped by the
runtime, is a record of every connection tried, also while an agent is down.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import http.client
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agent.cri_client import CRIClient
from controlplane.client import errors
from controlplane.client.apiclient import GrpcApiClient
from controlplane.client.interface import DeleteOptions
from machinery.rfc3339 import parse_nano
from tests.harness.wait import wait_for

HOST = "shop.test"
Object = dict[str, Any]


@dataclass
class Scene:
    """Where the checks run: one `skiff up` node or a cluster's nodes."""

    api: GrpcApiClient
    image: str
    nodes: list[str]  # node names; pods are spread over them in order
    exec_in: Callable[[Object, list[str]], int]  # (pod, argv) -> exit code
    log_root: Callable[[str], Path]  # node name -> its --pod-log-dir
    restart_agent: Callable[[str], None]  # restart the agent of a node (kill -9, start)
    pull_policy: str = "IfNotPresent"
    cri_of: Callable[[str], CRIClient] | None = None  # node name -> its runtime
    made: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, name, ns)

    def node(self, i: int) -> str:
        return self.nodes[i % len(self.nodes)]

    def create(self, kind: str, obj: Object, namespace: str | None = None) -> Object:
        made: Object = self.api.create(kind, obj, namespace)
        self.made.append((kind, obj["metadata"]["name"], namespace or ""))
        return made

    def cleanup(self) -> None:
        for kind, name, ns in reversed(self.made):
            with contextlib.suppress(errors.ApiError):
                self.api.delete(kind, name, ns or None, DeleteOptions(grace_period_seconds=0))
        self.made.clear()


# ---- pods ------------------------------------------------------------------------------


def serve(text: str) -> str:
    """Shell that serves `text` at /, /alpha/ and /beta/index.html on :80."""
    return (
        "mkdir -p /w/alpha /w/beta && for d in /w /w/alpha /w/beta; do "
        f"echo {text} > $d/index.html; done && httpd -p 80 -h /w"
    )


def prober(targets: list[str]) -> str:
    """Shell that tries a TCP exchange with each target's :80, forever."""
    each = " ".join(targets)
    return (
        "while true; do for t in " + each + "; do "
        "if echo | timeout 2 nc $t 80 >/dev/null 2>&1; then r=ok; else r=no; fi; "
        'echo "probe $t $r"; done; usleep 300000; done'
    )


def pod(
    scene: Scene,
    name: str,
    labels: dict[str, str],
    node: str,
    script: str,
    namespace: str = "default",
) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {
                    "name": "c",
                    "image": scene.image,
                    "imagePullPolicy": scene.pull_policy,
                    "command": ["sh", "-c", f"{script}; trap 'exit 0' TERM; "
                                "while true; do sleep 1; done"],
                }
            ],
        },
    }  # fmt: skip


def running(api: GrpcApiClient, name: str, namespace: str, timeout: float = 120) -> Object:
    def ready() -> Object:
        p: Object = api.get("Pod", name, namespace)
        st = p.get("status") or {}
        return p if st.get("phase") == "Running" and st.get("podIP") else {}

    return wait_for(ready, timeout=timeout, interval=0.2, message=f"pod {namespace}/{name} Running")


def service(name: str, port: int, selector: dict[str, str], **spec: Any) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": port, "targetPort": 80, "protocol": "TCP"}],
            **spec,
        },
    }


def endpoints_ready(api: GrpcApiClient, name: str, namespace: str = "default") -> bool:
    try:
        ep = api.get("Endpoints", name, namespace)
    except errors.NotFound:
        return False
    return any(s.get("addresses") for s in ep.get("subsets") or [])


# ---- TLS ------------------------------------------------------------------------------


def self_signed(host: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) for `host`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def tls_secret(name: str, cert: bytes, key: bytes) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "default"},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()},
    }  # fmt: skip


# ---- HTTP from this process ------------------------------------------------------------


def http_get(ip: str, port: int, path: str, host: str = HOST) -> tuple[int, str]:
    conn = http.client.HTTPConnection(ip, port, timeout=5)
    try:
        conn.request("GET", path, headers={"Host": host})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace").strip()
    finally:
        conn.close()


def https_get(ip: str, port: int, path: str, sni: str) -> tuple[int, str, bytes]:
    """(status, body, the certificate served, DER) over TLS with SNI `sni`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the served certificate is compared, not verified
    raw = socket.create_connection((ip, port), timeout=5)
    with ctx.wrap_socket(raw, server_hostname=sni) as tls:
        served = tls.getpeercert(binary_form=True) or b""
        request = f"GET {path} HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n"
        tls.sendall(request.encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, body.decode(errors="replace").strip(), served


def answers(fn: Callable[[], tuple[Any, ...]], want: tuple[Any, ...]) -> Callable[[], bool]:
    """A condition for `wait_for`: `fn()` starts with `want`; an error or
    another answer is kept as the last exception, so a timeout shows it."""

    def check() -> bool:
        try:
            got = fn()[: len(want)]
        except OSError as err:
            raise AssertionError(f"no answer: {err!r}") from err
        if got != want:
            raise AssertionError(f"answered {got!r}, want {want!r}")
        return True

    return check


# ---- the checks ------------------------------------------------------------------------


def node_addresses(api: GrpcApiClient, names: list[str]) -> list[str]:
    out = []
    for name in names:
        node = api.get("Node", name)
        out += [a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP"]
    return sorted(out)


def check_ingress_and_load_balancer(
    scene: Scene, http_port: int, https_port: int, lb_port: int
) -> None:
    """Backends alpha and beta, an Ingress without a class (Prefix by port
    number, Exact by port name, TLS for shop.test), a LoadBalancer Service."""
    api = scene.api
    for i, name in enumerate(("alpha", "beta")):
        scene.create("Pod", pod(scene, name, {"app": name}, scene.node(i), serve(name)), "default")
        scene.create("Service", service(name, 80, {"app": name}), "default")
    cert, key = self_signed(HOST)
    scene.create("Secret", tls_secret("shop-tls", cert, key), "default")
    backend = {"service": {"name": "alpha", "port": {"number": 80}}}
    by_name = {"service": {"name": "beta", "port": {"name": "http"}}}
    scene.create("Ingress", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {
            "tls": [{"hosts": [HOST], "secretName": "shop-tls"}],
            "rules": [{"host": HOST, "http": {"paths": [
                {"path": "/alpha", "pathType": "Prefix", "backend": backend},
                {"path": "/beta/index.html", "pathType": "Exact", "backend": by_name},
            ]}}],
        },
    }, "default")  # fmt: skip
    scene.create("Service", service("alpha-lb", lb_port, {"app": "alpha"}, type="LoadBalancer"))
    for name in ("alpha", "beta"):
        running(api, name, "default")
        wait_for(lambda n=name: endpoints_ready(api, n), timeout=60, interval=0.2,  # type: ignore[misc]
                 message=f"endpoints of {name}")  # fmt: skip

    ing = api.get("Ingress", "shop", "default")
    assert ing["spec"]["ingressClassName"] == "skiff"  # the default class, filled in
    addresses = node_addresses(api, scene.nodes)

    def ingress_status() -> list[str]:
        got = api.get("Ingress", "shop", "default").get("status") or {}
        return sorted(i.get("ip", "") for i in (got.get("loadBalancer") or {}).get("ingress") or [])

    wait_for(lambda: ingress_status() == addresses, timeout=60, interval=0.3,
             message=f"Ingress status.loadBalancer {addresses}")  # fmt: skip
    for ip in addresses:
        # Each node's HAProxy learns the endpoints on its own schedule.
        for path, body in (("/alpha/", "alpha"), ("/beta/index.html", "beta")):
            wait_for(answers(lambda ip=ip, path=path: http_get(ip, http_port, path), (200, body)),  # type: ignore[misc]
                     timeout=60, interval=0.3, message=f"ingress {ip}:{http_port}{path}")  # fmt: skip
        assert http_get(ip, http_port, "/alpha/index.html") == (200, "alpha")
        assert http_get(ip, http_port, "/beta/other")[0] == 404  # Exact means exact
        assert http_get(ip, http_port, "/alpha/", host="other.test")[0] == 404
        status, body, served = https_get(ip, https_port, "/alpha/", HOST)
        assert (status, body) == (200, "alpha")
        ours = x509.load_pem_x509_certificate(cert).public_bytes(serialization.Encoding.DER)
        assert served == ours  # SNI chose the Secret's certificate
        status, _, served = https_get(ip, https_port, "/alpha/", "other.test")
        assert status == 404 and served != ours  # the default certificate, and no route

    def lb_status() -> list[str]:
        got = api.get("Service", "alpha-lb", "default").get("status") or {}
        return sorted(i.get("ip", "") for i in (got.get("loadBalancer") or {}).get("ingress") or [])

    wait_for(lambda: lb_status() == addresses, timeout=60, interval=0.3,
             message=f"LoadBalancer status {addresses}")  # fmt: skip
    for ip in addresses:
        wait_for(answers(lambda ip=ip: http_get(ip, lb_port, "/alpha/"), (200, "alpha")),  # type: ignore[misc]
                 timeout=60, interval=0.3, message=f"LoadBalancer on {ip}:{lb_port}")  # fmt: skip


# ---- NetworkPolicy ---------------------------------------------------------------------

NS = "netpol-e2e"


def policy(name: str, spec: Object) -> Object:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


DENY_ALL = policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
ALLOW = [
    # web accepts its clients (an ingress rule, enforced on web's node) ...
    policy("web-from-clients", {
        "podSelector": {"matchLabels": {"app": "web"}},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                     "ports": [{"port": 80}]}]}),
    # ... clients may reach web only (an egress rule, enforced on the client's node) ...
    policy("clients-to-web", {
        "podSelector": {"matchLabels": {"role": "client"}},
        "policyTypes": ["Egress"],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                    "ports": [{"port": 80, "protocol": "TCP"}]}]}),
    # ... `other` accepts anyone (so only the client's egress keeps it out) ...
    policy("other-from-all", {"podSelector": {"matchLabels": {"app": "other"}}, "ingress": [{}]}),
    # ... and the stranger may send anywhere (so only web's ingress keeps it out).
    policy("stranger-to-all", {"podSelector": {"matchLabels": {"app": "stranger"}},
                               "policyTypes": ["Egress"], "egress": [{}]}),
]  # fmt: skip


def probe_log(scene: Scene, p: Object) -> list[tuple[float, str, str]]:
    """(time, target, ok|no) of every probe line the pod wrote so far."""
    node, meta = p["spec"]["nodeName"], p["metadata"]
    out = []
    for f in sorted(scene.log_root(node).glob(f"{NS}_{meta['name']}_*/c/*.log")):
        for line in f.read_text(errors="replace").splitlines():
            stamp, _, rest = line.partition(" ")
            words = rest.split()
            if len(words) == 5 and words[2] == "probe":
                out.append((parse_nano(stamp) / 1e9, words[3], words[4]))
    return out


def results(scene: Scene, p: Object, target: str, since: float) -> list[str]:
    return [r for t, tgt, r in probe_log(scene, p) if tgt == target and t >= since]


def check_network_policies(scene: Scene) -> None:
    """See the module docstring; the agents of web's and the client's nodes
    are restarted while every probe keeps being recorded."""
    api = scene.api
    scene.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    servers = {"web": scene.node(0), "other": scene.node(2)}
    ips = {}
    for name, node in servers.items():
        scene.create("Pod", pod(scene, name, {"app": name}, node, serve(name), NS), NS)
    for name in servers:
        ips[name] = running(api, name, NS)["status"]["podIP"]
    probers = {
        "client": ({"role": "client", "app": "client"}, scene.node(1), [ips["web"], ips["other"]]),
        "stranger": ({"app": "stranger"}, scene.node(2), [ips["web"]]),
    }
    for name, (labels, node, targets) in probers.items():
        script = f"{serve(name)} && ({prober(targets)})"
        scene.create("Pod", pod(scene, name, labels, node, script, NS), NS)
    pods = {name: running(api, name, NS) for name in ("web", "other", "client", "stranger")}
    client, stranger = pods["client"], pods["stranger"]
    pairs = {"client->web": (client, ips["web"]), "client->other": (client, ips["other"]),
             "stranger->web": (stranger, ips["web"])}  # fmt: skip

    def now_all(result: str, names: list[str], since: float) -> bool:
        return all(results(scene, *pairs[n], since)[-2:] == [result] * 2 for n in names)

    start = time.time()
    wait_for(lambda: now_all("ok", list(pairs), start), timeout=90, interval=0.5,
             message="every probe answered before any policy")  # fmt: skip
    to_client = ["sh", "-c", f"echo | timeout 2 nc {client['status']['podIP']} 80"]
    assert scene.exec_in(pods["web"], to_client) == 0  # the reverse direction, open so far

    scene.create("NetworkPolicy", DENY_ALL, NS)
    denied = time.time()
    wait_for(lambda: now_all("no", list(pairs), denied), timeout=60, interval=0.5,
             message="default deny to cut every probe")  # fmt: skip
    assert scene.exec_in(pods["web"], ["sh", "-c", f"echo | timeout 2 nc {ips['other']} 80"]) != 0

    for p in ALLOW:
        scene.create("NetworkPolicy", p, NS)
    allowed = time.time()
    wait_for(lambda: now_all("ok", ["client->web"], allowed), timeout=60, interval=0.5,
             message="the client let through to web")  # fmt: skip
    settled = time.time()
    # The reverse direction of an allowed pair stays closed: web has no
    # egress rule and the client no ingress rule.
    assert scene.exec_in(pods["web"], to_client) != 0

    # Restart the agents that enforce each rule: web's node (its ingress
    # rule), then the client's (its egress rule). Probes keep being written.
    for node in dict.fromkeys([pods["web"]["spec"]["nodeName"], client["spec"]["nodeName"]]):
        scene.restart_agent(node)
    restarted = time.time()
    wait_for(lambda: len(results(scene, *pairs["client->web"], restarted)) >= 3
             and len(results(scene, *pairs["stranger->web"], restarted)) >= 2
             and len(results(scene, *pairs["client->other"], restarted)) >= 2,
             timeout=90, interval=0.5, message="probes after the restarts")  # fmt: skip

    for name in ("client->other", "stranger->web"):
        seen = results(scene, *pairs[name], settled)
        assert seen and set(seen) == {"no"}, f"{name} got through: {seen}"
    after = results(scene, *pairs["client->web"], restarted)
    assert after[-3:] == ["ok"] * 3, f"client->web after the restarts: {after}"
