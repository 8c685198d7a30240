"""What a pod uses of a quota (controlplane/api/quota.py), against
Kubernetes' PodRequests/PodLimits (k8s.io/component-helpers/resource) and
the pod evaluator (pkg/quota/v1/evaluator/core/pods.go): containers add
up, an init container runs alone with the sidecars started before it,
overhead adds to requests and to the limits a container sets; quantities
are counted at Kubernetes' precision (rounded up to 1n)."""

from __future__ import annotations

from typing import Any

from controlplane.api import quota
from controlplane.api.kinds import by_kind
from controlplane.api.quantity import format_nanos, parse_nanos

POD = by_kind("Pod")


def container(name: str, sidecar: bool = False, **resources: dict[str, str]) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "busybox", "resources": resources}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def used(spec: dict[str, Any]) -> dict[str, str]:
    usage = quota.usage(POD, {"metadata": {"name": "p"}, "spec": spec})
    return usage.formatted(sorted(usage.values))


def test_init_containers_run_alone_with_the_sidecars_started_before_them() -> None:
    # Kubernetes: containers 100m + sidecars 200m + 300m = 600m; the init
    # steps: s1 alone 200m, i1 500m + s1 = 700m, s1 + s2 500m, i2 250m +
    # s1 + s2 = 750m; the pod asks for the largest, 750m.
    spec = {
        "containers": [container("c", requests={"cpu": "100m"})],
        "initContainers": [
            container("s1", sidecar=True, requests={"cpu": "200m"}),
            container("i1", requests={"cpu": "500m"}),
            container("s2", sidecar=True, requests={"cpu": "300m"}),
            container("i2", requests={"cpu": "250m"}),
        ],
    }
    assert used(spec)["requests.cpu"] == "750m"
    # A later init container's larger request wins the same way; an earlier
    # one's does not count the sidecars started after it.
    spec["initContainers"][1] = container("i1", requests={"cpu": "900m"})
    assert used(spec)["requests.cpu"] == "1100m"
    spec["initContainers"][1] = container("i1", requests={"cpu": "10m"})
    spec["initContainers"][3] = container("i2", requests={"cpu": "10m"})
    assert used(spec)["requests.cpu"] == "600m"


def test_a_resource_named_only_at_zero_by_an_init_container_is_counted() -> None:
    """maxResourceList keeps a zero it has not seen: the pod uses 0 of it
    (skiff's third copy of the rule left it out)."""
    spec = {
        "containers": [container("c", requests={"memory": "64Mi"})],
        "initContainers": [container("i", requests={"cpu": "0"})],
    }
    assert used(spec) == {"count/pods": "1", "cpu": "0", "memory": "64Mi", "pods": "1",
                          "requests.cpu": "0", "requests.memory": "64Mi"}  # fmt: skip


def test_overhead_adds_to_requests_and_to_the_limits_set() -> None:
    spec = {
        "containers": [
            container("c", requests={"cpu": "100m", "memory": "64Mi"}, limits={"memory": "128Mi"})
        ],
        "overhead": {"cpu": "10m", "memory": "16Mi"},
    }
    found = used(spec)
    assert (found["requests.cpu"], found["requests.memory"]) == ("110m", "80Mi")
    assert found["limits.memory"] == "144Mi"
    assert "limits.cpu" not in found


def test_quantities_count_at_kubernetes_precision() -> None:
    # resource.ParseQuantity rounds every quantity up to 1n.
    assert parse_nanos("1.0000000001") == 1_000_000_001
    assert parse_nanos(0.1) == 100_000_000  # a JSON number as written
    assert format_nanos(parse_nanos("1.5Gi"), binary=True) == "1536Mi"
    spec = {"containers": [container("a", requests={"cpu": "0.1"}),
                           container("b", requests={"cpu": "1n"})]}  # fmt: skip
    assert used(spec)["requests.cpu"] == "100000001n"


def test_missing_constraints_name_the_quotas_resources_and_sorted_containers() -> None:
    """As the pod evaluator's Constraints: each limited name of its
    validationSet (cpu is not requests.cpu), containers and init containers
    in name order; ephemeral-storage never required."""
    needed = quota.required({"cpu": 1, "limits.memory": 1, "ephemeral-storage": 1, "pods": 1})
    assert needed == ("cpu", "limits.memory")
    spec = {
        "containers": [container("b"), container("a", requests={"cpu": "1"})],
        "initContainers": [container("c", requests={"cpu": "1"}, limits={"memory": "1Gi"})],
    }
    assert quota.missing_constraints(needed, {"spec": spec}) == (
        "must specify cpu for: b; limits.memory for: a,b"
    )
    for c in spec["containers"]:
        c["resources"] = {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}}
    assert quota.missing_constraints(needed, {"spec": spec}) == ""
