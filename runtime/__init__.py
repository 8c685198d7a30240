"""skiff's container runtime: a CRI runtime.v1 server, its image store,
the executor that runs containers in namespaces and cgroups, and the CNI
client and plugin. It imports only `proto`, never the agent or control plane.
Keep this file empty of imports: the CNI plugin executables start from here
and must stay cheap to start."""
