"""NetworkPolicy semantics as the node's nftables plan: which pods are
isolated, which peers and ports each rule lets through."""

from __future__ import annotations

from typing import Any

import pytest

from agent.netpol.plan import Plan, build
from agent.netpol.policy import PodInfo, PolicyError, namespace_labels, parse_policy, pod_info

NODE = "node-1"


def pod(
    name: str,
    ip: str,
    node: str = NODE,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "labels": labels or {"app": name}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "ports": ports or []}], **spec},
        "status": {"phase": "Running", "podIP": ip},
    }


def policy(name: str, spec: dict[str, Any], ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def plan_of(policies: list[dict[str, Any]], pods: list[dict[str, Any]], namespaces=()):
    infos = [p for p in (pod_info(o) for o in pods) if p is not None]
    spaces = namespace_labels(
        [{"metadata": {"name": n, "labels": lbl}} for n, lbl in (namespaces or [])]
    )
    return build([parse_policy(p) for p in policies], infos, spaces, NODE)


def set_of(plan: Plan, line: str, key: str = "saddr") -> tuple[str, ...]:
    name = line.split(f"ip {key} @", 1)[1].split()[0]
    return plan.sets[name][2]


def chain_of(plan: Plan, name: str) -> list[str]:
    chain = next(c for c in plan.chains if c.startswith("pol_") and c.endswith(name))
    return plan.chains[chain]


PODS = [
    pod(
        "web", "10.244.1.2", labels={"app": "web"}, ports=[{"name": "http", "containerPort": 8080}]
    ),
    pod("client", "10.244.2.2", node="node-2", labels={"role": "client"}),
    pod("other", "10.244.2.3", node="node-2", labels={"role": "other"}),
    pod("remote-web", "10.244.2.4", node="node-2", labels={"app": "web"}),
    pod("hostnet", "192.168.1.10", labels={"role": "client"}, hostNetwork=True),
    pod("done", "10.244.1.9", labels={"role": "client"}, node="node-2"),
]
PODS[-1]["status"]["phase"] = "Succeeded"


def test_allow_by_label_isolates_only_selected_local_pods() -> None:
    plan = plan_of(
        [
            policy(
                "allow-client",
                {
                    "podSelector": {"matchLabels": {"app": "web"}},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}]}],
                },
            )
        ],
        PODS,
    )
    # Only this node's web pod is isolated; the one on node-2 is node-2's job.
    assert set(plan.in_pods) == {"10.244.1.2"}
    assert plan.out_pods == {}  # policyTypes defaults to Ingress only
    pod_chain = plan.chains[plan.in_pods["10.244.1.2"]]
    assert pod_chain[-1] == "drop" and pod_chain[0].startswith("jump pol_")
    (rule,) = chain_of(plan, "_in")
    assert rule.endswith('accept comment "default/allow-client ingress[0]"')
    # A host-network pod and a finished pod are no peers, whatever their labels.
    assert set_of(plan, rule) == ("10.244.2.2",)


def test_default_deny_both_directions() -> None:
    plan = plan_of(
        [policy("deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})], PODS
    )
    assert set(plan.in_pods) == set(plan.out_pods) == {"10.244.1.2"}
    assert chain_of(plan, "_in") == [] and chain_of(plan, "_out") == []
    assert plan.chains[plan.in_pods["10.244.1.2"]][-1] == "drop"


def test_allow_all_rule_and_ports() -> None:
    plan = plan_of(
        [
            policy(
                "p",
                {
                    "podSelector": {},
                    "ingress": [
                        {},
                        {
                            "ports": [
                                {"port": 80},
                                {"port": 1000, "endPort": 2000},
                                {"protocol": "UDP", "port": 53},
                                {"protocol": "SCTP"},
                            ]
                        },
                    ],
                },
            )
        ],
        PODS,
    )
    rules = chain_of(plan, "_in")
    assert rules[0].startswith("accept ")
    assert any("meta l4proto tcp th dport { 80, 1000-2000 } accept" in r for r in rules)
    assert any("meta l4proto udp th dport { 53 } accept" in r for r in rules)
    assert any(r.startswith("meta l4proto sctp accept") for r in rules)


def test_namespace_and_pod_selector_together_and_ipblock_except() -> None:
    pods = [*PODS, pod("db", "10.244.2.7", node="node-2", ns="prod", labels={"role": "client"})]
    plan = plan_of(
        [
            policy(
                "p",
                {
                    "podSelector": {"matchLabels": {"app": "web"}},
                    "ingress": [
                        {
                            "from": [
                                {
                                    "namespaceSelector": {"matchLabels": {"env": "prod"}},
                                    "podSelector": {"matchLabels": {"role": "client"}},
                                },
                                {"ipBlock": {"cidr": "172.16.0.0/16", "except": ["172.16.1.0/24"]}},
                            ]
                        }
                    ],
                },
            )
        ],
        pods,
        namespaces=[("prod", {"env": "prod"}), ("default", {})],
    )
    (rule,) = chain_of(plan, "_in")
    elements = set_of(plan, rule)
    assert "10.244.2.7" in elements and "10.244.2.2" not in elements  # default's client: no
    assert "172.16.1.0/24" not in elements and "172.16.0.0/24" in elements
    assert "172.16.128.0/17" in elements


def test_namespace_selector_by_name_label() -> None:
    pods = [*PODS, pod("x", "10.244.2.8", node="node-2", ns="tools")]
    plan = plan_of(
        [
            policy(
                "p",
                {
                    "podSelector": {},
                    "ingress": [
                        {
                            "from": [
                                {
                                    "namespaceSelector": {
                                        "matchLabels": {"kubernetes.io/metadata.name": "tools"}
                                    }
                                }
                            ]
                        }
                    ],
                },
            )
        ],
        pods,
    )
    (rule,) = chain_of(plan, "_in")
    assert set_of(plan, rule) == ("10.244.2.8",)


def test_named_ports_resolve_on_the_target_pods() -> None:
    plan = plan_of(
        [policy("p", {"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]})], PODS
    )
    (rule,) = chain_of(plan, "_in")
    assert "ip daddr . meta l4proto . th dport @n_" in rule
    name = rule.split("@")[1].split()[0]
    assert plan.sets[name][2] == ("10.244.1.2 . tcp . 8080",)


def test_egress_named_port_resolves_on_the_peers() -> None:
    pods = [
        *PODS,
        pod("api", "10.244.2.9", node="node-2", labels={"app": "api"},
            ports=[{"name": "grpc", "containerPort": 9000}]),
    ]  # fmt: skip
    plan = plan_of(
        [
            policy(
                "p",
                {
                    "podSelector": {"matchLabels": {"app": "web"}},
                    "policyTypes": ["Egress"],
                    "egress": [
                        {
                            "to": [{"podSelector": {"matchLabels": {"app": "api"}}}],
                            "ports": [{"port": "grpc"}],
                        }
                    ],
                },
            )
        ],
        pods,
    )
    assert set(plan.out_pods) == {"10.244.1.2"} and plan.in_pods == {}
    (rule,) = chain_of(plan, "_out")
    name = rule.split("@")[1].split()[0]
    assert plan.sets[name][2] == ("10.244.2.9 . tcp . 9000",)


def test_peers_that_match_nobody_allow_nothing() -> None:
    plan = plan_of(
        [
            policy(
                "p",
                {
                    "podSelector": {},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "nobody"}}}]}],
                },
            )
        ],
        PODS,
    )
    assert chain_of(plan, "_in") == []
    assert set(plan.in_pods) == {"10.244.1.2"}


