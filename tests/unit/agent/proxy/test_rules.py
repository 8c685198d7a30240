"""Rule generation: table tests from Services + Endpoints to restore text."""

from __future__ import annotations

from typing import Any

import pytest

from agent.proxy import rules
from agent.proxy.model import Endpoint, endpoints_for, service_ports


def svc(
    name: str = "web",
    ns: str = "default",
    ip: str = "10.43.0.20",
    type_: str = "ClusterIP",
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": type_,
        "clusterIP": ip,
        "ports": ports if ports is not None else [{"name": "http", "port": 80, "protocol": "TCP"}],
    }
    body.update(spec)
    return {"metadata": {"name": name, "namespace": ns}, "spec": body}


def eps(
    ips: list[str],
    name: str = "web",
    ns: str = "default",
    port: int = 8080,
    port_name: str = "http",
    not_ready: list[str] | None = None,
    node: str = "n1",
) -> dict[str, Any]:
    subset: dict[str, Any] = {
        "addresses": [{"ip": i, "nodeName": node} for i in ips],
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
    }
    if not_ready:
        subset["notReadyAddresses"] = [{"ip": i} for i in not_ready]
    return {"metadata": {"name": name, "namespace": ns}, "subsets": [subset]}


def generate(
    services: list[dict[str, Any]],
    endpoints: list[dict[str, Any]],
    cfg: rules.RuleConfig | None = None,
    existing: rules.Existing | None = None,
) -> str:
    by_key = {f"{e['metadata']['namespace']}/{e['metadata']['name']}": e for e in endpoints}
    ports = service_ports(services, by_key)
    return rules.restore_text(
        rules.build_rules(ports, cfg or rules.RuleConfig(node_name="n1")),
        existing or rules.Existing(),
    )


def chain_rules(text: str, chain: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(f"-A {chain} ")]


def nat_part(text: str) -> str:
    return text.split("*nat", 1)[1]


def filter_part(text: str) -> str:
    return text.split("*nat", 1)[0]


def test_endpoints_match_service_ports_by_name_and_only_ready_ones() -> None:
    e = eps(["10.244.1.3", "10.244.1.2"], not_ready=["10.244.1.9"])
    assert endpoints_for(e, "http", "TCP") == (
        Endpoint("10.244.1.2", 8080, "n1"),
        Endpoint("10.244.1.3", 8080, "n1"),
    )
    assert endpoints_for(e, "other", "TCP") == ()
    assert endpoints_for(e, "http", "UDP") == ()


@pytest.mark.parametrize(
    "service",
    [
        svc(ip="None"),  # headless
        svc(ip=""),  # not allocated yet
        svc(type_="ExternalName", ip=""),
        svc(ip="fd00::1"),  # IPv6 is not proxied (IPv4 rules only)
    ],
)
def test_no_rules_for_services_without_an_ipv4_cluster_ip(service: dict[str, Any]) -> None:
    text = generate([service], [eps(["10.244.1.2"])])
    assert "SKIFF-SVC-" not in text and "SKIFF-SEP-" not in text and "REJECT" not in text


def test_cluster_ip_balances_with_statistic_probabilities() -> None:
    text = generate([svc()], [eps(["10.244.1.2", "10.244.1.3", "10.244.1.4"])])
    nat = nat_part(text)
    [jump] = [r for r in chain_rules(nat, "SKIFF-SERVICES") if "SKIFF-SVC-" in r]
    assert "-d 10.43.0.20/32 -p tcp -m tcp --dport 80" in jump
    svc_chain = jump.split("-j ")[-1]
    picks = chain_rules(nat, svc_chain)
    assert len(picks) == 3
    assert "--probability 0.3333333333" in picks[0]
    assert "--probability 0.5000000000" in picks[1]
    assert "statistic" not in picks[2]
    targets = [p.split("-j ")[-1] for p in picks]
    dnats = [chain_rules(nat, t)[-1] for t in targets]
    assert [d.split("--to-destination ")[1] for d in dnats] == [
        "10.244.1.2:8080",
        "10.244.1.3:8080",
        "10.244.1.4:8080",
    ]
    # Hairpin: an endpoint reaching itself through the service is masqueraded.
    assert chain_rules(nat, targets[0])[0].endswith("-s 10.244.1.2/32 -j SKIFF-MARK-MASQ")
    # The NodePorts jump is the last rule of SKIFF-SERVICES.
    assert chain_rules(nat, "SKIFF-SERVICES")[-1].endswith("-j SKIFF-NODEPORTS")


