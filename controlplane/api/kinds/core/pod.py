"""Pod (v1).

- Validation: the pod spec (shared/podspec.py, its results kept by the
  spec's JSON: a ReplicaSet's pods share one spec, and a pod's spec is
  checked again on every status update), status.phase; on update nodeName
  is immutable once bound and containers may not be added or removed.
- Defaults: the pod spec's, and the DefaultTolerationSeconds tolerations
  (not-ready and unreachable nodes for 300 s).
- Admission on create: the ServiceAccount plugin (serviceaccounts.py), the
  status (Pending with its QoS class), the priority from
  spec.priorityClassName or the global default PriorityClass.
- Columns: NAME READY STATUS RESTARTS AGE; wide adds IP NODE NOMINATED NODE
  READINESS GATES, as kubectl prints them.
"""

from __future__ import annotations

from typing import Any

from controlplane.api import ephemeral, jsoncodec, serviceaccounts, volcano
from controlplane.api.checks import Errors, enum, mapping
from controlplane.api.display import NONE, age, meta, name, spec, status
from controlplane.api.kinds.definition import (
    AdmissionApi,
    KindDef,
    Printer,
    Subresource,
    columns,
)
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.scheduling.priorityclass import SYSTEM_PRIORITY_CLASSES
from controlplane.api.kinds.shared import podspec, podspec_schema
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import POD_STATUS, facts
from controlplane.api.kinds.volcano import pod_budget
from controlplane.api.qos import qos_class
from controlplane.api.schema import CORE, declare, struct
from controlplane.client.errors import Forbidden, NotFound

Object = dict[str, Any]

# ---- validation -----------------------------------------------------------------------

# The problems of pod specs seen lately, by their JSON.
_SPEC_PROBLEMS: dict[bytes, list[str]] = {}
_SPEC_PROBLEMS_MAX = 1024


def _spec_problems(pod_spec: Any) -> list[str]:
    key = jsoncodec.dumps(pod_spec)
    problems = _SPEC_PROBLEMS.get(key)
    if problems is None:
        found = Errors()
        podspec.validate(found, "spec", pod_spec)
        problems = found.items
        if len(_SPEC_PROBLEMS) >= _SPEC_PROBLEMS_MAX:
            _SPEC_PROBLEMS.clear()
        _SPEC_PROBLEMS[key] = problems
    return problems


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    e.items.extend(_spec_problems(obj.get("spec")))
    # Native sidecars and ephemeral containers (controlplane/api/ephemeral.py).
    for path, problem in ephemeral.init_container_problems(obj) + ephemeral.ephemeral_problems(obj):
        e.add(path, problem)
    if old is not None:
        for path, problem in ephemeral.ephemeral_update_problems(old, obj):
            e.add(path, problem)
    pod_status: Any = obj.get("status")
    if mapping(e, "status", pod_status):
        enum(e, "status.phase", pod_status.get("phase"),
             ("Pending", "Running", "Succeeded", "Failed", "Unknown"))  # fmt: skip
    if old is not None:
        new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        old_node: Any = old_spec.get("nodeName")
        if old_node and new_spec.get("nodeName") != old_node:
            e.add("spec.nodeName", "field is immutable once the pod is bound")
        old_names = [c.get("name") for c in old_spec.get("containers") or []]
        new_names = [c.get("name") for c in new_spec.get("containers") or [] if isinstance(c, dict)]
        if old_names != new_names:
            e.add("spec.containers", "pod updates may not add or remove containers")


# ---- defaults -------------------------------------------------------------------------


def defaults(obj: Object) -> None:
    pod_spec = child(obj, "spec")
    podspec.defaults(pod_spec)
    # DefaultTolerationSeconds: tolerate a not-ready/unreachable node for 300 s.
    tolerations = pod_spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        keys = {t.get("key") for t in tolerations if isinstance(t, dict)}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if key not in keys:
                tolerations.append(
                    {"key": key, "operator": "Exists", "effect": "NoExecute",
                     "tolerationSeconds": 300}
                )  # fmt: skip


# ---- admission ------------------------------------------------------------------------


