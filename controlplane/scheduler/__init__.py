"""skiff's scheduler: kube-scheduler's framework and plugins over an array-backed cache.

Layout, top layer first (the import-linter layers contract in pyproject):
`run.py` (the control-plane component: leader election, informers),
`scheduler.py` (the scheduling and binding cycles, and the plugins' Handle),
`events.py` (informer handlers) and `waiting.py` (pods waiting at Permit),
`profile.py` (profiles built from a config), `registry.py` (name -> factory),
`plugins/` (one module per plugin), `framework.py` (extension points,
filter/score driver), `handle.py` (what plugins may use of the scheduler),
`cache.py` (pods bound, assumed, nominated) over `nodetable.py` (nodes and
their pods as NumPy arrays), then `podinfo.py`, `queue.py`, `groups.py`,
`binder.py` (where decisions are written), `config.py` (YAML parsing only),
`names.py` (plugin names, default profile), `explain.py`, `resources.py`,
`types.py` (Status, events, the clock). Nothing here imports agent or runtime.
"""