def test_same_peers_share_one_set_and_text_is_stable() -> None:
    spec = {
        "podSelector": {},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}]}],
    }
    policies = [policy(f"p{i}", spec) for i in range(20)]
    plan = plan_of(policies, PODS)
    assert len([s for s in plan.sets if s.startswith("s_")]) == 1
    # A pod's chain jumps to each of the 20 policies' chains, in name order.
    assert len(plan.chains[plan.in_pods["10.244.1.2"]]) == 21
    assert plan.text() == plan_of(list(reversed(policies)), list(reversed(PODS))).text()


def test_text_replaces_the_table_in_one_transaction() -> None:
    text = plan_of([], PODS).text()
    head = text.splitlines()[:3]
    assert head == [
        "table inet skiff-netpol",
        "delete table inet skiff-netpol",
        "table inet skiff-netpol {",
    ]
    assert "ct state established,related accept" in text


def base_chains(text: str) -> list[str]:
    """The chains of the text that hook into the kernel."""
    found, chain = [], ""
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["chain"]:
            chain = words[1]
        elif "hook" in words:
            found.append(chain)
    return found


def test_nothing_isolated_no_hook_but_conntrack_kept() -> None:
    """At rest (no policy, or none selecting a pod of this node) a forwarded
    packet passes no chain of ours; conntrack stays on for a first policy."""
    elsewhere = policy("remote", {"podSelector": {"matchLabels": {"role": "other"}}})
    for policies in ([], [elsewhere]):
        plan = plan_of(policies, PODS)
        assert not plan.isolates
        text = plan.text()
        assert base_chains(text) == []
        assert "    ct state established,related accept" in text.splitlines()
        assert text.splitlines()[:2] == [
            "table inet skiff-netpol",
            "delete table inet skiff-netpol",
        ]


def test_a_hook_only_for_the_directions_pods_are_isolated_in() -> None:
    ingress_only = policy("in", {"podSelector": {"matchLabels": {"app": "web"}}})
    assert base_chains(plan_of([ingress_only], PODS).text()) == ["ingress"]
    egress_only = policy("out", {"podSelector": {}, "policyTypes": ["Egress"]})
    assert base_chains(plan_of([egress_only], PODS).text()) == ["egress"]
    both = plan_of([ingress_only, egress_only], PODS).text()
    assert base_chains(both) == ["ingress", "egress"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            {"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]},
            "spec.ingress[0].from[0].ipBlock",
        ),
        ({"egress": [{"ports": [{"protocol": "ICMP"}]}]}, "spec.egress[0].ports[0].protocol"),
        ({"ingress": [{"from": [{}]}]}, "spec.ingress[0].from[0]"),
        (
            {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}},
            "spec.podSelector",
        ),
    ],
)
def test_unenforceable_policies_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_policy(policy("bad", {"podSelector": {}, **spec}))


def test_pod_info_keeps_named_ports_and_skips_host_network() -> None:
    info = pod_info(PODS[0])
    assert isinstance(info, PodInfo) and info.ports == {("http", "TCP"): 8080}
    assert pod_info(PODS[4]) is None
