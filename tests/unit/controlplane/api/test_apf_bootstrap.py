"""API priority and fairness's bootstrap configuration and the FlowSchema /
PriorityLevelConfiguration rules (controlplane/api/apf_bootstrap.py,
controlplane/api/kinds/flowcontrol/)."""

from __future__ import annotations

import copy
from typing import Any

from controlplane.api import apf_bootstrap as apf
from controlplane.api.checks import Errors
from controlplane.api.kinds.flowcontrol import flowschema
from controlplane.api.kinds.flowcontrol import prioritylevelconfiguration as plc


def stored(kind: str, name: str, **meta: Any) -> dict[str, Any]:
    found = apf.wanted(kind, name)
    assert found is not None
    obj = copy.deepcopy(found[0])
    obj["metadata"].update(meta)
    return obj


def test_every_bootstrap_object_is_valid_and_unchanged_by_defaults() -> None:
    names = {(o["kind"], o["metadata"]["name"]) for o, _ in apf.bootstrap_objects()}
    assert len(names) == 21
    for obj, _ in apf.bootstrap_objects():
        e = Errors()
        module = flowschema if obj["kind"] == apf.FS else plc
        module.validate(e, obj, None)
        assert not e, (obj["metadata"]["name"], e.items)
        defaulted = copy.deepcopy(obj)
        module.defaults(defaulted)
        assert defaulted == obj, obj["metadata"]["name"]


def test_mandatory_spec_is_put_back() -> None:
    obj = stored(apf.FS, "catch-all", generation=2)
    obj["spec"]["matchingPrecedence"] = 5000
    want, mandatory = apf.wanted(apf.FS, "catch-all") or ({}, False)
    assert mandatory
    fixed = apf.reconcile(obj, want, mandatory)
    assert fixed is not None and fixed["spec"]["matchingPrecedence"] == 10000
    # Even an annotation saying false does not keep a mandatory object's edits.
    obj["metadata"]["annotations"] = {apf.AUTOUPDATE: "false"}
    fixed = apf.reconcile(obj, want, mandatory)
    assert fixed is not None and fixed["metadata"]["annotations"][apf.AUTOUPDATE] == "true"
    assert apf.reconcile(want, want, mandatory) is None


def test_exempt_level_keeps_its_exempt_settings() -> None:
    obj = stored(apf.PLC, "exempt")
    obj["spec"]["exempt"] = {"nominalConcurrencyShares": 3, "lendablePercent": 0}
    want, mandatory = apf.wanted(apf.PLC, "exempt") or ({}, False)
    assert apf.reconcile(obj, want, mandatory) is None


def test_suggested_follow_autoupdate_spec() -> None:
    want, mandatory = apf.wanted(apf.PLC, "workload-low") or ({}, True)
    assert not mandatory
    edited = stored(apf.PLC, "workload-low")
    edited["spec"]["limited"]["nominalConcurrencyShares"] = 7
    fixed = apf.reconcile(edited, want, mandatory)
    assert fixed is not None and fixed["spec"] == want["spec"]
    edited["metadata"]["annotations"] = {apf.AUTOUPDATE: "false"}
    assert apf.reconcile(edited, want, mandatory) is None
    # No annotation: an object never changed (generation 1) is auto-updated,
    # one an admin changed is left and marked "false".
    del edited["metadata"]["annotations"]
    edited["metadata"]["generation"] = 2
    fixed = apf.reconcile(edited, want, mandatory)
    assert fixed is not None and fixed["metadata"]["annotations"] == {apf.AUTOUPDATE: "false"}
    assert fixed["spec"]["limited"]["nominalConcurrencyShares"] == 7


def test_dangling_condition() -> None:
    fs = stored(apf.FS, "global-default")
    assert apf.dangling(fs, {"global-default"})["status"] == "False"
    cond = apf.dangling(fs, set())
    assert (cond["status"], cond["reason"]) == ("True", "NotFound")


def test_rules_as_kubernetes_words_them() -> None:
    e = Errors()
    bad = {"metadata": {"name": "x"}, "spec": {
        "priorityLevelConfiguration": {"name": ""}, "matchingPrecedence": 10001,
        "distinguisherMethod": {"type": "ByGroup"},
        "rules": [{"subjects": [{"kind": "User"}], "resourceRules": [
            {"verbs": ["get", "*"], "apiGroups": [""], "resources": ["pods"]}]}]}}  # fmt: skip
    flowschema.validate(e, bad, None)
    assert e.items == [
        "spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000",
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        'spec.distinguisherMethod.type: Unsupported value: "ByGroup": supported values: '
        '"ByNamespace", "ByUser"',
        "spec.rules[0].subjects[0].user: Required value: user is required when subject kind "
        "is 'User'",
        'spec.rules[0].resourceRules[0].verbs: Invalid value: ["get","*"]: if \'*\' is '
        "present, must not specify other values",
        "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are "
        "not cluster scoped must supply at least one namespace",
    ]
    e = Errors()
    level = {"metadata": {"name": "x"}, "spec": {"type": "Limited", "limited": {
        "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 8}}}}}  # fmt: skip
    plc.validate(e, level, None)
    assert e.items == [
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater "
        "than queues (4)"
    ]
