"""Volcano's queue controller: a Queue's state (Open, Closing, Closed).

A bus.volcano.sh Command targeting a Queue (vcctl or skiffctl `queue operate
--action open|close`) orders OpenQueue or CloseQueue; the Commands are taken
oldest first and deleted once the state they led to is stored. A closed
queue that still has unfinished PodGroups is Closing, and becomes Closed
when the last of them finishes or goes away; a state written as Closed
directly while PodGroups run becomes Closing too, as Volcano's queue
controller syncs it. A PodGroup is finished when Completed or when its
Volcano Job has finished (Completed, Failed, Aborted, Terminated). (Volcano
waits for the PodGroups to be deleted, which its Job controller does when
it kills a job; here a finished one no longer holds the queue.)

Queues form a hierarchy by `spec.parent` (none or `root`: top level), as
Volcano's queue controller keeps it: closing a queue closes each open child
too, marked `volcano.sh/closed-by-parent: "true"`; opening it again opens
the children it closed (the mark set back to "false"); a queue whose parent
is closed or closing cannot be opened (a Warning `OpenQueue` Event says
"Failed to open queue <q> because its parent queue <p> is closing or
closed. Open the parent queue first.") and is closed when created or moved
under a closed parent.

Admission refuses new Jobs and PodGroups for a queue that is not Open, and
the batch scheduler enqueues nothing from it; what runs keeps running. Only
`status.state` (and the closed-by-parent mark) is written, the state as a
merge patch of the status subresource: the counts in the status belong to
the batch scheduler.
"""

from __future__ import annotations

from controlplane.api import volcano
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers import podutil
from controlplane.controllers.base import Controller, ControllerContext
from controlplane.controllers.vccommands import CommandInbox

GROUP_QUEUE = "volcano/queue"  # PodGroup index: the queue it is in
QUEUE_PARENT = "volcano/parent"  # Queue index: its parent
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
ROOT = "root"
COMMAND_TARGET = "volcano/queue-command"  # Command index: the queue it targets
CLOSED = ("Closed", "Closing")
FINISHED = volcano.JOB_FINISHED


def _group_queue(group: Object) -> list[str]:
    return [str(podutil.spec(group).get("queue") or volcano.DEFAULT_QUEUE)]


def _queue_target(cmd: Object) -> list[str]:
    found = volcano.command_target(cmd)
    return [found[1]] if found is not None and found[0] == "Queue" else []


def parent_of(queue: Object) -> str:
    """The queue's parent, "" at the top level (no parent, or Volcano's `root`)."""
    parent = str(podutil.spec(queue).get("parent") or "")
    return "" if parent == ROOT else parent


def _queue_parent(queue: Object) -> list[str]:
    parent = parent_of(queue)
    return [parent] if parent else []


def _job_queue(job: Object) -> list[str]:
    return [str(podutil.spec(job).get("queue") or volcano.DEFAULT_QUEUE)]


def next_state(state: str, actions: list[str], busy: bool) -> str:
    """The state after `actions` (OpenQueue/CloseQueue, in order), given
    whether the queue has unfinished PodGroups."""
    for action in actions:
        state = "Open" if action == "OpenQueue" else "Closed"
    if state in CLOSED:
        return "Closing" if busy else "Closed"
    return state


class QueueController(Controller):
    name = "volcano-queue"
    default_workers = 2

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.queues = self.watch("Queue", {QUEUE_PARENT: _queue_parent})
        self.follow(self.queues, self._queue_changed, self._queue_changed)
        self.groups = self.watch("PodGroup", {GROUP_QUEUE: _group_queue})
        self.follow(self.groups, self._group_changed, self._group_changed)
        self.jobs = self.watch(volcano.JOB_KEY)
        self.follow(self.jobs, self._job_changed)
        self.commands = CommandInbox(self, COMMAND_TARGET, _queue_target)

    def _queue_changed(self, queue: Object) -> None:
        """A queue and its children (whose state may follow its own)."""
        self.enqueue(queue)
        for child in self.queues.store.by_index(QUEUE_PARENT, podutil.name_of(queue)):
            self.enqueue(child)

    def _group_changed(self, group: Object) -> None:
        for name in _group_queue(group):
            self.enqueue_key(name)

    def _job_changed(self, job: Object) -> None:
        phase = (podutil.status(job).get("state") or {}).get("phase")
        if phase in FINISHED:
            for name in _job_queue(job):
                self.enqueue_key(name)

    def _unfinished(self, group: Object) -> bool:
        if podutil.status(group).get("phase") == "Completed" or podutil.is_deleting(group):
            return False
        name = podutil.annotations_of(group).get(volcano.JOB_NAME)
        job = self.jobs.store.get(name, podutil.namespace_of(group)) if name else None
        return job is None or (podutil.status(job).get("state") or {}).get("phase") not in FINISHED

    def sync(self, key: str) -> float | None:
        queue = self.queues.store.get_by_key(key)
        if queue is None or podutil.is_deleting(queue):
            return None
        name = podutil.name_of(queue)
        commands = self.commands.pending(name)
        busy = any(self._unfinished(g) for g in self.groups.store.by_index(GROUP_QUEUE, name))
        state = str(podutil.status(queue).get("state") or "Open")
        actions = [str(c.get("action")) for c in commands]
        parent = self.queues.store.get(parent_of(queue)) if parent_of(queue) else None
        parent_closed = parent is not None and podutil.status(parent).get("state") in CLOSED
        marked = podutil.annotations_of(queue).get(CLOSED_BY_PARENT) == "true"
        if parent is not None and not commands:
            if parent_closed and state not in CLOSED:
                actions, marked = ["CloseQueue"], self._mark(queue, "true")
            elif not parent_closed and state in CLOSED and marked:
                actions = ["OpenQueue"]  # its parent closed it and is open again
        want = next_state(state, actions, busy)
        if want == "Open" and state != "Open" and parent_closed:
            assert parent is not None
            self.recorder.event(queue, "Warning", "OpenQueue",
                                f"Failed to open queue {name} because its parent queue "
                                f"{podutil.name_of(parent)} is closing or closed. "
                                "Open the parent queue first.")  # fmt: skip
            want = state
        if want != state:
            try:
                self.client.patch("Queue", name, {"status": {"state": want}}, None, "status")
            except errors.NotFound:
                return None
            if want == "Open" and marked:
                self._mark(queue, "false")
        if want in CLOSED:
            for child in self.queues.store.by_index(QUEUE_PARENT, name):
                if podutil.status(child).get("state") not in CLOSED:
                    self._mark(child, "true")
        for cmd in commands:
            self.commands.consume(cmd)
        return None

    def _mark(self, queue: Object, value: str) -> bool:
        """Set the closed-by-parent mark; whether it is "true" now."""
        if podutil.annotations_of(queue).get(CLOSED_BY_PARENT) != value:
            try:
                self.client.patch(
                    "Queue", podutil.name_of(queue),
                    {"metadata": {"annotations": {CLOSED_BY_PARENT: value}}}, None,
                )  # fmt: skip
            except errors.NotFound:
                pass
        return value == "true"


def init(ctx: ControllerContext) -> Controller:
    return QueueController(ctx)
