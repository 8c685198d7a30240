"""Volcano's queue webhook on the hierarchy (`spec.parent`), in its words.

validateHierarchicalQueue (on create, or when the parent changes): a queue
is not its own parent, the tree is at most MAX_DEPTH deep (its
`--max-queue-depth`, 5), the parent exists, and a parent without children
yet has no allocated pods. validateHierarchicalQueueResources (on create,
or when the parent, capability, deserved or guarantee change; never for
`root`): a queue's capability is within its nearest ancestor's that sets
it, its siblings' and its guarantee and deserved sum within the parent's,
and, as a parent, its capability covers its descendants' largest and its
children's guarantee and deserved sum within its own.

Resources are compared as Volcano's scheduler holds them (api.Resource:
cpu in millicores, memory in bytes, pods as a count, others in milli
units), and printed as its Resource.String() and formatResourceWithType.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.kinds.definition import AdmissionApi
from controlplane.api.quantity import format_quantity, parse_quantity
from controlplane.client.errors import Invalid, NotFound

Object = dict[str, Any]
ROOT = "root"
MAX_DEPTH = 5
MIN_RESOURCE = 0.1  # Volcano's minResource: less counts as unset
Res = dict[str, float]


def resource(rl: Any) -> Res:
    """api.NewResource: a resource list in Volcano's scheduler units."""
    out: Res = {}
    if not isinstance(rl, dict):
        return out
    for name, raw in rl.items():
        if str(name).startswith("count/"):
            continue
        try:
            value = parse_quantity(raw)
        except ValueError:
            continue
        unit = 1 if name in ("memory", "pods") else 1000
        out[str(name)] = out.get(str(name), 0.0) + float(-((-value * unit) // 1))
    return out


def _string(r: Res) -> str:
    """Volcano's Resource.String()."""
    text = f"cpu {r.get('cpu', 0.0):0.2f}, memory {r.get('memory', 0.0):0.2f}"
    return text + "".join(
        f", {n} {v:0.2f}" for n, v in sorted(r.items()) if n not in ("cpu", "memory")
    )


def _with_type(name: str, value: float) -> str:
    """Volcano's formatResourceWithType."""
    if name == "cpu":
        return format_quantity(parse_quantity(f"{int(value)}m"))
    if name == "memory":
        return format_quantity(parse_quantity(str(int(value))), binary=True)
    return f"{value:0.2f}"


def _less_partly(limit: Res, total: Res) -> bool:
    """limit.LessPartly(total, Zero): short of it in some dimension."""
    return any(limit.get(n, 0.0) < v for n, v in total.items()) or any(
        n not in limit and n not in ("cpu", "memory") for n in total
    )


def _spec(q: Object) -> Object:
    spec = q.get("spec")
    return spec if isinstance(spec, dict) else {}


def _guarantee(q: Object) -> Res:
    g = _spec(q).get("guarantee")
    return resource(g.get("resource")) if isinstance(g, dict) else {}


class Tree:
    """The stored queues, by name and by parent."""

    def __init__(self, api: AdmissionApi) -> None:
        self.api = api
        self.queues = {str(q["metadata"]["name"]): q for q in api.cached_objects("Queue")}

    def get(self, name: str) -> Object:
        q = self.queues.get(name)
        if q is None:
            return self.api.get_object("Queue", name, None)  # raises NotFound
        return q

    def children(self, name: str) -> list[Object]:
        return [q for q in self.queues.values() if _spec(q).get("parent") == name]

    def ancestor_capability(self, q: Object, res: str) -> float | None:
        parent = _spec(q).get("parent")
        seen = 0
        while parent and parent != ROOT and seen <= MAX_DEPTH:
            try:
                pq = self.get(str(parent))
            except NotFound:
                return None
            value = resource(_spec(pq).get("capability")).get(res, 0.0)
            if value > 0:
                return value
            parent, seen = _spec(pq).get("parent"), seen + 1
        return None

    def subtree_max_capability(self, q: Object, res: str, depth: int = 0) -> float:
        value = resource(_spec(q).get("capability")).get(res, 0.0)
        if value > 0 or depth > MAX_DEPTH:
            return value
        name = str(q["metadata"]["name"])
        return max((self.subtree_max_capability(c, res, depth + 1)
                    for c in self.children(name)), default=0.0)  # fmt: skip


def check_parent(api: AdmissionApi, queue: Object) -> None:
    """validateHierarchicalQueue."""
    name = str(queue["metadata"].get("name") or "")
    parent = _spec(queue).get("parent")
    if not parent or parent == ROOT:
        return
    if parent == name:
        raise Invalid(f"spec.parent: queue {name} cannot use itself as parent")
    tree = Tree(api)
    depth, up = 1, parent
    while up and up != ROOT:
        depth += 1
        if depth > MAX_DEPTH:
            raise Invalid(f"spec.parent: queue {name} exceeds the maximum allowed depth of "
                          f"{MAX_DEPTH}")  # fmt: skip
        try:
            up = _spec(tree.get(str(up))).get("parent")
        except NotFound as err:
            raise Invalid(f"spec.parent: failed to get parent queue {up} of queue {name}: "
                          f"{err}") from None  # fmt: skip
    try:
        pq = tree.get(str(parent))
    except NotFound as err:
        raise Invalid(f"spec.parent: failed to get parent queue of queue {name}: {err}") from None
    if not tree.children(str(parent)):
        allocated = ((pq.get("status") or {}).get("allocated") or {}).get("pods")
        pods = resource({"pods": allocated}).get("pods", 0.0) if allocated is not None else 0.0
        if pods:
            raise Invalid(f"spec.parent: queue {parent} cannot be the parent queue of queue "
                          f"{name} because it has allocated Pods: {int(pods)}")  # fmt: skip


def check_resources(api: AdmissionApi, queue: Object) -> None:
    """validateHierarchicalQueueResources."""
    name = str(queue["metadata"].get("name") or "")
    tree = Tree(api)
    parent = _spec(queue).get("parent")
    if parent and parent != ROOT:
        try:
            pq = tree.get(str(parent))
        except NotFound as err:
            raise Invalid(f"spec.parent: parent queue {parent} not found: {err}") from None
        for res, mine in resource(_spec(queue).get("capability")).items():
            limit = tree.ancestor_capability(queue, res)
            if mine >= MIN_RESOURCE and limit is not None and mine > limit:
                raise Invalid(f"spec.capability: queue {name} capability[{res}]="
                              f"{_with_type(res, mine)} exceeds its ancestor's capability="
                              f"{_with_type(res, limit)}")  # fmt: skip
        siblings = [q for q in tree.children(str(parent)) if q["metadata"]["name"] != name]
        _sums(f"parent queue {parent}", pq, [*siblings, queue])
    children = tree.children(name)
    if not children:
        return
    capability = resource(_spec(queue).get("capability"))
    for res, value in capability.items():
        if value < MIN_RESOURCE:
            continue
        most = max(tree.subtree_max_capability(c, res) for c in children)
        if value < most:
            raise Invalid(f"spec.capability: queue {name} capability[{res}]="
                          f"{_with_type(res, value)} is smaller than its descendants' max "
                          f"capability={_with_type(res, most)}")  # fmt: skip
    _sums(f"queue {name}", queue, children)


def _sums(who: str, parent: Object, children: list[Object]) -> None:
    """The children's guarantee and deserved, summed in order, within the parent's."""
    limits = (("guarantee", _guarantee(parent), _guarantee),
              ("deserved", resource(_spec(parent).get("deserved")),
               lambda q: resource(_spec(q).get("deserved"))))  # fmt: skip
    totals: dict[str, Res] = {"guarantee": {}, "deserved": {}}
    for child in children:
        for field, limit, of in limits:
            total = totals[field]
            for n, v in of(child).items():
                total[n] = total.get(n, 0.0) + v
            if _less_partly(limit, total):
                raise Invalid(f"spec.{field}: {who} validation failed: sum of children's "
                              f"{field} ({_string(total)}) exceeds parent's {field} limit "
                              f"({_string(limit)})")  # fmt: skip