def admit(api: AdmissionApi, info: KindInfo, obj: Object, old: Object | None) -> None:
    if old is not None:
        return
    pod_budget.admit(obj, (volcano.SCHEDULER_NAME,))  # Volcano's pod webhook
    serviceaccounts.admit(obj)
    pod_spec = obj.setdefault("spec", {})
    obj["status"] = {"phase": "Pending", "qosClass": str(qos_class(obj))}
    class_name = pod_spec.get("priorityClassName")
    value: int | None = None
    policy: str | None = None
    if class_name:
        if class_name in SYSTEM_PRIORITY_CLASSES:
            value = SYSTEM_PRIORITY_CLASSES[class_name]
        try:
            pc = api.get_object("PriorityClass", str(class_name))
            value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
        except NotFound as err:
            if value is None:
                raise Forbidden(f"no PriorityClass with name {class_name} was found") from err
    else:
        for pc in api.cached_objects("PriorityClass"):
            if pc.get("globalDefault"):
                pod_spec["priorityClassName"] = pc["metadata"]["name"]
                value, policy = int(pc.get("value", 0)), pc.get("preemptionPolicy")
                break
    if value is None:
        value = 0
    if pod_spec.get("priority") is not None and pod_spec["priority"] != value:
        raise Forbidden(
            "the integer value of priority "
            f"({pod_spec['priority']}) must not be provided in pod spec; priority admission "
            f"controller computed {value} from the given PriorityClass name"
        )
    pod_spec["priority"] = value
    if policy:
        pod_spec.setdefault("preemptionPolicy", policy)


# ---- columns --------------------------------------------------------------------------


def status_reason(pod: Object) -> str:
    """The STATUS column kubectl computes: phase, reason, waiting/terminated reasons, Terminating."""
    st = status(pod)
    reason = str(st.get("reason") or st.get("phase") or "Pending")
    init_statuses = st.get("initContainerStatuses") or []
    init_total = len(spec(pod).get("initContainers") or [])
    sidecars = _sidecar_names(pod)
    initializing = False
    for i, cs in enumerate(init_statuses):
        if cs.get("name") in sidecars and cs.get("started"):
            continue  # a native sidecar that has started
        state = cs.get("state") or {}
        term = state.get("terminated")
        if term and term.get("exitCode") == 0:
            continue
        initializing = True
        if term:
            reason = f"Init:{term.get('reason') or 'Error'}"
        elif (state.get("waiting") or {}).get("reason") not in (None, "", "PodInitializing"):
            reason = f"Init:{state['waiting']['reason']}"
        else:
            reason = f"Init:{i}/{init_total}"
        break
    initialized = any(
        c.get("type") == "Initialized" and c.get("status") == "True"
        for c in st.get("conditions") or []
    )
    if not initializing or initialized:
        has_running = False
        for cs in reversed(st.get("containerStatuses") or []):
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            term = state.get("terminated") or {}
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif term.get("reason"):
                reason = str(term["reason"])
            elif term:
                sig = term.get("signal")
                reason = f"Signal:{sig}" if sig else f"ExitCode:{term.get('exitCode', 0)}"
            elif state.get("running") and cs.get("ready"):
                has_running = True
        if reason == "Completed" and has_running:
            reason = "Running"
    if meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if st.get("reason") == "NodeLost" else "Terminating"
    return reason


def _sidecar_names(pod: Object) -> set[str]:
    return {
        str(c.get("name"))
        for c in spec(pod).get("initContainers") or []
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    }


def row(obj: Object, now: float, wide: bool) -> list[str]:
    st = status(obj)
    sidecars = _sidecar_names(obj)
    # As kubectl's printer: native sidecars count in READY and RESTARTS.
    side = [c for c in st.get("initContainerStatuses") or [] if c.get("name") in sidecars]
    statuses = [*side, *(st.get("containerStatuses") or [])]
    ready = sum(1 for c in statuses if c.get("ready"))
    total = (len(spec(obj).get("containers") or []) + len(sidecars)) or len(statuses)
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    cells = [name(obj), f"{ready}/{total}", status_reason(obj), str(restarts), age(obj, now)]
    if wide:
        gates = spec(obj).get("readinessGates") or []
        cells += [
            str(st.get("podIP") or NONE),
            str(spec(obj).get("nodeName") or NONE),
            str(st.get("nominatedNodeName") or NONE),
            f"{len(gates)}/{len(gates)}" if gates else NONE,
        ]
    return cells


