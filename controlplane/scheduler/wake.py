"""A scheduler's term waits for its first work before it builds the scheduler.

A scheduler with nothing to place needs neither its cache (NumPy arrays over
the nodes), nor its plugins, nor the watches that feed them; `skiff up` at
rest runs both schedulers with no pod at all (issue 27: its memory at rest).
So a term first watches only the kinds that bring work (Pods; for the batch
scheduler PodGroups too) and returns once one such object exists. The term
then imports and builds its scheduler over the same informer factory: an
informer hands a handler added late every cached object as an add, so the
scheduler misses nothing and nothing is listed twice. Once awake, a scheduler
stays awake for the rest of its term.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from controlplane.client.informer import SharedInformerFactory
from controlplane.client.interface import Object

# How often waiting looks at the term's stop flag: work wakes it at once.
STOP_POLL = 0.2


def wait_for_work(
    factory: SharedInformerFactory,
    kinds: Sequence[str],
    stop: threading.Event,
    meanwhile: Callable[[], None] | None = None,
) -> bool:
    """Start `factory`'s informers (those for `kinds` and any made before) and
    block until an object of one of `kinds` exists (True) or `stop` is set
    (False, the informers stopped again: nothing else will use them, and a
    component's stop waits for their threads), calling `meanwhile()` every
    STOP_POLL seconds until then."""
    woken = threading.Event()

    def seen(obj: Object) -> None:
        woken.set()

    subscribed = []
    for kind in kinds:
        informer = factory.informer_for(kind)
        subscribed.append((informer, informer.add_event_handler(seen)))
    factory.start()
    try:
        while not woken.wait(STOP_POLL):
            if stop.is_set():
                factory.shutdown()
                return False
            if meanwhile is not None:
                meanwhile()
        return True
    finally:
        for informer, handler in subscribed:
            informer.remove_event_handler(handler)
