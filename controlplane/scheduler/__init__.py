"""skiff's scheduler: kube-scheduler's framework and plugins over an array-backed cache.

Layout: `types.py` (Status, events, clock), `resources.py` (quantities,
pod requests), `podinfo.py` (a pod parsed once), `cache.py` (nodes, pods,
assumed pods as NumPy arrays), `framework.py` (extension points, filter/score
driver, explanations), `plugins/` (one module per plugin), `registry.py`
(name -> factory), `config.py` (YAML profiles), `queue.py` (active, backoff,
unschedulable), `scheduler.py` (the scheduling and binding cycles),
`binder.py` (where decisions are written), `run.py` (the control-plane
component: leader election, informers). Nothing here imports agent or runtime.
"""
