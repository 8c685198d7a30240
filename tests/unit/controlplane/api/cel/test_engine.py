"""The CEL engine: Kubernetes' libraries, compile errors with positions,
runtime errors in cel-go's words, and the matchConditions evaluator."""

from __future__ import annotations

from typing import Any

import pytest

from controlplane.api.cel import engine, match_conditions


def run(expr: str, self: Any = None) -> Any:
    return engine.compile(expr, ["self"]).evaluate({"self": self})


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        # lists (k8s.io/apiserver/pkg/cel/library/lists.go)
        ("[1, 2, 3].isSorted()", True),
        ("['b', 'a'].isSorted()", False),
        ("[1, 2, 3].sum()", 6),
        ("[].sum()", 0),
        ("[3, 1, 2].min()", 1),
        ("[3, 1, 2].max()", 3),
        ("[1, 2, 1].indexOf(1)", 0),
        ("[1, 2, 1].lastIndexOf(1)", 2),
        ("[1, 2].indexOf(9)", -1),
        # strings (cel-go ext/strings, Kubernetes' version)
        ("'hello'.charAt(1)", "e"),
        ("'hello'.indexOf('l')", 2),
        ("'hello'.lastIndexOf('l')", 3),
        ("'TacoCat'.lowerAscii()", "tacocat"),
        ("'TacoCat'.upperAscii()", "TACOCAT"),
        ("'a-b-c'.replace('-', '+')", "a+b+c"),
        ("'a,b'.split(',')", ["a", "b"]),
        ("'hello'.substring(1, 3)", "el"),
        ("'  x  '.trim()", "x"),
        ("['a', 'b'].join('-')", "a-b"),
        ("strings.quote('a\"b')", '"a\\"b"'),
        # regex
        ("'abc 123'.find('[0-9]+')", "123"),
        ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
        ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
        ("'abc'.matches('^[a-z]+$')", True),
        # url
        ("url('https://example.com:8080/a/b?x=1').getHostname()", "example.com"),
        ("url('https://example.com:8080/a/b?x=1').getPort()", "8080"),
        ("url('https://example.com/a/b').getEscapedPath()", "/a/b"),
        ("url('https://example.com/?x=1&x=2').getQuery()", {"x": ["1", "2"]}),
        ("isURL('not a url')", False),
        # quantity
        ("quantity('1Gi') == quantity('1024Mi')", True),
        ("quantity('500m').isLessThan(quantity('1'))", True),
        ("quantity('2').add(3).asInteger()", 5),
        ("quantity('1.5').isInteger()", False),
        ("quantity('1.5').compareTo(quantity('2'))", -1),
        ("isQuantity('10Qi')", False),
        # ip / cidr
        ("ip('10.0.0.1').family()", 4),
        ("ip('::1').isLoopback()", True),
        ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", True),
        ("cidr('10.0.0.0/8').containsIP('11.0.0.1')", False),
        ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
        ("cidr('192.168.0.1/24').prefixLength()", 24),
        ("isCIDR('10.0.0.0')", False),
        # format (Gateway API's CRDs use it)
        ("format.dns1123Label().validate('ok-name') == null", True),
        ("format.dns1123Label().validate('Bad_Name') != null", True),
        ("format.named('uuid') != null", True),
        # macros, has(), optionals, bind
        ("[1, 2, 3].all(x, x > 0)", True),
        ("[1, 2, 3].exists_one(x, x > 2)", True),
        ("[1, 2, 3].filter(x, x > 1).map(x, x * 10)", [20, 30]),
        ("has({'a': 1}.a)", True),
        ("{'a': 1}.?b.orValue(7)", 7),
        ("cel.bind(x, 2, x * x)", 4),
    ],
)
def test_kubernetes_libraries(expr: str, want: Any) -> None:
    assert run(expr) == want


