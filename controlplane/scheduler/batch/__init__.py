"""The batch scheduler (Volcano's model), beside the default scheduler.

It schedules pods whose `schedulerName` is `volcano`, a PodGroup (gang) at a
time. Its parts, one job each:

- `cache.py`: the informers' state (nodes and placed pods as the default
  scheduler's `Cache`, PodGroups, Queues, pending pods) and the per-group
  snapshots a session starts from (`snapshot.py`);
- `driver.py`: a session (`session.py`: jobs and queues from `info.py`, the
  plugins' functions by extension point) with the configuration's plugins
  in tiers and its actions in order (`actions.py`: enqueue, allocate,
  preempt, reclaim, backfill); placing a gang goes through a `Statement`
  (`statement.py`) committed or discarded as a whole;
- `binder.py`: binds and evictions; `status.py`: PodGroup and Queue status;
- `scheduler.py`: the loop that runs a session and writes what it decided;
  `run.py`: the control-plane component (own leader election).

Actions and plugins are registered by name and extension point
(`registry.py`; skiff's own in `builtin.py`: priority, gang, conformance,
drf, proportion, overcommit in `plugins.py`; capacity in `capacity.py`,
sharing its queue shares and reclaim victims with proportion
(`queueshare.py`); predicates, nodeorder and binpack add the default
scheduler's filters and scores, and binpack's own (`binpack.py`), to a
Framework, `nodeplugins.py`). `conf.py` reads Volcano's
volcano-scheduler.conf; `placement.py` judges a task template once per node.
"""
