"""x-kubernetes-validations evaluated on objects (crd_rules.validate) and
checked in schemas (crd_rules.schema_errors), without a server."""

from __future__ import annotations

from typing import Any

from controlplane.api.cel import crd_rules


def schema(spec: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": spec}}


def test_optional_old_self_runs_on_create_with_an_empty_optional() -> None:
    rule = {"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": True,
            "message": "may not shrink"}  # fmt: skip
    s = schema({"type": "object", "properties": {"size": {"type": "integer",
                                                          "x-kubernetes-validations": [rule]}}})  # fmt: skip
    assert crd_rules.validate(s, {"spec": {"size": 1}}, None) == []
    assert crd_rules.validate(s, {"spec": {"size": 1}}, {"spec": {"size": 3}}) == [
        'spec.size: Invalid value: "integer": may not shrink'
    ]
    assert crd_rules.validate(s, {"spec": {"size": 4}}, {"spec": {"size": 3}}) == []


def test_transition_rule_skipped_without_old_value_and_list_map_correlation() -> None:
    item = {"type": "object", "properties": {"name": {"type": "string"}, "port": {
        "type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf",
                                                         "message": "immutable"}]}}}  # fmt: skip
    s = schema({"type": "object", "properties": {"ports": {
        "type": "array", "items": item, "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"]}}})  # fmt: skip
    old = {"spec": {"ports": [{"name": "a", "port": 1}]}}
    new = {"spec": {"ports": [{"name": "b", "port": 2}, {"name": "a", "port": 5}]}}
    assert crd_rules.validate(s, new, old) == [
        'spec.ports[1].port: Invalid value: "integer": immutable'
    ]


def test_ratcheting_keeps_an_unchanged_invalid_value() -> None:
    s = schema({"type": "object", "x-kubernetes-validations": [{"rule": "self.x < 10"}],
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}})  # fmt: skip
    old = {"spec": {"x": 20, "y": 1}}
    assert crd_rules.validate(s, {"spec": {"x": 20, "y": 1}}, old) == []
    assert crd_rules.validate(s, {"spec": {"x": 20, "y": 2}}, old) == [
        'spec: Invalid value: "object": failed rule: self.x < 10'
    ]


def test_runtime_error_and_root_rule_path() -> None:
    root = {"type": "object", "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('a')"}, {"rule": "self.spec.missing == 1"}],
        "properties": {"spec": {"type": "object"}}}  # fmt: skip
    errors = crd_rules.validate(root, {"metadata": {"name": "b", "uid": "u"}, "spec": {}}, None)
    assert errors == [
        """<nil>: Invalid value: "object": failed rule: self.metadata.name.startsWith('a')""",
        '<nil>: Invalid value: "object": no such key: missing evaluating rule: '
        "self.spec.missing == 1",
    ]


def test_schema_errors() -> None:
    s = schema({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.("}, {"rule": "true", "reason": "Nope"}, {"rule": "true", "fieldPath": "x"},
        {"rule": "true", "messageExpression": "1 +"}], "properties": {}})  # fmt: skip
    errors = crd_rules.schema_errors(s, "spec.validation.openAPIV3Schema")
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert errors[0].startswith(
        f'{at}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.("'
    )
    assert "compilation failed: ERROR: <input>:1:6: Syntax error" in errors[0]
    assert errors[1].startswith(f'{at}[1].reason: Unsupported value: "Nope": supported values:')
    assert errors[2] == f'{at}[2].fieldPath: Invalid value: "x": fieldPath must be a valid path'
    assert errors[3].startswith(f"{at}[3].messageExpression: Invalid value:")
    assert "messageExpression compilation failed" in errors[3]


