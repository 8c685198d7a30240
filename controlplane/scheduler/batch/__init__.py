"""The batch scheduler (Volcano's model), beside the default scheduler.

It schedules pods whose `schedulerName` is `volcano`, a PodGroup (gang) at a
time: per session a snapshot of jobs and queues over the default scheduler's
cache (`session.py`), the actions of the configuration in order
(`actions.py`: enqueue, allocate, preempt, reclaim, backfill) and plugins in
tiers (`plugins.py`: priority, gang, conformance, drf, proportion,
predicates, nodeorder, binpack, overcommit). Placing a gang goes through a
`Statement` (`statement.py`) committed or discarded as a whole. Filters and
scores are the default scheduler's own plugins, run through a `Framework`
built with this scheduler's `Handle`. `conf.py` reads Volcano's
volcano-scheduler.conf; `scheduler.py` keeps the state fed by informers and
writes binds, evictions and PodGroup/Queue status; `run.py` is the
control-plane component (own leader election).
"""
