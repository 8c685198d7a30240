"""No import cycle anywhere in the tree.

Imports are read with `ast`, so imports under `if TYPE_CHECKING:` and inside
functions count too: a cycle that only type checking or a late import hides
is still two modules that cannot be understood (or split) apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "agent", "controlplane", "proto", "bench", "tests")

# Known cycles, by package (none: the scheduler's plugins reach it through
# its Handle).
KNOWN_CYCLE_PACKAGES: tuple[str, ...] = ()


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "_pb2" in path.name or ".venv" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _imported(module: str, path: Path) -> set[str]:
    """Every dotted name an import statement in the module names (`from a
    import b` names both a and a.b: b may be a module or an attribute)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    """module -> the tree's modules it imports (a package's own parents excluded:
    importing a.b.c runs a/__init__ and a/b/__init__, which is not a cycle)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for name in _imported(module, path):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                edges.add(name)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's
    algorithm, iteratively: the graph is deeper than Python's recursion)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in order:
            continue
        work = [(start, iter(sorted(graph[start])))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], order[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _known(component: list[str]) -> bool:
    return all(
        any(m == p or m.startswith(p + ".") for p in KNOWN_CYCLE_PACKAGES) for m in component
    )


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_type_checking_imports_are_edges(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from . import sibling\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.other import Thing\n"
        "def late():\n"
        "    import pkg.third\n"
    )
    names = _imported("pkg.mod", source)
    assert {"pkg.sibling", "pkg.other", "pkg.other.Thing", "pkg.third"} <= names


def test_the_tree_has_no_import_cycle() -> None:
    found = [c for c in cycles(import_graph()) if not _known(c)]
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