def test_old_self_refused_where_it_cannot_be_correlated() -> None:
    s = schema({"type": "object", "properties": {"tags": {"type": "array", "maxItems": 5,
        "items": {"type": "string", "maxLength": 10,
                  "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}})  # fmt: skip
    errors = crd_rules.schema_errors(s, "spec.validation.openAPIV3Schema")
    assert len(errors) == 1 and "oldSelf cannot be used on the uncorrelatable portion" in errors[0]


def test_cost_limits() -> None:
    rule = {"rule": "self.all(x, self.all(y, x != y))"}
    unbounded = schema({"type": "array", "items": {"type": "string"},
                        "x-kubernetes-validations": [rule]})  # fmt: skip
    errors = crd_rules.schema_errors(unbounded, "spec.validation.openAPIV3Schema")
    assert any("Forbidden: estimated rule cost exceeds budget by factor of more than 100x" in e
               for e in errors)  # fmt: skip
    bounded = schema({"type": "array", "items": {"type": "string", "maxLength": 20},
                      "maxItems": 50, "x-kubernetes-validations": [rule]})  # fmt: skip
    assert crd_rules.schema_errors(bounded, "spec.validation.openAPIV3Schema") == []
    # a cheap rule on each item of an unbounded list of lists: the per-CRD total
    per_item = schema({"type": "array", "items": {"type": "array", "items": {"type": "string"},
                       "x-kubernetes-validations": [{"rule": "self.all(x, x.size() < 5)"}]}})  # fmt: skip
    errors = crd_rules.schema_errors(per_item, "spec.validation.openAPIV3Schema")
    assert any("estimated rule cost total for entire OpenAPIv3 schema exceeds budget" in e
               for e in errors)  # fmt: skip


def test_runtime_budget_stops_further_rules(monkeypatch: Any) -> None:
    s = schema({"type": "object", "x-kubernetes-validations": [{"rule": "self.x < 10"}] * 3,
                "properties": {"x": {"type": "integer"}}})  # fmt: skip
    monkeypatch.setattr(crd_rules, "RUNTIME_BUDGET_SECONDS", -1.0)
    assert crd_rules.validate(s, {"spec": {"x": 20}}, None) == [
        'spec: Invalid value: "object": validation failed due to running out of cost budget, '
        "no further validation rules will be run"
    ]


def test_undefined_fields_are_compile_errors_where_the_schema_is_closed() -> None:
    props = {"replicas": {"type": "integer"}, "labels": {"type": "object",
             "additionalProperties": {"type": "string"}},
             "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
             "items": {"type": "array", "maxItems": 10, "items": {"type": "object"}}}  # fmt: skip
    ok = [{"rule": "self.replicas > 0"}, {"rule": "has(self.labels.anything)"},
          {"rule": "self.free.whatever == 1"}, {"rule": "self.items.all(i, i.nope)"}]  # fmt: skip
    s = schema({"type": "object", "properties": props, "x-kubernetes-validations": ok})
    assert crd_rules.schema_errors(s, "spec.validation.openAPIV3Schema") == []
    root_ok = {"type": "object", "properties": {"spec": {"type": "object", "properties": {}}},
               "x-kubernetes-validations": [{"rule": "self.metadata.name.size() < 10"}]}  # fmt: skip
    assert crd_rules.schema_errors(root_ok, "spec.validation.openAPIV3Schema") == []
    bad = schema({"type": "object", "properties": props,
                  "x-kubernetes-validations": [{"rule": "self.replicass > 0"}]})  # fmt: skip
    [error] = crd_rules.schema_errors(bad, "spec.validation.openAPIV3Schema")
    assert error.endswith(
        "compilation failed: ERROR: <input>:1:5: undefined field 'replicass'\n"
        " | self.replicass > 0\n | ....^"
    )


def test_reserved_and_special_property_names_are_escaped() -> None:
    props = {"namespace": {"type": "string"}, "x-y": {"type": "string"},
             "labels": {"type": "object", "additionalProperties": {"type": "string"}}}  # fmt: skip
    rules = [{"rule": "self.__namespace__ == 'ns'", "message": "namespace"},
             {"rule": "self.x__dash__y == 'z'", "message": "dash"},
             {"rule": "self.labels['a-b'] == 'c'", "message": "map key"}]  # fmt: skip
    s = schema({"type": "object", "properties": props, "x-kubernetes-validations": rules})
    assert crd_rules.schema_errors(s, "spec.validation.openAPIV3Schema") == []
    good = {"spec": {"namespace": "ns", "x-y": "z", "labels": {"a-b": "c"}}}
    assert crd_rules.validate(s, good, None) == []
    bad = {"spec": {"namespace": "other", "x-y": "z", "labels": {"a-b": "c"}}}
    assert crd_rules.validate(s, bad, None) == ['spec: Invalid value: "object": namespace']
