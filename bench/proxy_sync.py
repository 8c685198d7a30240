"""The service proxy's sync with EndpointSlices against Endpoints.

`.venv/bin/python -m bench.proxy_sync [--services 1000] [--endpoints 10] [--rounds 7]`

N ClusterIP Services (one named TCP port each) with M ready endpoints each,
given to the proxy's sync pipeline as the informer stores hold them, from
both sources in the same run, in interleaved rounds (slices, endpoints,
slices, ...; median of the rounds):

- `EndpointSlice`: what the proxy reads (agent/proxy/proxy.py): the slices
  grouped per Service by their kubernetes.io/service-name label, merged,
  conditions read;
- `Endpoints`: what it read before (the Endpoints objects keyed ns/name).

Each is timed as `ServiceProxy.sync` runs it: the endpoint source, the
Service ports (`service_ports`), every rule (`rules.build_rules`) and the
full `iptables-restore` text against empty tables (`rules.restore_text`);
then an incremental sync after one Service's endpoints changed
(`rules.incremental_text`). No iptables is called: the kernel's share is
the same for both sources. The rulesets are checked to be identical.

A table, then one JSON line of figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent.proxy import rules
from agent.proxy.model import EndpointSource, endpoints_source, service_ports, slice_source
from controlplane.client.endpointslices import SERVICE_NAME_LABEL, group_by_service
from controlplane.client.store import object_key

Objects = list[dict[str, Any]]


def cluster(n: int, m: int) -> tuple[Objects, Objects, Objects]:
    """(services, endpoints, slices) of n Services with m endpoints each."""
    services, endpoints, slices = [], [], []
    for i in range(n):
        name, ns = f"svc-{i}", f"ns-{i % 20}"
        meta = {"name": name, "namespace": ns}
        ips = [f"10.{42 + (i * m + j) // 65536}.{(i * m + j) // 256 % 256}.{(i * m + j) % 256}"
               for j in range(m)]  # fmt: skip
        services.append({"metadata": meta, "spec": {
            "type": "ClusterIP", "clusterIP": f"10.43.{i // 256}.{i % 256}",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}})  # fmt: skip
        port = {"name": "http", "port": 8080, "protocol": "TCP"}
        endpoints.append({"metadata": meta, "subsets": [{
            "addresses": [{"ip": ip, "nodeName": f"n{j % 3}"} for j, ip in enumerate(ips)],
            "ports": [port]}]})  # fmt: skip
        slices.append({
            "metadata": {"name": f"{name}-abcde", "namespace": ns,
                         "labels": {SERVICE_NAME_LABEL: name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ip], "nodeName": f"n{j % 3}",
                           "conditions": {"ready": True, "serving": True, "terminating": False}}
                          for j, ip in enumerate(ips)],
            "ports": [port]})  # fmt: skip
    return services, endpoints, slices


def from_slices(slices: Objects) -> EndpointSource:
    return slice_source(group_by_service(slices))


def from_endpoints(endpoints: Objects) -> EndpointSource:
    return endpoints_source({object_key(e): e for e in endpoints})


def sync_once(
    services: Objects, objs: Objects, source: Callable[[Objects], EndpointSource]
) -> tuple[float, rules.Ruleset, int]:
    cfg = rules.RuleConfig(node_name="n0", cluster_cidr="10.42.0.0/16")
    start = time.perf_counter()
    ports = service_ports(services, source(objs))
    ruleset = rules.build_rules(ports, cfg)
    text = rules.restore_text(ruleset, rules.Existing())
    return time.perf_counter() - start, ruleset, len(text.splitlines())


def incremental_once(
    services: Objects,
    objs: Objects,
    source: Callable[[Objects], EndpointSource],
    previous: rules.Ruleset,
) -> float:
    cfg = rules.RuleConfig(node_name="n0", cluster_cidr="10.42.0.0/16")
    start = time.perf_counter()
    ruleset = rules.build_rules(service_ports(services, source(objs)), cfg)
    rules.incremental_text(previous, ruleset)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.proxy_sync")
    p.add_argument("--services", type=int, default=1000)
    p.add_argument("--endpoints", type=int, default=10)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    services, endpoints, slices = cluster(args.services, args.endpoints)
    # One Service's endpoints change (the last address goes) for the incremental sync.
    endpoints2 = [*endpoints[:-1], {**endpoints[-1], "subsets": [{
        **endpoints[-1]["subsets"][0],
        "addresses": endpoints[-1]["subsets"][0]["addresses"][:-1]}]}]  # fmt: skip
    slices2 = [*slices[:-1], {**slices[-1], "endpoints": slices[-1]["endpoints"][:-1]}]
    cases: dict[str, tuple[Objects, Objects, Callable[[Objects], EndpointSource]]] = {
        "EndpointSlice": (slices, slices2, from_slices),
        "Endpoints": (endpoints, endpoints2, from_endpoints),
    }
    full: dict[str, list[float]] = {k: [] for k in cases}
    incr: dict[str, list[float]] = {k: [] for k in cases}
    made: dict[str, rules.Ruleset] = {}
    lines = 0
    for _ in range(args.rounds):
        for name, (objs, changed, source) in cases.items():
            seconds, ruleset, lines = sync_once(services, objs, source)
            full[name].append(seconds)
            made[name] = ruleset
            incr[name].append(incremental_once(services, changed, source, ruleset))
    if made["EndpointSlice"].chains != made["Endpoints"].chains:
        raise SystemExit("the two sources gave different rules")
    figures: dict[str, Any] = {
        "services": args.services,
        "endpoints_per_service": args.endpoints,
        "rounds": args.rounds,
        "restore_lines": lines,
    }
    print(f"{args.services} Services x {args.endpoints} endpoints, {lines} iptables-restore lines,"
          f" median of {args.rounds} interleaved rounds")  # fmt: skip
    print(f"{'source':<15} {'full sync s':>12} {'incremental s':>14}")
    for name in cases:
        f, i = statistics.median(full[name]), statistics.median(incr[name])
        key = "slices" if name == "EndpointSlice" else "endpoints"
        figures[f"{key}_full_s"] = round(f, 4)
        figures[f"{key}_incremental_s"] = round(i, 4)
        print(f"{name:<15} {f:>12.3f} {i:>14.3f}")
    ratio = figures["slices_full_s"] / figures["endpoints_full_s"]
    figures["slices_over_endpoints"] = round(ratio, 3)
    print(f"EndpointSlice / Endpoints full sync: {ratio:.3f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
