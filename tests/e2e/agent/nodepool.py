"""One node per runtime kind, kept for the tests of a module, one at a time
(every test node serves the run's cluster DNS address, so two agents cannot
run side by side; `runtime_kind` is module-scoped, so pytest runs a module's
tests grouped by runtime kind).

Starting a node (runtime, agent, CNI set-up, registration) costs about
3 CPU seconds; most tests only need a working node with nothing on it.
The pool hands out the node of a runtime kind, and after each test deletes
the node's pods and waits until the runtime holds no sandbox and no pod
cgroup is left, as a fresh node would be. A node whose test failed, whose
agent or runtime is no longer running or Ready, or that does not drain in
time is removed at once (its cleanup as for a fresh node) and the next test
gets a new one: no test sees another's pods or failures.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from agent.pod_cgroups import cgroup_mounts
from controlplane.client.apiclient import GrpcApiClient
from tests.e2e.agent.helpers import delete_node_pods, dump
from tests.harness.nodeprocs import Node, RuntimeKind, alive, running_node
from tests.harness.wait import WaitTimeout, wait_for

DRAIN_TIMEOUT = 30.0


def node_is_ready(admin: GrpcApiClient, n: Node) -> bool:
    node = admin.get("Node", n.spec.name)
    conds = {c["type"]: c["status"] for c in (node.get("status") or {}).get("conditions") or []}
    return conds.get("Ready") == "True"


def pod_cgroups(n: Node) -> list[Path]:
    """The pods' own cgroups left under the node's pod cgroup root, in every hierarchy."""
    root = n.pod_cgroup_root.strip("/")
    return [d for m in cgroup_mounts() for d in (m / root).glob("**/pod*") if d.is_dir()]


def drained(n: Node) -> bool:
    """Whether the node's runtime holds no sandbox and no pod cgroup is left."""
    cri = n.cri()
    try:
        return not cri.list_pod_sandboxes() and not pod_cgroups(n)
    finally:
        cri.close()


@dataclass
class NodePool:
    server: str
    cp_data_dir: Path
    registry_url: str
    admin: GrpcApiClient
    _nodes: dict[RuntimeKind, tuple[ExitStack, Node]] = field(default_factory=dict)

    def _healthy(self, n: Node) -> bool:
        if n.agent is None or not n.agent.running() or not alive(n.runtime_pid):
            return False
        try:
            return node_is_ready(self.admin, n)
        except Exception:  # the Node object is gone or unreadable: replace it
            return False

    def get(self, kind: RuntimeKind) -> Node:
        for other in [k for k in self._nodes if k != kind]:
            self.discard(other)  # one node at a time: they share the run's DNS address
        held = self._nodes.get(kind)
        if held is not None and not self._healthy(held[1]):
            self.discard(kind)
            held = None
        if held is not None:
            return held[1]
        stack = ExitStack()
        try:
            n = stack.enter_context(
                running_node(self.server, self.cp_data_dir, kind, self.registry_url)
            )
            try:
                n.wait_ready(self.admin)
            except BaseException:
                dump(self.admin, n)
                raise
        except BaseException:
            stack.close()
            raise
        self._nodes[kind] = (stack, n)
        return n

    def release(self, kind: RuntimeKind, failed: bool) -> None:
        """After a test: dump the node if the test failed, delete its pods,
        and keep it only if the test passed and it drains in time."""
        held = self._nodes.get(kind)
        if held is None:
            return
        n = held[1]
        keep = False
        try:
            if failed:
                dump(self.admin, n)
            delete_node_pods(self.admin, n.spec.name)
            if not failed:
                wait_for(lambda: drained(n), timeout=DRAIN_TIMEOUT, message="node drained")
                keep = True
        except WaitTimeout:
            pass  # replaced below; the next test gets a fresh node
        finally:
            if not keep:
                self.discard(kind)

    def discard(self, kind: RuntimeKind) -> None:
        held = self._nodes.pop(kind, None)
        if held is not None:
            held[0].close()

    def close(self) -> None:
        errors_seen: list[BaseException] = []
        for kind in list(self._nodes):
            try:
                self.discard(kind)
            except BaseException as exc:  # clean every node, report after
                errors_seen.append(exc)
        if errors_seen:
            raise errors_seen[0]
