"""ClusterResolver: the Kubernetes DNS specification as table tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agent.proxy import dns_wire as w
from agent.proxy.dns_resolver import ClusterResolver
from controlplane.client.endpointslices import group_by_service
from tests.fakes.endpointslices import address, endpoint_slice


class DictLookup:
    def __init__(self, services: list[dict[str, Any]], slices: list[dict[str, Any]]) -> None:
        key = lambda o: (o["metadata"]["namespace"], o["metadata"]["name"])  # noqa: E731
        self.svcs = {key(s): s for s in services}
        self.slices = group_by_service(slices)

    def service(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.svcs.get((namespace, name))

    def endpoint_slices(self, namespace: str, name: str) -> Sequence[Mapping[str, Any]]:
        return self.slices.get(f"{namespace}/{name}", [])

    def services_by_ip(self, ip: str) -> list[Mapping[str, Any]]:
        return [s for s in self.svcs.values() if s["spec"].get("clusterIP") == ip]


def meta(name: str, ns: str = "default") -> dict[str, Any]:
    return {"name": name, "namespace": ns}


SERVICES = [
    {
        "metadata": meta("web"),
        "spec": {
            "clusterIP": "10.43.0.20",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        },
    },
    {
        "metadata": meta("db", "prod"),
        "spec": {
            "clusterIP": "None",
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
        },
    },
    {"metadata": meta("ext"), "spec": {"type": "ExternalName", "externalName": "example.com."}},
    {"metadata": meta("empty"), "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
]
PG = {"name": "pg", "port": 5432, "protocol": "TCP"}
# db's addresses are spread over two slices (merged), one of them not ready.
ENDPOINTS = [
    endpoint_slice(
        "db",
        [address("10.244.2.7", hostname="db-1"), address("10.244.3.3", ready=False)],
        [PG],
        name="db-a",
        namespace="prod",
    ),
    endpoint_slice(
        "db",
        [address("10.244.1.5", hostname="db-0"), address("10.244.2.7", hostname="db-1")],
        [PG],
        name="db-b",
        namespace="prod",
    ),
    endpoint_slice("web", ["10.244.1.9"], [{"name": "http", "port": 8080, "protocol": "TCP"}]),
]


@pytest.fixture
def resolver() -> ClusterResolver:
    return ClusterResolver(DictLookup(SERVICES, ENDPOINTS), "cluster.local", ttl=5)


def ask(resolver: ClusterResolver, name: str, qtype: int = w.A) -> w.Message:
    reply = resolver.answer(w.Message(id=42, rd=True, questions=[w.Question(name, qtype)]))
    assert reply is not None
    assert reply.id == 42 and reply.qr and reply.aa
    return reply


def a_records(reply: w.Message) -> list[str]:
    return [w.read_a(r) for r in reply.answers if r.rtype == w.A]


@pytest.mark.parametrize(
    ("name", "qtype", "rcode", "addresses"),
    [
        ("web.default.svc.cluster.local", w.A, w.NOERROR, ["10.43.0.20"]),
        ("WEB.Default.SVC.cluster.local.", w.A, w.NOERROR, ["10.43.0.20"]),
        ("web.default.svc.cluster.local", w.AAAA, w.NOERROR, []),
        ("db.prod.svc.cluster.local", w.A, w.NOERROR, ["10.244.1.5", "10.244.2.7"]),
        ("db-0.db.prod.svc.cluster.local", w.A, w.NOERROR, ["10.244.1.5"]),
        ("10-244-2-7.db.prod.svc.cluster.local", w.A, w.NOERROR, ["10.244.2.7"]),
        ("db-9.db.prod.svc.cluster.local", w.A, w.NXDOMAIN, []),
        ("x.web.default.svc.cluster.local", w.A, w.NXDOMAIN, []),  # not headless
        ("empty.default.svc.cluster.local", w.A, w.NOERROR, []),
        ("nope.default.svc.cluster.local", w.A, w.NXDOMAIN, []),
        ("web.other.svc.cluster.local", w.A, w.NXDOMAIN, []),
        ("10-1-2-3.any.pod.cluster.local", w.A, w.NOERROR, ["10.1.2.3"]),
        ("10-1-2.any.pod.cluster.local", w.A, w.NXDOMAIN, []),
        ("default.svc.cluster.local", w.A, w.NOERROR, []),
        ("svc.cluster.local", w.A, w.NOERROR, []),
        ("google.com.default.svc.cluster.local", w.A, w.NXDOMAIN, []),
        ("random.cluster.local", w.A, w.NXDOMAIN, []),
        ("cluster.local", w.A, w.NOERROR, []),
    ],
)
def test_names_in_the_cluster_domain(
    resolver: ClusterResolver, name: str, qtype: int, rcode: int, addresses: list[str]
) -> None:
    reply = ask(resolver, name, qtype)
    assert reply.rcode == rcode
    assert a_records(reply) == addresses
    if not reply.answers:
        assert [r.rtype for r in reply.authorities] == [w.SOA]
    for rec in reply.answers:
        assert rec.name == name and rec.ttl == 5


def test_names_outside_the_domain_are_not_answered(resolver: ClusterResolver) -> None:
    assert resolver.answer(w.Message(questions=[w.Question("example.com", w.A)])) is None
    assert resolver.answer(w.Message(questions=[w.Question("notcluster.local", w.A)])) is None


def test_external_name_is_a_cname(resolver: ClusterResolver) -> None:
    reply = ask(resolver, "ext.default.svc.cluster.local")
    [cname] = reply.answers
    assert cname.rtype == w.CNAME and w.read_name(cname) == "example.com"


def test_srv_for_a_cluster_ip_service(resolver: ClusterResolver) -> None:
    reply = ask(resolver, "_http._tcp.web.default.svc.cluster.local", w.SRV)
    assert [w.read_srv(r) for r in reply.answers] == [(0, 100, 80, "web.default.svc.cluster.local")]
    assert [(r.name, w.read_a(r)) for r in reply.additionals] == [
        ("web.default.svc.cluster.local", "10.43.0.20")
    ]
    assert ask(resolver, "_http._udp.web.default.svc.cluster.local", w.SRV).rcode == w.NXDOMAIN
    assert ask(resolver, "_nope._tcp.web.default.svc.cluster.local", w.SRV).rcode == w.NXDOMAIN


def test_srv_for_a_headless_service_names_each_endpoint(resolver: ClusterResolver) -> None:
    reply = ask(resolver, "_pg._tcp.db.prod.svc.cluster.local", w.SRV)
    assert [w.read_srv(r) for r in reply.answers] == [
        (0, 50, 5432, "db-0.db.prod.svc.cluster.local"),
        (0, 50, 5432, "db-1.db.prod.svc.cluster.local"),
    ]
    assert sorted(w.read_a(r) for r in reply.additionals) == ["10.244.1.5", "10.244.2.7"]


def test_edns_queries_get_an_opt_record_back(resolver: ClusterResolver) -> None:
    q = w.Message(id=1, questions=[w.Question("web.default.svc.cluster.local", w.A)])
    q.additionals.append(w.opt_record(4096))
    reply = resolver.answer(q)
    assert reply is not None and reply.edns() is not None


def test_opcode_and_question_count(resolver: ClusterResolver) -> None:
    notify = resolver.answer(
        w.Message(opcode=4, questions=[w.Question("web.default.svc.cluster.local", w.A)])
    )
    assert notify is not None and notify.rcode == w.NOTIMP
    two = resolver.answer(
        w.Message(questions=[w.Question("a.cluster.local", w.A), w.Question("b", w.A)])
    )
    assert two is not None and two.rcode == w.FORMERR


def test_other_domain_setting() -> None:
    r = ClusterResolver(DictLookup(SERVICES, ENDPOINTS), "skiff.test.")
    reply = ask(r, "web.default.svc.skiff.test")
    assert a_records(reply) == ["10.43.0.20"]
    assert r.answer(w.Message(questions=[w.Question("web.default.svc.cluster.local", w.A)])) is None


def test_reverse_lookup_of_a_cluster_ip(resolver: ClusterResolver) -> None:
    reply = ask(resolver, "20.0.43.10.in-addr.arpa", w.PTR)
    assert [w.read_name(r) for r in reply.answers] == ["web.default.svc.cluster.local"]
    # Not a cluster IP, or not a PTR question: not ours (forwarded).
    q = w.Message(questions=[w.Question("9.9.9.9.in-addr.arpa", w.PTR)])
    assert resolver.answer(q) is None
    q = w.Message(questions=[w.Question("20.0.43.10.in-addr.arpa", w.A)])
    assert resolver.answer(q) is None


def search(
    resolver: ClusterResolver, name: str, qtype: int = w.A, namespace: str = "prod"
) -> w.Message | None:
    return resolver.search(w.Message(id=7, rd=True, questions=[w.Question(name, qtype)]), namespace)


def test_a_relative_name_with_dots_is_answered_under_the_pods_search_list(
    resolver: ClusterResolver,
) -> None:
    """What busybox's nslookup sends for `db-0.db` (it applies the search list
    only to names without a dot): a CNAME to the first expansion that exists."""
    reply = search(resolver, "db-0.db")
    assert reply is not None and reply.rcode == w.NOERROR and reply.id == 7
    cname, a = reply.answers
    assert cname.name == "db-0.db" and w.read_name(cname) == "db-0.db.prod.svc.cluster.local"
    assert a.name == "db-0.db.prod.svc.cluster.local" and w.read_a(a) == "10.244.1.5"
    # <svc>.<ns> under svc.<domain>; the AAAA of a name that exists: the CNAME alone
    reply = search(resolver, "web.default", namespace="other")
    assert reply is not None
    cname, a = reply.answers
    assert w.read_name(cname) == "web.default.svc.cluster.local" and w.read_a(a) == "10.43.0.20"
    reply = search(resolver, "db-0.db", w.AAAA)
    assert reply is not None and [r.rtype for r in reply.answers] == [w.CNAME]


@pytest.mark.parametrize(
    ("name", "namespace"),
    [
        ("db-0.db", "default"),  # another namespace's pod: not its search list
        ("example.com", "prod"),  # no such expansion: forwarded as before
        ("db", "prod"),  # no dot: the client's own search list applies
        ("a.b.c.d.e", "prod"),  # ndots (5) dots or more: absolute
        ("db-0.db.prod.svc.cluster.local", "prod"),  # in the domain already
        ("default.svc", "prod"),  # only an empty non-terminal
    ],
)
def test_names_the_search_list_does_not_answer(
    resolver: ClusterResolver, name: str, namespace: str
) -> None:
    assert search(resolver, name, namespace=namespace) is None
