"""How a pod's containers add up to what the pod asks for, as Kubernetes'
component-helpers (resource.PodRequests) computes it for the kubelet and
the scheduler alike: the one home of that rule.

Regular containers add up. Init containers run one at a time before them,
so the pod needs at least the largest; a restartable init container
(restartPolicy Always, a native sidecar) keeps running, so it adds to every
later init container and to the regular containers. Overhead adds on top.

What a container asks for, and in which unit, is the caller's: the kubelet
counts cpu in cores with a request defaulting to its limit, the scheduler
millicores of the requests alone. Pure and cheap to import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

N = TypeVar("N", int, float)


def _add(total: dict[str, N], more: Mapping[str, N]) -> None:
    for name, v in more.items():
        total[name] = total.get(name, 0) + v


def _peak(total: dict[str, N], other: Mapping[str, N]) -> None:
    for name, v in other.items():
        total[name] = max(total.get(name, v * 0), v)  # v * 0: a zero in v's unit


def pod_total(
    spec: Mapping[str, Any],
    container: Callable[[Mapping[str, Any]], Mapping[str, N]],
    overhead: Mapping[str, N],
) -> dict[str, N]:
    """What the pod with `spec` asks for, given what each `container` asks
    for and the pod's `overhead`, by resource name (a resource some
    container names with 0 is in it with 0)."""
    total: dict[str, N] = {}
    for c in spec.get("containers") or ():
        _add(total, container(c))
    sidecars: dict[str, N] = {}
    init_peak: dict[str, N] = {}
    for c in spec.get("initContainers") or ():
        req = container(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            _peak(init_peak, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _peak(init_peak, step)
    _add(total, sidecars)
    _peak(total, init_peak)
    _add(total, overhead)
    return total
