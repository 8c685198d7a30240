"""Service networking on a node: kube-proxy's iptables rules (`ServiceProxy`),
the kubelet's service environment variables (`service_env`) and the
cluster DNS responder (`DnsServer`) on a node-local address
(`ensure_local_address`). Nothing in this package calls the API server except
through informers, or touches iptables chains it does not own.

Wiring in the agent, all on one SharedInformerFactory:

    ensure_local_address(dns_ip)                       # e.g. 10.43.0.10
    proxy = ServiceProxy(api, node_name, ProxySettings(
        cluster_cidr="10.244.0.0/16", local_service_ips=frozenset({dns_ip})),
        clock=clock, informers=factory)
    dns = DnsServer(api, DnsSettings(listen_host=dns_ip, domain="cluster.local"),
                    informers=factory)
    proxy.start(); dns.start()
    env = service_env(factory.informer_for("Service").store.list(), pod_namespace,
                      enable_service_links=pod_spec.get("enableServiceLinks", True))
    ...
    dns.stop(); proxy.stop(); remove_local_address(dns_ip)
"""

from agent.proxy.dns import DnsServer, DnsSettings
from agent.proxy.env import service_env
from agent.proxy.local_address import ensure_local_address, remove_local_address
from agent.proxy.proxy import ProxySettings, ServiceProxy

__all__ = [
    "DnsServer",
    "DnsSettings",
    "ProxySettings",
    "ServiceProxy",
    "ensure_local_address",
    "remove_local_address",
    "service_env",
]
