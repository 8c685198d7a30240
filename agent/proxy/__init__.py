"""Service networking on a node: kube-proxy's iptables rules (`ServiceProxy`),
the kubelet's service environment variables (`service_env`) and the
cluster DNS responder (`DnsServer`). Nothing in this package calls the API
server except through informers, or touches iptables chains it does not own.
"""

from agent.proxy.dns import DnsServer, DnsSettings
from agent.proxy.env import service_env
from agent.proxy.proxy import ProxySettings, ServiceProxy

__all__ = ["DnsServer", "DnsSettings", "ProxySettings", "ServiceProxy", "service_env"]
