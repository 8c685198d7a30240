"""The kinds registry: one module per kind, found without a list to edit."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from controlplane.api import kinds
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.registry import ORDER, discover, kind_types


@pytest.fixture
def package(tmp_path: Path) -> Iterator[Path]:
    """An empty package `fakekinds` on sys.path, removed afterwards."""
    root = tmp_path / "fakekinds"
    root.mkdir()
    (root / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:
        yield root
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "fakekinds" or m.startswith("fakekinds.")]:
            del sys.modules[name]


def _kind_module(package: Path, group: str, module: str, kind: str, api_version: str) -> None:
    (package / group).mkdir(exist_ok=True)
    (package / group / "__init__.py").write_text("")
    (package / group / f"{module}.py").write_text(
        textwrap.dedent(f"""
            from controlplane.api.kinds.definition import KindDef
            from controlplane.api.kinds.info import KindInfo

            DEFINITION = KindDef(KindInfo("{kind}", "{api_version}", "{module}s", "{module}"))
        """)
    )


def test_a_new_module_is_a_new_kind(package: Path) -> None:
    _kind_module(package, "widgets", "gadget", "Gadget", "widgets.example.com/v1")
    _kind_module(package, "widgets", "doohickey", "Doohickey", "widgets.example.com/v1")
    (package / "widgets" / "_helpers.py").write_text("raise AssertionError('not a kind')\n")
    (package / "shared").mkdir()
    (package / "shared" / "__init__.py").write_text("raise AssertionError('not a group')\n")
    found = discover("fakekinds")
    assert [d.key for d in found] == ["Doohickey", "Gadget"]  # by module name


def test_a_kind_defined_twice_is_refused(package: Path) -> None:
    _kind_module(package, "a", "gadget", "Gadget", "a.example.com/v1")
    _kind_module(package, "b", "gadget", "Gadget", "b.example.com/v1")
    with pytest.raises(ValueError, match="kinds defined twice: Gadget"):
        discover("fakekinds")


def test_builtin_kinds_keep_their_order_and_names() -> None:
    keys = [info.key for info in kinds.builtin_kinds()]
    assert keys[: len(ORDER)] == list(ORDER)
    for d in kinds.builtin_definitions():
        info = d.info
        for name in (info.key, info.plural, info.singular, *info.short_names, info.resource):
            assert kinds.lookup(name) is info or info.qualified, name
        assert kinds.definition(info.key) is d
    assert kinds.lookup("job").key == "Job"  # batch/v1 before Volcano's Job
    assert kinds.lookup("vcjob").key == "Job.batch.volcano.sh"


def test_run_time_kinds_come_and_go() -> None:
    info = KindInfo("Gizmo", "gizmos.example.com/v1", "gizmos", "gizmo", qualified=True)
    kinds.register(KindDef(info, validate=lambda e, obj, old: e.add("spec", "no")))
    try:
        assert kinds.lookup("gizmos.gizmos.example.com") is info
        assert kinds.definition("Gizmo.gizmos.example.com").validate is not None
        assert info in kinds.served_at("gizmos.example.com/v1")
    finally:
        kinds.unregister(info.key)
    with pytest.raises(kinds.UnknownKind):
        kinds.lookup("gizmos.gizmos.example.com")
    assert kinds.served_at("gizmos.example.com/v1") == ()
    with pytest.raises(ValueError, match="built in"):
        kinds.register(kinds.by_kind("Pod"))


def test_a_withdrawn_group_is_served_no_more_until_given_back() -> None:
    gizmo = KindInfo("Gizmo", "gizmos.example.com/v1", "gizmos", "gizmo", qualified=True)
    kinds.register(gizmo)
    served = kinds.builtin_kinds()
    try:
        kinds.withdraw_groups({"metrics.k8s.io", "gizmos.example.com"})
        assert kinds.withdrawn_groups() == {"metrics.k8s.io", "gizmos.example.com"}
        assert kinds.served_at("metrics.k8s.io/v1beta1") == ()
        assert kinds.find("PodMetrics.metrics.k8s.io") is None
        with pytest.raises(kinds.UnknownKind):
            kinds.lookup("podmetrics")
        assert [i.key for i in kinds.all_kinds() if i.group == "metrics.k8s.io"] == []
        assert kinds.lookup("pods") is kinds.by_kind("Pod")
        assert kinds.lookup("gizmos") is gizmo  # a run-time kind stays
        assert {i.key for i in served} - {i.key for i in kinds.builtin_kinds()} == {
            "NodeMetrics.metrics.k8s.io", "PodMetrics.metrics.k8s.io",
        }  # fmt: skip
        # Still built in: not a name a run-time kind may take.
        with pytest.raises(ValueError, match="built in"):
            kinds.register(KindInfo("PodMetrics", "metrics.k8s.io/v1beta1", qualified=True))
        assert "PodMetrics" in {k for (_, _, k) in kind_types()}  # its types: data
    finally:
        kinds.withdraw_groups(())
        kinds.unregister(gizmo.key)
    assert kinds.builtin_kinds() == served
    assert kinds.lookup("podmetrics").key == "PodMetrics.metrics.k8s.io"
    assert [i.kind for i in kinds.served_at("metrics.k8s.io/v1beta1")] == [
        "NodeMetrics", "PodMetrics",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "plural", "singular"),
    [
        ("Pod", "pods", "pod"),
        ("Ingress", "ingresses", "ingress"),
        ("NetworkPolicy", "networkpolicies", "networkpolicy"),
        ("Endpoints", "endpoints", "endpoints"),
        ("EndpointSlice", "endpointslices", "endpointslice"),
    ],
)
def test_plural_and_singular_are_guessed_as_kubernetes_guesses_them(
    kind: str, plural: str, singular: str
) -> None:
    info = KindInfo(kind, "example.com/v1")
    assert (info.plural, info.singular) == (plural, singular)
    given = KindInfo(kind, "example.com/v1", "things", "thing")
    assert (given.plural, given.singular) == ("things", "thing")


def test_served_at_lists_the_rows_of_each_group_version_in_order() -> None:
    served = {gv for d in kinds.definitions() for gv in d.served_versions()}
    assert {"v1", "apps/v1", "autoscaling/v1", "events.k8s.io/v1"} <= served  # conversions too
    for gv in served:
        expected = tuple(d.info for d in kinds.definitions() if gv in d.served_versions())
        assert kinds.served_at(gv) == expected, gv
    assert kinds.served_at("nothing.example.com/v1") == ()
