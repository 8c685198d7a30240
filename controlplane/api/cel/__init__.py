"""CEL (Common Expression Language) for Kubernetes' extension points.

One engine behind one narrow interface: `engine.compile(expr, variables)`
returns a `Program` or raises `CompileError` (Kubernetes' "compilation
failed: ERROR: <input>:line:col: ..." text, with the caret line);
`Program.evaluate(activation)` returns a Python value or raises `EvalError`.
The engine is Google's cel-cpp through `cel-expr-python` (why: README,
bench/cel.py). Kubernetes' own libraries (lists, regex, url, quantity, ip,
cidr) are in library.py; cost limits in cost.py; the matchConditions
evaluator the admission webhooks call in match_conditions.py.
"""
