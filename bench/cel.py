"""The CEL engines on PyPI compared on Kubernetes' own documented CEL
examples: which pass, and how fast each evaluates.

Cases: the rules of kubernetes.io's CRD "Validation rules" examples table,
the ValidatingAdmissionPolicy page's expressions (params, variables,
namespaceObject, matchConditions, auditAnnotations' conditional), and the
Kubernetes CEL libraries page's functions (strings, lists, regex, url,
quantity, ip/cidr, optionals). Each case is compiled once, then evaluated.

Engines (each measured where it imports):
- cel-expr-python: Google's cel-cpp with its official bindings (Apache-2.0;
  released 2026-06); run through skiff's wrapper (controlplane/api/cel),
  which adds Kubernetes' libraries;
- common-expression-language: Rust `cel` crate bindings (Apache-2.0;
  2026-09), raw;
- cel-python (celpy): pure Python (Apache-2.0; 2026-01), raw.
The other two have no way to add Kubernetes' libraries short of writing
them again per engine, so their raw pass counts are what a user of them
gets. Only cel-expr-python is a skiff dependency: to measure the others,
install them beside (pip install cel-python common-expression-language).

Prints a table, then as its last line one JSON object.
Usage: python -m bench.cel [--seconds 0.3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEPLOY = {"metadata": {"name": "web", "namespace": "prod", "labels": {"env": "prod"}},
          "spec": {"replicas": 3, "template": {"spec": {"containers": [
              {"name": "c", "image": "prod.example.com/web:1"}]}}}}  # fmt: skip
NS = {"metadata": {"name": "prod", "labels": {"environment": "prod"}}}
REQ = {"operation": "CREATE", "resource": {"group": "apps", "resource": "deployments"},
       "userInfo": {"username": "alice", "groups": ["system:authenticated"]}}  # fmt: skip

# (expression, activation, expected result)
CASES: list[tuple[str, dict[str, Any], Any]] = [
    # CRD validation rules (kubernetes.io "Validation rules" table)
    ("self.minReplicas <= self.replicas", {"self": {"minReplicas": 1, "replicas": 3}}, True),
    ("'Available' in self.stateCounts", {"self": {"stateCounts": {"Available": 1}}}, True),
    ("(size(self.list1) == 0) != (size(self.list2) == 0)",
     {"self": {"list1": [], "list2": ["a"]}}, True),
    ("!('MY_KEY' in self.map1) || self['map1']['MY_KEY'].matches('^[a-zA-Z]*$')",
     {"self": {"map1": {"MY_KEY": "abc"}}}, True),
    ("self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
     {"self": {"envars": [{"name": "MY_ENV", "value": "abc"}]}}, True),
    ("self.health.startsWith('ok')", {"self": {"health": "ok-1"}}, True),
    ("self.widgets.exists(w, w.key == 'x' && w.foo < 10)",
     {"self": {"widgets": [{"key": "x", "foo": 3}]}}, True),
    ("type(self) == string ? self == '100%' : self == 1000", {"self": "100%"}, True),
    ("self.metadata.name.startsWith(self.prefix)",
     {"self": {"metadata": {"name": "ab-1"}, "prefix": "ab"}}, True),
    ("self.set1.all(e, !(e in self.set2))", {"self": {"set1": ["a"], "set2": ["b"]}}, True),
    ("size(self.names) == size(self.details) && self.names.all(n, n in self.details)",
     {"self": {"names": ["a"], "details": {"a": 1}}}, True),
    ("size(self.clusters.filter(c, c.name == self.primary)) == 1",
     {"self": {"clusters": [{"name": "a"}], "primary": "a"}}, True),
    ("self == oldSelf", {"self": "a", "oldSelf": "a"}, True),
    ("self.?foo.orValue('none') == 'none'", {"self": {}}, True),
    # ValidatingAdmissionPolicy (kubernetes.io "Validating Admission Policy")
    ("object.spec.replicas <= 5", {"object": DEPLOY}, True),
    ("object.spec.replicas <= params.maxReplicas",
     {"object": DEPLOY, "params": {"maxReplicas": 5}}, True),
    ("'object.spec.replicas must be no greater than ' + string(params.maxReplicas)",
     {"params": {"maxReplicas": 5}}, "object.spec.replicas must be no greater than 5"),
    ("'environment' in namespaceObject.metadata.labels ? "
     "namespaceObject.metadata.labels['environment'] : 'prod'", {"namespaceObject": NS}, "prod"),
    ("object.spec.template.spec.containers.all(c, c.image.startsWith('prod' + '.'))",
     {"object": DEPLOY}, True),
    ('!("system:nodes" in request.userInfo.groups)', {"request": REQ}, True),
    ("object.spec.replicas > 50 ? 'Deployment spec.replicas set to ' + "
     "string(object.spec.replicas) : null", {"object": DEPLOY}, None),
    # Kubernetes' CEL libraries (kubernetes.io "CEL in Kubernetes")
    ("'TacoCat'.lowerAscii() == 'tacocat'", {}, True),
    ("'a,b,c'.split(',').size() == 3", {}, True),
    ("['a', 'b'].join('-') == 'a-b'", {}, True),
    ("'hello'.substring(1, 3) == 'el'", {}, True),
    ("' x '.trim() == 'x'", {}, True),
    ("'hello'.charAt(1) == 'e'", {}, True),
    ("'a-b'.replace('-', '+') == 'a+b'", {}, True),
    ("[1, 2, 3].isSorted()", {}, True),
    ("[1, 2, 3].sum() == 6", {}, True),
    ("[3, 1, 2].min() == 1", {}, True),
    ("'abc 123'.find('[0-9]+') == '123'", {}, True),
    ("url('https://example.com:80/').getHost() == 'example.com:80'", {}, True),
    ("quantity('1Gi').isGreaterThan(quantity('500Mi'))", {}, True),
    ("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", {}, True),
]  # fmt: skip

Compile = Callable[[str, list[str]], Any]
Evaluate = Callable[[Any, dict[str, Any]], Any]


def _skiff() -> tuple[Compile, Evaluate]:
    from controlplane.api.cel import engine

    return (lambda e, names: engine.compile(e, names)), (lambda p, a: p.evaluate(a))


def _rust() -> tuple[Compile, Evaluate]:
    import cel  # type: ignore[import-not-found,unused-ignore]  # common-expression-language

    if not hasattr(cel, "compile"):
        raise ImportError("not common-expression-language")
    return (lambda e, names: cel.compile(e)), (lambda p, a: p.execute(dict(a)))


def _celpy() -> tuple[Compile, Evaluate]:
    import celpy  # type: ignore[import-not-found,unused-ignore]

    env = celpy.Environment()

    def compile_(e: str, names: list[str]) -> Any:
        return env.program(env.compile(e))

    def evaluate(p: Any, a: dict[str, Any]) -> Any:
        result = p.evaluate({k: celpy.json_to_cel(v) for k, v in a.items()})
        if isinstance(result, Exception):
            raise result
        return result

    return compile_, evaluate


ENGINES = {"cel-expr-python (skiff)": _skiff, "common-expression-language": _rust,
           "cel-python (celpy)": _celpy}  # fmt: skip


def _same(got: Any, want: Any) -> bool:
    if want is None:
        return got is None or type(got).__name__ in ("NullType",)
    return bool(got == want) and type(got) is not type(None)


def run(name: str, make: Callable[[], tuple[Compile, Evaluate]], seconds: float) -> dict[str, Any]:
    try:
        compile_, evaluate = make()
    except ImportError as err:
        return {"engine": name, "installed": False, "error": str(err)}
    passed: list[tuple[Any, dict[str, Any]]] = []
    failures: list[str] = []
    for expression, activation, want in CASES:
        try:
            program = compile_(expression, sorted({"self", "oldSelf", "object", "params",
                                                   "namespaceObject", "request", *activation}))  # fmt: skip
            got = evaluate(program, activation)
        except Exception as err:  # an engine's own errors, whatever their type
            failures.append(f"{expression[:50]}: {type(err).__name__}")
            continue
        if _same(got, want):
            passed.append((program, activation))
        else:
            failures.append(f"{expression[:50]}: got {got!r}")
    evals = 0
    start = time.perf_counter()
    while passed and time.perf_counter() - start < seconds:
        for program, activation in passed:
            evaluate(program, activation)
            evals += 1
    rate = evals / (time.perf_counter() - start) if passed else 0.0
    return {"engine": name, "installed": True, "passed": len(passed), "cases": len(CASES),
            "evals_per_s": round(rate), "failures": failures}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=0.3, help="timing per engine")
    args = parser.parse_args(argv)
    results = [run(name, make, args.seconds) for name, make in ENGINES.items()]
    print(f"{'engine':30} {'passed':>10} {'evaluations/s':>14}")
    for r in results:
        if not r["installed"]:
            print(f"{r['engine']:30} {'not installed':>25}")
            continue
        print(f"{r['engine']:30} {r['passed']:>5}/{r['cases']:<4} {r['evals_per_s']:>14}")
    for r in results:
        for failure in r.get("failures", [])[:40]:
            print(f"  {r['engine']}: {failure}")
    figures = {r["engine"]: {"passed": r.get("passed"), "cases": len(CASES),
                             "evals_per_s": r.get("evals_per_s")} for r in results}  # fmt: skip
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
