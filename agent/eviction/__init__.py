"""Node-pressure eviction, as the kubelet's eviction manager does it:
thresholds and their flags (thresholds.py), signals observed from cgroups,
statfs and the runtime (signals.py), the order pods are evicted in
(ranking.py) and the manager that ties them to the node (manager.py)."""
