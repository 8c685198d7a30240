"""The controller-manager and its controllers (kube-controller-manager's job).

`manager.py` starts controllers from a registry of init functions over shared
informers; each controller module turns informer events into keys on a
workqueue and reconciles one key at a time. The pure decision modules
(`hpa_calc`, `rollout`, `ranking`, `job_calc`, `cron`, `node_health`, `ipam`)
hold the arithmetic, apart from any I/O, so they are tested with tables.
Nothing in this package may import the agent, the runtime, the API server or
the storage: controllers reach the cluster only through an ApiClient.
"""
