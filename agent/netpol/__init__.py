"""NetworkPolicy enforcement on a node (kube-router's netpol controller's job).

`policy.py` reads NetworkPolicies, Pods and Namespaces into records,
`plan.py` turns them into one nftables table for this node's pods,
`nft.py` applies it, and `controller.py` (`NetworkPolicyController`) keeps
it current from shared informers. Wiring in the agent:

    netpol = NetworkPolicyController(api, node_name, NetpolSettings(), informers=factory)
    netpol.start()
    ...
    netpol.stop()        # the table stays: enforcement outlives an agent restart
    netpol.cleanup()     # skiff down / skiff up's Ctrl-C only
"""

from agent.netpol.controller import NetpolSettings, NetworkPolicyController

__all__ = ["NetpolSettings", "NetworkPolicyController"]