def test_chain_names_are_stable_and_fit_iptables() -> None:
    a = generate([svc()], [eps(["10.244.1.2"])])
    b = generate([svc()], [eps(["10.244.1.2"])])
    assert a == b
    for line in a.splitlines():
        if line.startswith(":"):
            assert len(line[1:].split()[0]) <= 28


def test_no_endpoints_rejects_in_filter_table() -> None:
    text = generate(
        [svc(type_="NodePort", ports=[{"name": "http", "port": 80, "nodePort": 30001}])], []
    )
    assert "SKIFF-SVC-" not in text
    [reject] = chain_rules(filter_part(text), "SKIFF-SERVICES")
    assert "-d 10.43.0.20/32" in reject and reject.endswith("icmp-port-unreachable")
    [ext] = chain_rules(filter_part(text), "SKIFF-EXTERNAL-SERVICES")
    assert "--dport 30001" in ext and "REJECT" in ext


def test_nodeport_marks_for_masquerade_then_jumps_to_the_service_chain() -> None:
    text = generate(
        [svc(type_="LoadBalancer", ports=[{"name": "http", "port": 80, "nodePort": 30080}])],
        [eps(["10.244.1.2"])],
    )
    masq, jump = chain_rules(nat_part(text), "SKIFF-NODEPORTS")
    assert "--dport 30080" in masq and masq.endswith("-j SKIFF-MARK-MASQ")
    assert "--dport 30080" in jump and "-j SKIFF-SVC-" in jump
    # localhost NodePorts: the localnet guard is present
    assert "block incoming localnet connections" in text


def test_external_traffic_policy_local_uses_local_endpoints_without_snat() -> None:
    service = svc(
        type_="NodePort",
        ports=[{"name": "http", "port": 80, "nodePort": 30080}],
        externalTrafficPolicy="Local",
    )
    e = eps(["10.244.1.2"], node="n1")
    e["subsets"][0]["addresses"].append({"ip": "10.244.2.2", "nodeName": "n2"})
    nat = nat_part(generate([service], [e]))
    masq, jump = chain_rules(nat, "SKIFF-NODEPORTS")
    assert "-s 127.0.0.0/8" in masq
    svl = jump.split("-j ")[-1]
    assert svl.startswith("SKIFF-SVL-")
    assert len(chain_rules(nat, svl)) == 1  # only the local endpoint
    # On a node with no local endpoint the NodePort drops (cluster IP still works).
    other = generate([service], [e], rules.RuleConfig(node_name="n3"))
    assert "SKIFF-SVL-" not in other
    [drop] = chain_rules(filter_part(other), "SKIFF-EXTERNAL-SERVICES")
    assert drop.endswith("-j DROP")


def test_local_load_balancer_address_from_the_node_itself_goes_to_every_endpoint() -> None:
    """kube-proxy's EXT chain for externalTrafficPolicy Local: the node's own
    traffic (and pods') to the load-balancer address is masqueraded and sent
    to the cluster-wide chain; only outside clients are kept local and
    unmasqueraded. Without this, a client on the node got EHOSTUNREACH: its
    packet was DNATed to the pod with a 127.0.0.1 source."""
    service = svc(type_="LoadBalancer", ports=[{"name": "http", "port": 8090, "nodePort": 30090}],
                  externalTrafficPolicy="Local",
                  status={"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}})  # fmt: skip
    service["status"] = service["spec"].pop("status")
    e = eps(["10.244.1.2"], node="n1")
    e["subsets"][0]["addresses"].append({"ip": "10.244.2.2", "nodeName": "n2"})
    for node in ("n1", "n3"):
        cfg = rules.RuleConfig(node_name=node, cluster_cidr="10.244.0.0/16")
        text = generate([service], [e], cfg)
        nat = nat_part(text)
        to_ext = [r for r in chain_rules(nat, "SKIFF-SERVICES") if "-d 192.0.2.10/32" in r]
        pods, masq, own, *outside = to_ext
        assert "-s 10.244.0.0/16" in pods and "-j SKIFF-SVC-" in pods
        assert "--src-type LOCAL" in masq and masq.endswith("-j SKIFF-MARK-MASQ")
        assert "--src-type LOCAL" in own and "-j SKIFF-SVC-" in own
        assert len(chain_rules(nat, own.split("-j ")[-1])) == 2  # every endpoint
        if node == "n1":  # outside clients: the local endpoint, no SNAT
            [svl] = outside
            assert "-j SKIFF-SVL-" in svl
        else:  # no local endpoint: outside clients are dropped
            assert outside == []
            drops = chain_rules(filter_part(text), "SKIFF-EXTERNAL-SERVICES")
            assert any("-d 192.0.2.10/32" in d and d.endswith("-j DROP") for d in drops)


def test_session_affinity_uses_recent() -> None:
    text = generate(
        [
            svc(
                sessionAffinity="ClientIP",
                sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}},
            )
        ],
        [eps(["10.244.1.2", "10.244.1.3"])],
    )
    nat = nat_part(text)
    [jump] = [r for r in chain_rules(nat, "SKIFF-SERVICES") if "SKIFF-SVC-" in r]
    picks = chain_rules(nat, jump.split("-j ")[-1])
    assert all("--rcheck --seconds 60 --reap" in p for p in picks[:2])
    sep = picks[0].split("-j ")[-1]
    assert "--set --mask 255.255.255.255 --rsource" in chain_rules(nat, sep)[-1]


