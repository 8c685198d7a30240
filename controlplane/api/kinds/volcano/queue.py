"""Volcano's Queue (scheduling.volcano.sh/v1beta1, cluster-scoped): its validation and admission.

Validation (Volcano's CRD schema, queue policy and webhook, in their
words): a weight >= 1; capability, deserved and guarantee are resource
quantities >= 0 with guarantee <= deserved <= capability per resource (a
guaranteed resource must be deserved; one not in capability is not limited
there); the hierarchy annotations come together, with as many weights > 0
as path parts; reclaimable is a boolean; the state is one of Volcano's.
Admission (Volcano's queue webhook): a queue's `spec.parent` (none or
`root`: the top) is not itself, exists, and keeps the tree's resources in
order (queue_tree.py); its hierarchy path is no prefix of another queue's; on DELETE, `default` and `root` stay and a queue with
child queues is refused. `check_open` and
`children` serve the Job's and PodGroup's admission: the queue they name
must exist and be Open, and a Job's must be a leaf. Defaults (weight 1,
reclaimable, Open): controlplane/api/volcano.py's. Columns: NAME WEIGHT
STATE INQUEUE PENDING RUNNING AGE.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from controlplane.api import volcano
from controlplane.api.checks import Errors, go_value
from controlplane.api.display import age, name, spec, status
from controlplane.api.kinds.definition import AdmissionApi, KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.volcano import queue_tree
from controlplane.api.quantity import format_quantity, is_binary, parse_quantity
from controlplane.client.errors import Invalid, NotFound

Object = dict[str, Any]
ROOT = queue_tree.ROOT  # Volcano's top of the queue hierarchy


HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
WEIGHT_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def _quantities(e: Errors, path: str, value: Any) -> dict[str, tuple[Fraction, str]]:
    """name -> (amount, as Kubernetes writes it) of a resource list; errors
    for what is not a quantity >= 0 (ValidateResourceQuantityValue's words)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        e.add(path, "must be an object of resource quantities")
        return {}
    out: dict[str, tuple[Fraction, str]] = {}
    for key, raw in value.items():
        try:
            amount = parse_quantity(raw)
        except ValueError as err:
            e.add(f"{path}.{key}", str(err))
            continue
        if amount < 0:
            e.invalid(f"{path}.{key}", str(raw), "must be greater than or equal to 0")
            continue
        out[str(key)] = (amount, format_quantity(amount, is_binary(raw)))
    return out


def _resource_order(e: Errors, spec: Object) -> None:
    """Volcano's validateResourceQuantityOfQueue: guarantee <= deserved <=
    capability, resource by resource (one not in capability is not limited
    there; one guaranteed must be deserved)."""
    capability = _quantities(e, "spec.capability", spec.get("capability"))
    deserved = _quantities(e, "spec.deserved", spec.get("deserved"))
    guarantee: dict[str, tuple[Fraction, str]] = {}
    raw = spec.get("guarantee")
    if raw is not None:
        if not isinstance(raw, dict):
            e.add("spec.guarantee", "must be an object with `resource`")
        else:
            guarantee = _quantities(e, "spec.guarantee.resource", raw.get("resource"))
    for res, (amount, text) in guarantee.items():
        if res not in deserved:
            e.invalid(f"spec.deserved.{res}", "<nil>",
                      f"deserved[{res}] must be >= guarantee[{res}]={text}")  # fmt: skip
        elif deserved[res][0] < amount:
            have = deserved[res][1]
            e.invalid(f"spec.deserved.{res}", have,
                      f"deserved[{res}]={have} must be >= guarantee[{res}]={text}")  # fmt: skip
    for res, (amount, text) in deserved.items():
        if res in capability and amount > capability[res][0]:
            limit = capability[res][1]
            e.invalid(f"spec.deserved.{res}", text,
                      f"deserved[{res}]={text} must be <= capability[{res}]={limit}")  # fmt: skip


def _hierarchy(e: Errors, obj: Object) -> None:
    """Volcano's hierarchy annotations (its queue policy's and webhook's
    rules): both or neither, as many weights as path parts, each a number > 0."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    path, weights = annotations.get(HIERARCHY) or "", annotations.get(HIERARCHY_WEIGHTS) or ""
    if not path and not weights:
        return
    where = "metadata.annotations"
    if not path or not weights or len(path.split("/")) != len(weights.split("/")):
        e.invalid(where, path, f"{HIERARCHY} must have the same length with {HIERARCHY_WEIGHTS}")
        return
    for weight in weights.split("/"):
        number = float(weight) if WEIGHT_NUMBER.match(weight.lstrip("-")) else None
        if number is None:
            e.invalid(where, weights, f"{weight} in the {weights} is invalid number: "
                                      f'strconv.ParseFloat: parsing "{weight}": invalid syntax')  # fmt: skip
            return
        if number <= 0:
            e.invalid(where, weights, f"{weight} in the {weights} must be larger than 0")
            return


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        e.add("spec", "must be an object")
        return
    weight = spec.get("weight")
    if weight is not None:
        if isinstance(weight, bool) or not isinstance(weight, int):
            e.add("spec.weight", f"must be an integer, not {weight!r}")
        elif weight < 1:  # Volcano's CRD schema: minimum 1
            e.invalid("spec.weight", weight,
                      "spec.weight in body should be greater than or equal to 1")  # fmt: skip
    _resource_order(e, spec)
    if "reclaimable" in spec and not isinstance(spec["reclaimable"], bool):
        e.add("spec.reclaimable", "must be a boolean")
    parent = spec.get("parent")
    if parent is not None and not isinstance(parent, str):
        e.add("spec.parent", "must be a queue name")
    _hierarchy(e, obj)
    state = (obj.get("status") or {}).get("state")
    if state is not None and state not in volcano.QUEUE_STATES:
        e.add("status.state",
              f"unsupported value {state!r}: supported: {', '.join(volcano.QUEUE_STATES)}")  # fmt: skip


def children(api: AdmissionApi, name: str) -> list[str]:
    """The queues whose parent is `name`."""
    return [
        str(q["metadata"]["name"])
        for q in api.cached_objects("Queue")
        if (q.get("spec") or {}).get("parent") == name
    ]


def check_open(api: AdmissionApi, field: str, name: str, podgroup: bool = False) -> None:
    """The queue exists and is Open, in the words of Volcano's job webhook
    (or, `podgroup`, of its PodGroup webhook's checkQueueState)."""
    try:
        queue = api.get_object("Queue", name, None)
    except NotFound as err:
        raise Invalid(f"{field}: unable to find {'' if podgroup else 'job '}queue: {err}") from None
    state = (queue.get("status") or {}).get("state") or "Open"
    if state != "Open":
        raise Invalid(f"{field}: can only submit {'PodGroup' if podgroup else 'job'} to queue "
                      f"with state `Open`, queue `{name}` status is `{state}`"
                      f"{'.' if podgroup else ''}")  # fmt: skip


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    """Volcano's queue webhook: a hierarchy annotation is no prefix of another
    queue's; the parent and the resources within the tree (queue_tree.py)."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    path = ((obj.get("metadata") or {}).get("annotations") or {}).get(HIERARCHY)
    if path:
        for other in api.cached_objects("Queue"):
            meta = other.get("metadata") or {}
            theirs = (meta.get("annotations") or {}).get(HIERARCHY) or ""
            if meta.get("name") != name and theirs.startswith(path + "/"):
                raise Invalid(f"metadata.annotations: Invalid value: {go_value(path)}: {path} is "
                              f"not allowed to be in the sub path of {theirs} of queue "
                              f"{meta.get('name')}")  # fmt: skip
    spec, before = obj.get("spec") or {}, (old or {}).get("spec") or {}
    if old is None or spec.get("parent") != before.get("parent"):
        queue_tree.check_parent(api, obj)
    if name != ROOT and (old is None or any(
            spec.get(f) != before.get(f) for f in ("parent", "capability", "deserved", "guarantee"))):  # fmt: skip
        queue_tree.check_resources(api, obj)


def admit_delete(api: AdmissionApi, info: KindInfo, stored: Object) -> None:
    """Volcano's validateQueueDeleting: `default` and `root` stay; a queue
    with child queues goes after them."""
    name = str((stored.get("metadata") or {}).get("name") or "")
    if name in (volcano.DEFAULT_QUEUE, ROOT):
        raise Invalid(f"`{name}` queue can not be deleted")
    kids = children(api, name)
    if kids:
        raise Invalid(f"queue {name} can not be deleted because it has {len(kids)} child "
                      f"queues: {', '.join(kids)}")  # fmt: skip


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    return [
        name(obj),
        str(spec(obj).get("weight", 1)),
        str(st.get("state") or "Open"),
        *(str(st.get(k) or 0) for k in ("inqueue", "pending", "running")),
        age(obj, now),
    ]


DEFINITION = KindDef(
    KindInfo(
        "Queue",
        "scheduling.volcano.sh/v1beta1",
        short_names=("q", "queue-v1beta1"),
        namespaced=False,
    ),
    defaults=volcano.default_queue,
    validate=validate,
    admit=admit,
    admit_delete=admit_delete,
    printer=Printer(
        columns(("NAME", "WEIGHT", "STATE", "INQUEUE", "PENDING", "RUNNING", "AGE")), row
    ),
)