def test_self_is_the_object() -> None:
    assert run("self.minReplicas <= self.replicas", {"minReplicas": 1, "replicas": 3}) is True
    assert run("self.minReplicas <= self.replicas", {"minReplicas": 5, "replicas": 3}) is False


def test_compile_error_has_position_and_caret() -> None:
    with pytest.raises(engine.CompileError) as err:
        engine.compile("self.(", ["self"])
    text = str(err.value)
    assert text.startswith("compilation failed: ERROR: <input>:1:6: Syntax error:")
    assert text.endswith(" | self.(\n | .....^")


def test_undeclared_names_and_functions_are_compile_errors() -> None:
    with pytest.raises(engine.CompileError, match="undeclared reference to 'oldSelf'"):
        engine.compile("self == oldSelf", ["self"])
    with pytest.raises(engine.CompileError, match="undeclared reference to 'nosuch'"):
        engine.compile("self.nosuch()", ["self"])
    with pytest.raises(engine.CompileError, match="empty"):
        engine.compile("  ", ["self"])


def test_runtime_errors_in_cel_go_words() -> None:
    with pytest.raises(engine.EvalError, match=r"^no such key: spec$"):
        run("self.spec.replicas > 1", {})
    with pytest.raises(engine.EvalError, match="min called on empty list"):
        run("[].min()")


def test_nested_loops_hit_the_iteration_budget_fast() -> None:
    with pytest.raises(engine.EvalError, match="cost limit exceeded"):
        run("self.all(x, self.all(y, self.all(z, x + y + z != 'no')))", ["a"] * 200)


def test_match_conditions_false_wins_over_error() -> None:
    conds = [
        {"name": "broken", "expression": "object.missing == 1"},
        {"name": "create-only", "expression": "request.operation == 'CREATE'"},
    ]
    variables = {"object": {}, "oldObject": None, "request": {"operation": "UPDATE"}}
    assert match_conditions.evaluate(conds, variables) is False
    variables["request"] = {"operation": "CREATE"}
    with pytest.raises(match_conditions.ConditionError, match="'broken': no such key: missing"):
        match_conditions.evaluate(conds, variables)


def test_match_conditions_all_true_and_non_bool() -> None:
    variables = {"object": {"metadata": {"labels": {"a": "b"}}}, "request": {}}
    ok = [{"name": "a", "expression": "object.metadata.labels.a == 'b'"}]
    assert match_conditions.evaluate(ok, variables) is True
    with pytest.raises(match_conditions.ConditionError, match="must evaluate to bool"):
        match_conditions.evaluate([{"name": "n", "expression": "'x'"}], variables)


def test_match_conditions_write_time_errors() -> None:
    errors = match_conditions.compile_errors(
        [
            {"name": "a", "expression": "object.("},
            {"name": "a", "expression": "true"},
            {"name": ""},
        ],
        "webhooks[0].matchConditions",
    )
    assert errors[0].startswith(
        'webhooks[0].matchConditions[0].expression: Invalid value: "object.(": '
        "compilation failed: ERROR: <input>:1:8:"
    )
    assert errors[1] == 'webhooks[0].matchConditions[1].name: Duplicate value: "a"'
    assert "webhooks[0].matchConditions[2].name: Required value" in errors
    assert "webhooks[0].matchConditions[2].expression: Required value" in errors


def test_conditional_with_null_branch_compiles_as_in_cel_go() -> None:
    # Kubernetes' documented auditAnnotations valueExpression
    expr = "object.spec.replicas > 50 ? 'replicas set to ' + string(object.spec.replicas) : null"
    program = engine.compile(expr, ["object"])
    assert program.evaluate({"object": {"spec": {"replicas": 60}}}) == "replicas set to 60"
    assert program.evaluate({"object": {"spec": {"replicas": 1}}}) is None
    with pytest.raises(engine.CompileError, match="undeclared reference to 'nope'"):
        engine.compile("nope ? 'a' : null", ["object"])
