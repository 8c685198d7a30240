"""The PodSecurity admission plugin: kube-apiserver's decisions, for the registry.

- A Pod (create, or an update that changes what the checks read: container
  images or count, ephemeral containers) is checked against its namespace's
  `enforce` policy and refused with 403 `pods "p" is forbidden: violates
  PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`; against
  `audit`, which adds the audit annotation
  `pod-security.kubernetes.io/audit-violations`; and against `warn`, which
  adds a `Warning` (`would violate PodSecurity "restricted:latest": ...`).
  Status, binding, eviction and the streaming subresources are not checked.
- The pod templates of PodTemplates, ReplicationControllers, ReplicaSets,
  Deployments, StatefulSets, DaemonSets, Jobs and CronJobs get audit and
  warn only: their pods are checked when they are made.
- A Namespace's labels must parse (422 naming the label); raising its
  enforce level warns about its existing pods that would be refused
  (at most 3,000 checked, one controller's pods counted once first).
- Exempt usernames, runtime classes and namespaces (config.py) skip all of
  it, with the audit annotation `pod-security.kubernetes.io/exempt`.

It reads namespaces and pods through the two callables it is given and
never writes anything.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controlplane.apiserver import admission_context as ctx
from controlplane.apiserver.admission_context import Attributes
from controlplane.apiserver.podsecurity.config import PodSecurityConfig, default_config
from controlplane.apiserver.podsecurity.evaluator import Aggregate, Evaluator, aggregate
from controlplane.apiserver.podsecurity.levels import (
    LABEL_PREFIX,
    PRIVILEGED,
    LabelError,
    LevelVersion,
    Policy,
    compare_levels,
    policy_to_evaluate,
)
from controlplane.client.errors import Forbidden, Invalid

Object = Mapping[str, Any]
ENFORCE_POLICY = LABEL_PREFIX + "enforce-policy"
AUDIT_VIOLATIONS = LABEL_PREFIX + "audit-violations"
EXEMPT = LABEL_PREFIX + "exempt"
MAX_PODS_TO_CHECK = 3000

IGNORED_POD_SUBRESOURCES = frozenset({"exec", "attach", "binding", "eviction", "log",
                                      "portforward", "proxy", "status"})  # fmt: skip
RESOURCES = {"Pod": "pods", "PodTemplate": "podtemplates",
             "ReplicationController": "replicationcontrollers", "ReplicaSet": "replicasets",
             "Deployment": "deployments", "StatefulSet": "statefulsets",
             "DaemonSet": "daemonsets", "Job": "jobs", "CronJob": "cronjobs"}  # fmt: skip


def pod_template(kind: str, obj: Object) -> tuple[Object, Object] | None:
    """(metadata, spec) of the pod a workload object would make, or None."""
    spec = obj.get("spec")
    template: Any
    if kind == "PodTemplate":
        template = obj.get("template")
    elif kind == "CronJob":
        template = _get(spec, "jobTemplate", "spec", "template")
    else:
        template = _get(spec, "template")
    if not isinstance(template, Mapping):
        return None
    meta, pod_spec = template.get("metadata"), template.get("spec")
    return (meta if isinstance(meta, Mapping) else {},
            pod_spec if isinstance(pod_spec, Mapping) else {})  # fmt: skip


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _labels(obj: Object | None) -> Mapping[str, Any]:
    labels = _get(obj, "metadata", "labels")
    return labels if isinstance(labels, Mapping) else {}


class PodSecurity:
    """See the module docstring."""

    def __init__(
        self,
        config: PodSecurityConfig | None = None,
        namespace: Callable[[str], Object | None] = lambda _: None,
        pods: Callable[[str], Sequence[Object]] = lambda _: (),
        evaluator: Evaluator | None = None,
    ) -> None:
        self.config = config or default_config()
        self.namespace = namespace
        self.pods = pods
        self.evaluator = evaluator or Evaluator()

    def __call__(self, attrs: Attributes) -> None:
        self.validate(attrs)

    def validate(self, attrs: Attributes) -> None:
        """Refuse (raise) or let the write through, recording warnings and annotations."""
        if attrs.kind == "Namespace":
            self._namespace(attrs)
        elif attrs.kind == "Pod":
            if attrs.subresource not in IGNORED_POD_SUBRESOURCES:
                self._pod(attrs)
        elif attrs.kind in RESOURCES and not attrs.subresource:
            self._workload(attrs)

    # -- namespaces ------------------------------------------------------------

    def _namespace(self, attrs: Attributes) -> None:
        if attrs.subresource:
            return
        new_policy, new_errors = policy_to_evaluate(_labels(attrs.obj), self.config.defaults)
        old_policy: Policy | None = None
        old_errors: list[LabelError] = []
        if attrs.old is not None:
            old_policy, old_errors = policy_to_evaluate(_labels(attrs.old), self.config.defaults)
        if new_errors and (attrs.old is None or [str(e) for e in new_errors]
                           != [str(e) for e in old_errors]):  # fmt: skip
            problems = [str(e) for e in new_errors]
            err = Invalid(f'Namespace "{attrs.name}" is invalid: ' + "; ".join(problems))
            err.causes = problems  # type: ignore[attr-defined]
            raise err
        exempt = attrs.name in self.config.exempt_namespaces
        if old_policy is None or exempt:
            if exempt:
                self._exempt_namespace_warning(attrs.name, new_policy, _labels(attrs.obj))
            return
        new, old = new_policy.enforce, old_policy.enforce
        if new == old or new.level == PRIVILEGED:
            return
        if new.version == old.version and compare_levels(new.level, old.level) < 1:
            return
        for warning in self._pods_in_namespace(attrs.name, new):
            ctx.warn(warning)

    def _exempt_namespace_warning(
        self, name: str, policy: Policy, labels: Mapping[str, Any]
    ) -> None:
        if policy.fully_privileged() or policy.equivalent(self.config.defaults):
            return
        parts = []
        for mode, lv in (("enforce", policy.enforce), ("audit", policy.audit),
                         ("warn", policy.warn)):  # fmt: skip
            if lv.level != PRIVILEGED and (LABEL_PREFIX + mode in labels
                                           or LABEL_PREFIX + mode + "-version" in labels):  # fmt: skip
                parts.append(f"{mode}={lv}")
        ctx.warn(f'namespace "{name}" is exempt from Pod Security, and the policy '
                 f"({', '.join(parts)}) will be ignored")  # fmt: skip

    def _pods_in_namespace(self, namespace: str, enforce: LevelVersion) -> list[str]:
        ordered: list[Object] = []
        repeats: list[Object] = []
        owners: set[str] = set()
        for pod in self.pods(namespace):
            if self._exempt_runtime_class(_get(pod, "spec", "runtimeClassName")):
                continue
            owner = next((str(r.get("uid")) for r in _get(pod, "metadata", "ownerReferences") or []
                          if isinstance(r, Mapping) and r.get("controller")), None)  # fmt: skip
            if owner is not None and owner in owners:
                repeats.append(pod)
                continue
            if owner is not None:
                owners.add(owner)
            ordered.append(pod)
        ordered += repeats
        total = len(ordered)
        counts: dict[str, tuple[str, int]] = {}
        for pod in ordered[:MAX_PODS_TO_CHECK]:
            result = self._evaluate(enforce, pod.get("metadata") or {}, pod.get("spec") or {})
            if result.allowed:
                continue
            reason, pod_name = result.reason(), str(_get(pod, "metadata", "name") or "")
            first, count = counts.get(reason, (pod_name, 0))
            counts[reason] = (min(first, pod_name), count + 1)
        warnings = []
        if total > MAX_PODS_TO_CHECK:
            warnings.append(f"new PodSecurity enforce level only checked against the first "
                            f"{MAX_PODS_TO_CHECK} of {total} existing pods")  # fmt: skip
        if counts:
            warnings.append(f'existing pods in namespace "{namespace}" violate the new '
                            f'PodSecurity enforce level "{enforce}"')  # fmt: skip
        decorated = []
        for reason, (first, count) in counts.items():
            others = {1: "", 2: " (and 1 other pod)"}.get(count, f" (and {count - 1} other pods)")
            decorated.append(f"{first}{others}: {reason}")
        return warnings + sorted(decorated)

    # -- pods and their templates -----------------------------------------------

    def _policy(self, namespace: str) -> tuple[Policy, list[str]]:
        found = self.namespace(namespace)
        policy, errors = policy_to_evaluate(_labels(found), self.config.defaults)
        return policy, [str(e) for e in errors]

    def _exempt(self, attrs: Attributes) -> bool:
        if attrs.namespace and attrs.namespace in self.config.exempt_namespaces:
            ctx.annotate(EXEMPT, "namespace")
            return True
        if attrs.identity.user and attrs.identity.user in self.config.exempt_usernames:
            ctx.annotate(EXEMPT, "user")
            return True
        return False

    def _exempt_runtime_class(self, runtime_class: Any) -> bool:
        return bool(runtime_class) and runtime_class in self.config.exempt_runtime_classes

    def _pod(self, attrs: Attributes) -> None:
        if self._exempt(attrs):
            return
        policy, errors = self._policy(attrs.namespace)
        if not errors and policy.fully_privileged():
            return
        if attrs.old is not None and not significant_pod_update(attrs.obj, attrs.old):
            return
        meta, spec = attrs.obj.get("metadata") or {}, attrs.obj.get("spec") or {}
        self._decide(attrs, policy, errors, meta, spec, enforce=True)

    def _workload(self, attrs: Attributes) -> None:
        if self._exempt(attrs):
            return
        policy, errors = self._policy(attrs.namespace)
        if not errors and policy.warn.level == PRIVILEGED == policy.audit.level:
            return
        found = pod_template(attrs.kind, attrs.obj)
        if found is not None:
            self._decide(attrs, policy, errors, found[0], found[1], enforce=False)

    def _evaluate(self, lv: LevelVersion, meta: Object, spec: Object) -> Aggregate:
        return aggregate(self.evaluator.evaluate(lv, meta, spec))

    def _decide(self, attrs: Attributes, policy: Policy, errors: list[str], meta: Object,
                spec: Object, enforce: bool) -> None:  # fmt: skip
        if self._exempt_runtime_class(spec.get("runtimeClassName")):
            ctx.annotate(EXEMPT, "runtimeClass")
            return
        if errors:
            ctx.annotate("error", f"Failed to parse policy: {', '.join(errors)}")
        results: dict[LevelVersion, Aggregate] = {}
        if enforce:
            ctx.annotate(ENFORCE_POLICY, str(policy.enforce))
            result = results[policy.enforce] = self._evaluate(policy.enforce, meta, spec)
            if not result.allowed:
                self._audit(policy, results, meta, spec)
                resource = RESOURCES.get(attrs.kind, attrs.kind.lower())
                raise Forbidden(f'{resource} "{attrs.name}" is forbidden: violates PodSecurity '
                                f'"{policy.enforce}": {result.detail()}')  # fmt: skip
        self._audit(policy, results, meta, spec)
        warn = results.get(policy.warn) or self._evaluate(policy.warn, meta, spec)
        if not warn.allowed:
            ctx.warn(f'would violate PodSecurity "{policy.warn}": {warn.detail()}')

    def _audit(self, policy: Policy, results: dict[LevelVersion, Aggregate], meta: Object,
               spec: Object) -> None:  # fmt: skip
        if policy.audit not in results:
            results[policy.audit] = self._evaluate(policy.audit, meta, spec)
        audit = results[policy.audit]
        if not audit.allowed:
            ctx.annotate(AUDIT_VIOLATIONS,
                         f'would violate PodSecurity "{policy.audit}": {audit.detail()}')  # fmt: skip


# Pod fields an update may change that no check reads (Kubernetes lets them change).
_UNCHECKED_SPEC = ("tolerations", "activeDeadlineSeconds", "terminationGracePeriodSeconds",
                   "schedulingGates", "nodeName")  # fmt: skip
_UNCHECKED_CONTAINER = ("resources", "resizePolicy", "image")
_CHECKED_ANNOTATIONS = ("seccomp.security.alpha.kubernetes.io/",
                        "container.seccomp.security.alpha.kubernetes.io/",
                        "container.apparmor.security.beta.kubernetes.io/")  # fmt: skip


def _checked(pod: Object) -> tuple[Any, Any]:
    """What of a pod the checks read, images aside."""
    spec = pod.get("spec")
    spec = dict(spec) if isinstance(spec, Mapping) else {}
    for key in _UNCHECKED_SPEC:
        spec.pop(key, None)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [{k: v for k, v in c.items() if k not in _UNCHECKED_CONTAINER}
                         if isinstance(c, Mapping) else c for c in spec[key]]  # fmt: skip
    notes = _get(pod, "metadata", "annotations")
    notes = {k: v for k, v in notes.items() if k.startswith(_CHECKED_ANNOTATIONS)} \
        if isinstance(notes, Mapping) else {}  # fmt: skip
    return spec, notes


def _images(pod: Object) -> list[Any]:
    return [_get(c, "image") for key in ("containers", "initContainers", "ephemeralContainers")
            for c in (_get(pod, "spec", key) or []) if isinstance(c, Mapping)]  # fmt: skip


def significant_pod_update(new: Object, old: Object) -> bool:
    """Whether an update changes what the checks read (Kubernetes'
    isSignificantPodUpdate: an image, the containers, an ephemeral container,
    a seccomp annotation). Kubernetes can look at images alone because its pod
    validation freezes the rest of the spec; skiff's lets more of it change,
    so any change beyond the fields no check reads (tolerations, deadlines,
    resources, scheduling gates) counts too."""
    return _images(new) != _images(old) or _checked(new) != _checked(old)