_STATUSES_NOTE = (
    " Each {0}container in the pod should have at most one status in this list, and all"
    " statuses should be for containers in the pod. However this is not enforced. If a status"
    " for a non-existent container is present in the list, or the list has duplicate names, the"
    " behavior of various Kubernetes components is not defined and those statuses might be"
    " ignored. More info: https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle"
    "{1}#pod-and-container-status"
)
# PodStatus field by field, with Kubernetes' descriptions (kubectl explain
# po.status.message); the containers' statuses stay free-form.
POD_STATUS_TYPE = struct(
    CORE,
    "PodStatus represents information about the status of a pod. Status may trail the actual"
    " state of a system, especially if the node that hosts the pod cannot contact the control"
    " plane.",
    observedGeneration=("integer", "If set, this represents the .metadata.generation that the"
                        " pod status was set based upon. This is an alpha field. Enable"
                        " PodObservedGenerationTracking to be able to use this field."),
    phase=("string", "The phase of a Pod is a simple, high-level summary of where the Pod is in"
           " its lifecycle. The conditions array, the reason and message fields, and the"
           " individual container status arrays contain more detail about the pod's status."
           " There are five possible phase values: Pending, Running, Succeeded, Failed and"
           " Unknown. More info:"
           " https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#pod-phase"),
    conditions=("[]object", "Current service state of pod. More info:"
                " https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#pod-conditions"),
    message=("string", "A human readable message indicating details about why the pod is in"
             " this condition."),
    reason=("string", "A brief CamelCase message indicating details about why the pod is in"
            " this state. e.g. 'Evicted'"),
    nominatedNodeName=("string", "nominatedNodeName is set only when this pod preempts other"
                       " pods on the node, but it cannot be scheduled right away as preemption"
                       " victims receive their graceful termination periods. This field does not"
                       " guarantee that the pod will be scheduled on this node."),
    hostIP=("string", "hostIP holds the IP address of the host to which the pod is assigned."
            " Empty if the pod has not started yet."),
    hostIPs=("[]object", "hostIPs holds the IP addresses allocated to the host. If this field"
             " is specified, the first entry must match the hostIP field. This list is empty if"
             " the pod has not started yet."),
    podIP=("string", "podIP address allocated to the pod. Routable at least within the"
           " cluster. Empty if not yet allocated."),
    podIPs=("[]object", "podIPs holds the IP addresses allocated to the pod. If this field is"
            " specified, the 0th entry must match the podIP field. Pods may be allocated at most"
            " 1 value for each of IPv4 and IPv6. This list is empty if no IPs have been"
            " allocated yet."),
    startTime=("time", "RFC 3339 date and time at which the object was acknowledged by the"
               " Kubelet. This is before the Kubelet pulled the container image(s) for the pod."),
    initContainerStatuses=("[]object", "Statuses of init containers in this pod. The most"
                           " recent successful non-restartable init container will have ready"
                           " = true, the most recently started container will have startTime"
                           " set." + _STATUSES_NOTE.format("init ", "/")),
    containerStatuses=("[]object", "Statuses of containers in this pod."
                       + _STATUSES_NOTE.format("", "")),
    qosClass=("string", "The Quality of Service (QOS) classification assigned to the pod based"
              " on resource requirements See PodQOSClass type for available QOS classes More"
              " info: https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/"
              "#quality-of-service-classes"),
    ephemeralContainerStatuses=("[]object", "Statuses for any ephemeral containers that have"
                                " run in this pod." + _STATUSES_NOTE.format("ephemeral ", "/")),
    resize=("string", "Status of resources resize desired for pod's containers. It is empty if"
            " no resources resize is pending. Deprecated: Resize status is moved to two pod"
            " conditions PodResizePending and PodResizeInProgress."),
    resourceClaimStatuses=("[]object", "Status of resource claims."),
)  # fmt: skip


DEFINITION = KindDef(
    KindInfo("Pod", "v1", short_names=("po",), categories=("all",)),
    types={
        **podspec_schema.TYPES,
        **declare(
            CORE,
            """
            Pod [v1 Pod]: Pod is a collection of containers that can run on a host.
                spec    PodSpec
                status  PodStatus
            """,
        ),
        "PodStatus": POD_STATUS_TYPE,
    },
    defaults=defaults,
    validate=validate,
    admit=admit,
    printer=Printer(
        columns(
            ("NAME", "READY", "STATUS", "RESTARTS", "AGE"),
            ("IP", "NODE", "NOMINATED NODE", "READINESS GATES"),
        ),
        row,
    ),
    patch_meta=facts("spec", POD_STATUS),
    subresources=(
        Subresource("binding", ("create",), "", "v1", "Binding"),
        Subresource("eviction", ("create",), "policy", "v1", "Eviction"),
        Subresource("log", ("get",), "", "", "Pod"),
        Subresource("exec", ("create", "get"), "", "", "PodExecOptions"),
        Subresource("attach", ("create", "get"), "", "", "PodAttachOptions"),
        Subresource("portforward", ("create", "get"), "", "", "PodPortForwardOptions"),
        Subresource("ephemeralcontainers", ("get", "patch", "update"), "", "v1", "Pod"),
        Subresource("resize", ("get", "patch", "update"), "", "v1", "Pod"),
    ),
)
