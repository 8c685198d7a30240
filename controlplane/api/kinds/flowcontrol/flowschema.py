"""FlowSchema (flowcontrol.apiserver.k8s.io/v1, cluster-scoped): which
requests go to which priority level of API priority and fairness.

As Kubernetes has it:
- Validation: spec.priorityLevelConfiguration.name required;
  matchingPrecedence in [1, 10000], 1 only for the schema named exempt;
  distinguisherMethod.type ByUser or ByNamespace; each rule at least one
  subject (kind User, Group or ServiceAccount with its matching member)
  and at least one resource or non-resource rule; verbs, apiGroups,
  resources and nonResourceURLs not empty, `*` alone; namespaces needed
  unless clusterScope.
- Defaults (v1): matchingPrecedence 1000.
- Status: the Dangling condition, kept by the API server's bootstrap
  (apiserver/apf_bootstrap.py): False/Found when the priority level
  exists, True/NotFound when not.
- Columns: NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE
  MISSINGPL (the Dangling condition's status, `?` without one).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, each_object, items, mapping
from controlplane.api.display import NONE, age, name, spec, status
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.flowcontrol.prioritylevelconfiguration import EXEMPT, PACKAGE
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import declare

Object = dict[str, Any]

DANGLING = "Dangling"
_SUBJECT_MEMBER = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    fs_spec: Any = obj.get("spec")
    if not mapping(e, "spec", fs_spec, required=True):
        return
    schema_name = str((obj.get("metadata") or {}).get("name") or "")
    precedence: Any = fs_spec.get("matchingPrecedence")
    if isinstance(precedence, int) and not isinstance(precedence, bool):
        if precedence <= 0:
            e.invalid("spec.matchingPrecedence", precedence, "must be a positive value")
        elif precedence > 10000:
            e.invalid("spec.matchingPrecedence", precedence, "must not be greater than 10000")
        elif precedence == 1 and schema_name != EXEMPT:
            e.invalid("spec.matchingPrecedence", precedence,
                      "only the schema named 'exempt' may have matchingPrecedence 1")  # fmt: skip
    elif precedence is not None:
        e.invalid("spec.matchingPrecedence", precedence, "must be an integer")
    ref: Any = fs_spec.get("priorityLevelConfiguration")
    if not isinstance(ref, dict) or not ref.get("name"):
        e.required("spec.priorityLevelConfiguration.name", "must reference a priority level")
    method: Any = fs_spec.get("distinguisherMethod")
    if mapping(e, "spec.distinguisherMethod", method) and method.get("type") not in (
        "ByUser",
        "ByNamespace",
    ):
        e.not_supported("spec.distinguisherMethod.type", method.get("type"),
                        ("ByNamespace", "ByUser"))  # fmt: skip
    rules: Any = fs_spec.get("rules")
    if items(e, "spec.rules", rules):
        for i, rule in enumerate(rules):
            _rule(e, f"spec.rules[{i}]", rule)


def _rule(e: Errors, path: str, rule: Any) -> None:
    if not mapping(e, path, rule, required=True):
        return
    subjects: Any = rule.get("subjects")
    if not subjects:
        e.required(f"{path}.subjects", "subjects must contain at least one value")
    elif items(e, f"{path}.subjects", subjects):
        for j, subject in enumerate(subjects):
            _subject(e, f"{path}.subjects[{j}]", subject)
    resource_rules: Any = rule.get("resourceRules") or []
    non_resource_rules: Any = rule.get("nonResourceRules") or []
    if not resource_rules and not non_resource_rules:
        e.required(path, "at least one of resourceRules and nonResourceRules has to be non-empty")
    if items(e, f"{path}.resourceRules", resource_rules):
        for p, r in each_object(e, f"{path}.resourceRules", resource_rules, required=True):
            for field, what in (("verbs", "verbs"), ("apiGroups", "resource rules"),
                                ("resources", "resource rules")):  # fmt: skip
                _members(e, f"{p}.{field}", r.get(field), what)
            if not r.get("namespaces") and not r.get("clusterScope"):
                e.required(f"{p}.namespaces",
                           "resource rules that are not cluster scoped must supply at least one namespace")  # fmt: skip
    if items(e, f"{path}.nonResourceRules", non_resource_rules):
        for p, r in each_object(e, f"{path}.nonResourceRules", non_resource_rules, required=True):
            _members(e, f"{p}.verbs", r.get("verbs"), "verbs")
            _members(e, f"{p}.nonResourceURLs", r.get("nonResourceURLs"), "nonResourceURLs")


def _members(e: Errors, path: str, value: Any, what: str) -> None:
    if not value:
        e.required(path, f"{what} must contain at least one value")
    elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        e.invalid(path, value, "must be a list of strings")
    elif "*" in value and len(value) > 1:
        e.invalid(path, value, "if '*' is present, must not specify other values")


def _subject(e: Errors, path: str, subject: Any) -> None:
    if not mapping(e, path, subject, required=True):
        return
    kind_ = subject.get("kind")
    member = _SUBJECT_MEMBER.get(str(kind_))
    if member is None:
        e.not_supported(f"{path}.kind", kind_, ("Group", "ServiceAccount", "User"))
        return
    for other in _SUBJECT_MEMBER.values():
        if other != member and subject.get(other) is not None:
            e.forbidden(
                f"{path}.{other}", f"{other} is forbidden when subject kind is not '{kind_}'"
            )
    detail: Any = subject.get(member)
    if not isinstance(detail, dict):
        e.required(f"{path}.{member}", f"{member} is required when subject kind is '{kind_}'")
        return
    if not detail.get("name"):
        e.required(f"{path}.{member}.name", f"{member} name is required")
    if member == "serviceAccount" and not detail.get("namespace"):
        e.required(f"{path}.serviceAccount.namespace", "serviceAccount namespace is required")


def defaults(obj: Object) -> None:
    child(obj, "spec").setdefault("matchingPrecedence", 1000)


def row(obj: Object, now: float, wide: bool) -> list[str]:
    fs_spec = spec(obj)
    method = fs_spec.get("distinguisherMethod")
    missing = "?"
    for cond in status(obj).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == DANGLING:
            missing = str(cond.get("status", ""))
            break
    return [
        name(obj),
        str((fs_spec.get("priorityLevelConfiguration") or {}).get("name", "")),
        str(fs_spec.get("matchingPrecedence", 0)),
        str(method.get("type")) if isinstance(method, dict) and method.get("type") else NONE,
        age(obj, now),
        missing,
    ]


DEFINITION = KindDef(
    KindInfo("FlowSchema", "flowcontrol.apiserver.k8s.io/v1", namespaced=False),
    types={
        **declare(
            PACKAGE,
            """
            FlowSchema [flowcontrol.apiserver.k8s.io/v1 FlowSchema]: FlowSchema defines the schema
                    of a group of flows. Note that a flow is made up of a set of inbound API
                    requests with similar attributes and is identified by a pair of strings: the
                    name of the FlowSchema and a "flow distinguisher".
                spec    FlowSchemaSpec
                status  object
            FlowSchemaSpec: FlowSchemaSpec describes how the FlowSchema's specification looks like.
                priorityLevelConfiguration!  object    The PriorityLevelConfiguration this refers
                                                       to.
                matchingPrecedence           integer   Chooses among the FlowSchemas that match a
                                                       request.
                distinguisherMethod          object    How to compute the flow distinguisher.
                rules                        []object  Which requests match this flow schema.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=Printer(
        (
            Column("NAME"),
            Column("PRIORITYLEVEL", type="string", description="priorityLevelConfiguration"),
            Column("MATCHINGPRECEDENCE", type="string", description="matchingPrecedence"),
            Column("DISTINGUISHERMETHOD", type="string", description="distinguisherMethod"),
            Column("AGE"),
            Column(
                "MISSINGPL",
                type="string",
                description="references a broken or non-existent PriorityLevelConfiguration",
            ),
        ),
        row,
    ),
    patch_meta=facts(status=CONDITIONS),
)
