"""skiff's own actions and plugins, registered by name and extension point.

Volcano registers its actions in actions/factory.go and its plugins in
plugins/factory.go; this is both. `load(text)` reads a volcano-scheduler.conf
and checks it against this registry.
"""

from __future__ import annotations

from controlplane.scheduler.batch import actions, capacity, plugins
from controlplane.scheduler.batch import conf as batch_conf
from controlplane.scheduler.batch.registry import Registry
from controlplane.scheduler.batch.session import Point

P = Point


def registry() -> Registry:
    r = Registry()
    for name, execute in (
        ("enqueue", actions.enqueue),
        ("allocate", actions.allocate),
        ("preempt", actions.preempt),
        ("reclaim", actions.reclaim),
        ("backfill", actions.backfill),
    ):
        r.register_action(name, execute)
    r.register_plugin(
        "priority", (P.JOB_ORDER, P.TASK_ORDER, P.PREEMPTABLE), on_open=plugins.priority
    )
    r.register_plugin(
        "gang",
        (P.JOB_VALID, P.JOB_READY, P.JOB_PIPELINED, P.JOB_ORDER, P.PREEMPTABLE, P.RECLAIMABLE),
        on_open=plugins.gang,
    )
    r.register_plugin("conformance", (P.PREEMPTABLE, P.RECLAIMABLE), on_open=plugins.conformance)
    r.register_plugin("drf", (P.JOB_ORDER, P.PREEMPTABLE), on_open=plugins.drf)
    r.register_plugin(
        "proportion",
        (P.QUEUE_ORDER, P.OVERUSED, P.ALLOCATABLE, P.RECLAIMABLE, P.JOB_ENQUEUEABLE,
         P.JOB_ENQUEUED),
        on_open=plugins.proportion,
    )  # fmt: skip
    r.register_plugin("overcommit", (P.JOB_ENQUEUEABLE, P.JOB_ENQUEUED), on_open=plugins.overcommit)
    r.register_plugin(
        "capacity",
        (P.QUEUE_ORDER, P.ALLOCATABLE, P.JOB_ENQUEUEABLE, P.JOB_ENQUEUED, P.RECLAIMABLE,
         P.PREEMPTIVE),
        on_open=capacity.capacity,
    )  # fmt: skip
    r.register_plugin("sla", (P.JOB_ORDER, P.JOB_ENQUEUEABLE), on_open=plugins.sla)
    r.register_plugin("predicates", (P.PREDICATE,), build=plugins.predicates)
    r.register_plugin("nodeorder", (P.NODE_ORDER,), build=plugins.nodeorder)
    r.register_plugin("binpack", (P.NODE_ORDER,), build=plugins.binpack)
    return r


REGISTRY = registry()


def load(text: str) -> batch_conf.Conf:
    """A volcano-scheduler.conf read, its arguments and names checked (`ConfError`)."""
    return REGISTRY.check(batch_conf.validate(batch_conf.load(text)))