def test_masquerade_for_sources_outside_the_cluster_cidr() -> None:
    cfg = rules.RuleConfig(node_name="n1", cluster_cidr="10.244.0.0/16")
    text = generate([svc()], [eps(["10.244.1.2"])], cfg)
    assert any(
        "! -s 10.244.0.0/16 -j SKIFF-MARK-MASQ" in r
        for r in chain_rules(nat_part(text), "SKIFF-SERVICES")
    )
    cfg_all = rules.RuleConfig(node_name="n1", masquerade_all=True)
    text = generate([svc()], [eps(["10.244.1.2"])], cfg_all)
    assert any(
        r.endswith("--dport 80 -j SKIFF-MARK-MASQ")
        for r in chain_rules(nat_part(text), "SKIFF-SERVICES")
    )


def test_local_service_ips_get_no_rules() -> None:
    cfg = rules.RuleConfig(node_name="n1", local_service_ips=frozenset({"10.43.0.10"}))
    text = generate([svc(ip="10.43.0.10")], [], cfg)
    assert "10.43.0.10" not in text


SAVED_NAT = """# Generated by iptables-save
*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:SKIFF-SERVICES - [0:0]
:SKIFF-POSTROUTING - [0:0]
:SKIFF-SVC-OLDOLDOLDOLDOLDO - [0:0]
:SKIFF-MQ-0123456789abcdef - [0:0]
-A PREROUTING -m comment --comment "skiff service portals" -j SKIFF-SERVICES
-A POSTROUTING -m comment --comment "skiff postrouting rules" -j SKIFF-POSTROUTING
-A POSTROUTING -s 10.244.1.2/32 -m comment --comment "skiff cni x" -j SKIFF-MQ-0123456789abcdef
-A SKIFF-SERVICES -d 10.43.0.99/32 -j SKIFF-SVC-OLDOLDOLDOLDOLDO
COMMIT
"""


def test_restore_adds_missing_jumps_only_and_deletes_stale_chains_of_ours() -> None:
    existing = rules.parse_save("nat", SAVED_NAT)
    text = generate([svc()], [eps(["10.244.1.2"])], existing=existing)
    nat = nat_part(text)
    assert "-I PREROUTING" not in nat and "-I POSTROUTING" not in nat
    assert "-I OUTPUT 1 -m comment" in nat
    assert ":SKIFF-SVC-OLDOLDOLDOLDOLDO - [0:0]" in nat
    assert nat.index("-X SKIFF-SVC-OLDOLDOLDOLDOLDO") > nat.index("-A SKIFF-SERVICES")
    assert "SKIFF-MQ-" not in text  # the CNI plugin's chain is not ours


def test_cleanup_removes_our_jumps_and_chains_only() -> None:
    existing = rules.parse_save("nat", SAVED_NAT)
    text = rules.cleanup_text(existing)
    assert '-D PREROUTING -m comment --comment "skiff service portals" -j SKIFF-SERVICES' in text
    assert "-X SKIFF-SVC-OLDOLDOLDOLDOLDO" in text and "-X SKIFF-SERVICES" in text
    assert "SKIFF-MQ-" not in text
    assert "*filter" not in text  # nothing of ours there
    assert rules.cleanup_text(rules.Existing()) == ""


def test_services_across_namespaces_and_protocols_get_distinct_chains() -> None:
    services = [
        svc(
            name="dns",
            ns="kube-system",
            ip="10.43.0.53",
            ports=[
                {"name": "dns", "port": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
            ],
        ),
        svc(
            name="dns",
            ns="other",
            ip="10.43.0.54",
            ports=[{"name": "dns", "port": 53, "protocol": "UDP"}],
        ),
    ]
    endpoints = [
        {
            "metadata": {"name": "dns", "namespace": "kube-system"},
            "subsets": [
                {
                    "addresses": [{"ip": "10.244.1.5"}],
                    "ports": [
                        {"name": "dns", "port": 5353, "protocol": "UDP"},
                        {"name": "dns-tcp", "port": 5353, "protocol": "TCP"},
                    ],
                }
            ],
        },
        eps(["10.244.1.6"], name="dns", ns="other", port=53, port_name="dns"),
    ]
    endpoints[1]["subsets"][0]["ports"][0]["protocol"] = "UDP"
    nat = nat_part(generate(services, endpoints))
    svc_chains = {
        line[1:].split()[0] for line in nat.splitlines() if line.startswith(":SKIFF-SVC-")
    }
    assert len(svc_chains) == 3
    assert "-p udp -m udp -j DNAT --to-destination 10.244.1.5:5353" in nat
    assert "-p tcp -m tcp -j DNAT --to-destination 10.244.1.5:5353" in nat


def test_external_ips_and_load_balancer_ingress() -> None:
    service = svc(type_="LoadBalancer", externalIPs=["203.0.113.7", "fd00::9"])
    service["spec"]["ports"][0]["nodePort"] = 30080
    service["status"] = {"loadBalancer": {"ingress": [{"ip": "198.51.100.4"}, {"hostname": "x"}]}}
    nat = nat_part(generate([service], [eps(["10.244.1.2"])]))
    rules_ = chain_rules(nat, "SKIFF-SERVICES")
    for ip in ("203.0.113.7", "198.51.100.4"):
        masq, jump = [r for r in rules_ if f"-d {ip}/32" in r]
        assert "--dport 80" in masq and masq.endswith("-j SKIFF-MARK-MASQ")
        assert "-j SKIFF-SVC-" in jump
    assert "fd00::9" not in nat
    assert rules_[-1].endswith("-j SKIFF-NODEPORTS")
    # Without endpoints the external IP is rejected like the cluster IP.
    text = generate([service], [])
    assert any(
        "-d 203.0.113.7/32" in r and "REJECT" in r
        for r in chain_rules(filter_part(text), "SKIFF-EXTERNAL-SERVICES")
    )


def test_incremental_text_names_only_changed_and_removed_chains() -> None:
    cfg = rules.RuleConfig(node_name="n1")

    def build(endpoints: list[dict[str, Any]]) -> rules.Ruleset:
        by_key = {f"{e['metadata']['namespace']}/{e['metadata']['name']}": e for e in endpoints}
        services = [svc(), svc(name="api", ip="10.43.0.21")]
        return rules.build_rules(service_ports(services, by_key), cfg)

    old = build([eps(["10.244.1.2"]), eps(["10.244.2.2"], name="api")])
    assert rules.incremental_text(old, old) == ""
    new = build([eps(["10.244.1.3"]), eps(["10.244.2.2"], name="api")])
    text = rules.incremental_text(old, new)
    assert "*filter" not in text  # nothing changed there
    declared = [line[1:].split()[0] for line in text.splitlines() if line.startswith(":")]
    removed = [line.split()[1] for line in text.splitlines() if line.startswith("-X ")]
    assert len(removed) == 1 and removed[0].startswith("SKIFF-SEP-")
    # web's SVC chain and its new SEP chain are rewritten, plus the removed SEP
    # (flushed before -X); api's chains and SKIFF-SERVICES are untouched.
    assert len(declared) == 3
    assert "SKIFF-SERVICES" not in declared
    assert "10.244.2.2" not in text and "10.244.1.3:8080" in text
    # Removing a service rewrites SKIFF-SERVICES and deletes its chains.
    gone = build([eps(["10.244.1.3"])])
    text = rules.incremental_text(new, gone)
    assert ":SKIFF-SERVICES - [0:0]" in text
    assert text.index("-A SKIFF-SERVICES") < text.index("-X ")


# ---- a second agent on the same host: its own chain names ----------------

SECOND = rules.Chains("SKIFFab12c")

SAVED_BOTH = """*nat
:PREROUTING ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:SKIFF-SERVICES - [0:0]
:SKIFF-POSTROUTING - [0:0]
:SKIFF-SVC-OLDOLDOLDOLDOLDO - [0:0]
:SKIFFab12c-SERVICES - [0:0]
:SKIFFab12c-POSTROUTING - [0:0]
:SKIFFab12c-SVC-OLDOLDOLDOLDO - [0:0]
-A PREROUTING -m comment --comment "skiff service portals" -j SKIFF-SERVICES
-A PREROUTING -m comment --comment "skiff service portals" -j SKIFFab12c-SERVICES
-A POSTROUTING -m comment --comment "skiff postrouting rules" -j SKIFF-POSTROUTING
-A POSTROUTING -m comment --comment "skiff postrouting rules" -j SKIFFab12c-POSTROUTING
-A SKIFF-SERVICES -d 10.43.0.99/32 -j SKIFF-SVC-OLDOLDOLDOLDOLDO
-A SKIFFab12c-SERVICES -d 10.45.0.99/32 -j SKIFFab12c-SVC-OLDOLDOLDOLDO
COMMIT
"""


def test_default_chain_names_are_unchanged() -> None:
    assert rules.DEFAULT_CHAINS.services == rules.SERVICES == "SKIFF-SERVICES"
    assert rules.FAMILIES == ("SKIFF-SVC-", "SKIFF-SVL-", "SKIFF-SEP-")
    sp = service_ports([svc()], {})[0]
    assert len(rules.svc_chain(sp)) == len("SKIFF-SVC-") + 16


def test_prefixed_chains_fit_iptables_and_bad_prefixes_are_refused() -> None:
    sp = service_ports([svc()], {})[0]
    ep = Endpoint(ip="10.244.1.2", port=8080)
    names = [*SECOND.nat_fixed, *SECOND.filter_fixed, SECOND.svc(sp), SECOND.svl(sp)]
    names.append(SECOND.sep(sp, ep))
    assert all(n.startswith("SKIFFab12c-") and len(n) <= 28 for n in names), names
    assert SECOND.external_services == "SKIFFab12c-EXTERNAL-SERVICES"
    for bad in ("", "SKIFF-x", "SKIFFabcdef", "sk ff"):
        with pytest.raises(ValueError):
            rules.Chains(bad)


def test_prefixed_rules_name_only_their_own_chains() -> None:
    cfg = rules.RuleConfig(node_name="n1", chains=SECOND)
    text = generate(
        [svc(ip="10.45.0.20", type_="NodePort", ports=[{"port": 80, "nodePort": 30080}])],
        [eps(["10.245.1.2"])],
        cfg,
        rules.Existing(naming=SECOND),
    )
    for line in text.splitlines():
        for word in line.split():
            if word.startswith("SKIFF"):
                assert word.startswith("SKIFFab12c-"), line
    assert "-I PREROUTING 1 -m comment" in text and "-j SKIFFab12c-SERVICES" in text


def test_each_agent_reads_and_cleans_only_its_own_chains() -> None:
    default = rules.parse_save("nat", SAVED_BOTH)
    second = rules.parse_save("nat", SAVED_BOTH, naming=SECOND)
    assert default.ours("nat") == {
        "SKIFF-SERVICES",
        "SKIFF-POSTROUTING",
        "SKIFF-SVC-OLDOLDOLDOLDOLDO",
    }
    assert second.ours("nat") == {
        "SKIFFab12c-SERVICES",
        "SKIFFab12c-POSTROUTING",
        "SKIFFab12c-SVC-OLDOLDOLDOLDO",
    }
    # Neither sync deletes the other's chains or re-adds the other's jumps.
    text = generate([svc()], [eps(["10.244.1.2"])], existing=default)
    assert "SKIFFab12c" not in text and "-I PREROUTING" not in text
    text = generate(
        [svc(ip="10.45.0.20")],
        [eps(["10.245.1.2"])],
        rules.RuleConfig(node_name="n1", chains=SECOND),
        second,
    )
    assert "SKIFF-" not in text and "-X SKIFFab12c-SVC-OLDOLDOLDOLDO" in text
    assert "-I PREROUTING" not in text
    cleanup = rules.cleanup_text(second)
    assert "-X SKIFFab12c-SERVICES" in cleanup and "SKIFF-" not in cleanup
    cleanup = rules.cleanup_text(default)
    assert "-X SKIFF-SERVICES" in cleanup and "SKIFFab12c" not in cleanup


def test_rules_and_tables_of_different_agents_are_not_mixed() -> None:
    with pytest.raises(ValueError):
        generate([svc()], [], rules.RuleConfig(node_name="n1", chains=SECOND), rules.Existing())
