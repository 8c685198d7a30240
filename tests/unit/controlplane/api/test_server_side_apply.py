"""Server-side apply: managedFields in FieldsV1, conflicts worded as
kube-apiserver words them, --force-conflicts, removal of fields an applier
dropped, and the Update bookkeeping of every other write."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.api import fieldsets
from controlplane.api import server_side_apply as ssa
from controlplane.client.errors import Conflict, Invalid

T = "2026-01-01T00:00:00Z"
CSA = "kubectl-client-side-apply"


def deployment(
    replicas: int = 2, image: str = "nginx:1.19", env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "nginx", "image": image}
    if env is not None:
        container["env"] = env
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [container]},
            },
        },
    }


def entry(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    found = [e for e in obj["metadata"].get("managedFields", []) if e["manager"] == manager]
    assert len(found) == 1, obj["metadata"].get("managedFields")
    first: dict[str, Any] = found[0]
    return first


def owns(obj: dict[str, Any], manager: str, path: str) -> bool:
    fields = {
        fieldsets.path_string(p) for p in fieldsets.from_fields_v1(entry(obj, manager)["fieldsV1"])
    }
    return path in fields


def do_apply(
    live: Any, applied: Any, manager: str = "kubectl", force: bool = False
) -> dict[str, Any]:
    before = copy.deepcopy((live, applied))
    out = ssa.apply(live, applied, manager, force, "Deployment", now=T)
    assert (live, applied) == before, "apply must not modify its inputs"
    return out


def test_create_records_an_apply_entry_in_fields_v1() -> None:
    out = do_apply(None, deployment())
    e = entry(out, "kubectl")
    assert {k: e[k] for k in ("operation", "apiVersion", "time", "fieldsType")} == {
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T,
        "fieldsType": "FieldsV1",
    }
    spec = e["fieldsV1"]["f:spec"]
    assert spec["f:replicas"] == {}
    assert spec["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"nginx"}': {".": {}, "f:image": {}, "f:name": {}}
    }
    assert e["fieldsV1"]["f:metadata"] == {"f:labels": {"f:app": {}}}
    assert out["spec"]["replicas"] == 2


def test_apply_after_client_side_apply_conflicts_on_a_changed_field() -> None:
    live = ssa.record_update(None, deployment(), CSA, now=T)
    with pytest.raises(Conflict) as err:
        do_apply(live, deployment(replicas=5))
    assert str(err.value) == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas'
    )
    assert isinstance(err.value, ssa.ApplyConflict)
    assert err.value.causes == [
        {
            "type": "FieldManagerConflict",
            "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
            "field": ".spec.replicas",
        }
    ]


def test_unchanged_values_are_shared_without_conflict() -> None:
    live = ssa.record_update(None, deployment(), CSA, now=T)
    out = do_apply(live, deployment())
    assert owns(out, "kubectl", ".spec.replicas") and owns(out, CSA, ".spec.replicas")


def test_several_conflicts_are_listed() -> None:
    live = ssa.record_update(None, deployment(), CSA, now=T)
    with pytest.raises(Conflict) as err:
        do_apply(live, deployment(replicas=5, image="nginx:1.21"))
    assert str(err.value) == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="nginx"].image'
    )
    assert len(err.value.causes) == 2  # type: ignore[attr-defined]


def test_force_takes_ownership() -> None:
    live = ssa.record_update(None, deployment(), CSA, now=T)
    out = do_apply(live, deployment(replicas=5), force=True)
    assert out["spec"]["replicas"] == 5
    assert owns(out, "kubectl", ".spec.replicas")
    assert not owns(out, CSA, ".spec.replicas")
    assert owns(out, CSA, ".spec.selector.matchLabels.app")


def test_fields_dropped_from_the_config_are_removed() -> None:
    first = do_apply(
        None, deployment(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    )
    out = do_apply(first, deployment(env=[{"name": "A", "value": "1"}]))
    assert out["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "A", "value": "1"}]
    config = deployment()
    del config["metadata"]["labels"]
    out = do_apply(out, config)
    assert "labels" not in out["metadata"] or not out["metadata"]["labels"]
    assert (
        "env" not in out["spec"]["template"]["spec"]["containers"][0]
        or not out["spec"]["template"]["spec"]["containers"][0]["env"]
    )


def test_a_dropped_field_another_manager_owns_stays() -> None:
    first = do_apply(None, deployment())
    shared = do_apply(first, deployment(), manager="other")
    config = deployment()
    del config["spec"]["replicas"]
    out = do_apply(shared, config)
    assert out["spec"]["replicas"] == 2
    assert not owns(out, "kubectl", ".spec.replicas") and owns(out, "other", ".spec.replicas")


def test_an_update_takes_the_field_and_a_reapply_then_conflicts() -> None:
    applied = do_apply(None, deployment())
    scaled = copy.deepcopy(applied)
    scaled["spec"]["replicas"] = 7
    scaled = ssa.record_update(applied, scaled, "kubectl-scale", now=T)
    assert owns(scaled, "kubectl-scale", ".spec.replicas")
    assert not owns(scaled, "kubectl", ".spec.replicas")
    assert entry(scaled, "kubectl-scale")["operation"] == "Update"
    with pytest.raises(
        Conflict, match=r'conflict with "kubectl-scale" using apps/v1: \.spec\.replicas'
    ):
        do_apply(scaled, deployment())
    # The applier that no longer sets replicas leaves the scaled value alone.
    config = deployment()
    del config["spec"]["replicas"]
    assert do_apply(scaled, config)["spec"]["replicas"] == 7


def test_same_manager_reapply_changes_its_own_fields() -> None:
    first = do_apply(None, deployment())
    out = do_apply(first, deployment(replicas=4, image="nginx:1.21"))
    assert out["spec"]["replicas"] == 4
    assert out["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.21"
    assert len(out["metadata"]["managedFields"]) == 1


def test_containers_merge_by_name_between_managers() -> None:
    first = do_apply(None, deployment())
    other = deployment()
    other["spec"]["template"]["spec"]["containers"] = [{"name": "sidecar", "image": "busybox"}]
    del other["spec"]["replicas"]
    out = do_apply(first, other, manager="injector")
    names = [c["name"] for c in out["spec"]["template"]["spec"]["containers"]]
    assert names == ["nginx", "sidecar"]
    out = do_apply(out, deployment())  # kubectl never owned the sidecar: it stays
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == [
        "nginx",
        "sidecar",
    ]


def test_finalizers_are_a_set_with_value_paths() -> None:
    config = deployment()
    config["metadata"]["finalizers"] = ["a.example/x"]
    out = do_apply(None, config)
    assert entry(out, "kubectl")["fieldsV1"]["f:metadata"]["f:finalizers"] == {
        'v:"a.example/x"': {}
    }


def test_record_update_on_create_owns_everything_but_server_metadata() -> None:
    obj = deployment()
    obj["metadata"]["uid"] = "u"
    obj["metadata"]["resourceVersion"] = "1"
    out = ssa.record_update(None, obj, "skiffctl", now=T)
    fields = fieldsets.from_fields_v1(entry(out, "skiffctl")["fieldsV1"])
    shown = {fieldsets.path_string(p) for p in fields}
    assert (
        ".metadata.uid" not in shown and ".metadata.name" not in shown and ".spec.replicas" in shown
    )
    assert ".apiVersion" not in shown


def test_record_update_drops_removed_fields_and_empty_entries() -> None:
    live = ssa.record_update(None, deployment(), "a", now=T)
    changed = copy.deepcopy(live)
    del changed["spec"]["replicas"]
    out = ssa.record_update(live, changed, "b", now=T)
    assert not owns(out, "a", ".spec.replicas")
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["a"]  # b owns nothing


def test_record_update_keeps_managed_fields_the_client_changed() -> None:
    live = ssa.record_update(None, deployment(), "a", now=T)
    cleared = copy.deepcopy(live)
    cleared["metadata"]["managedFields"] = []
    assert "managedFields" not in ssa.record_update(live, cleared, "b", now=T)["metadata"]


def test_fields_v1_round_trip_and_paths() -> None:
    paths = {
        ("f:spec", "f:replicas"),
        ("f:spec", 'k:{"name":"a"}'),
        ("f:spec", 'k:{"name":"a"}', "f:image"),
    }
    doc = fieldsets.to_fields_v1(paths)
    assert doc == {"f:spec": {"f:replicas": {}, 'k:{"name":"a"}': {".": {}, "f:image": {}}}}
    assert fieldsets.from_fields_v1(doc) == paths
    assert (
        fieldsets.path_string(("f:metadata", "f:finalizers", 'v:"x"'))
        == '.metadata.finalizers[="x"]'
    )


@pytest.mark.parametrize(
    ("config", "manager", "words"),
    [
        ({"kind": "Deployment", "metadata": {"name": "x"}}, "m", "apiVersion: required"),
        ({"apiVersion": "apps/v1", "metadata": {"name": "x"}}, "m", "kind: required"),
        (deployment(), "", "fieldManager: required"),
        ("x", "m", "must be an object"),
    ],
)
def test_bad_apply_requests(config: Any, manager: str, words: str) -> None:
    with pytest.raises(Invalid, match=words):
        ssa.apply(None, config, manager, False, "Deployment")


def test_bad_managed_fields_are_invalid() -> None:
    live = deployment()
    live["metadata"]["managedFields"] = "nope"
    with pytest.raises(Invalid, match=r"metadata\.managedFields"):
        ssa.apply(live, deployment(), "m", False, "Deployment")


def test_an_object_without_managed_fields_belongs_to_before_first_apply() -> None:
    live = deployment()
    with pytest.raises(Conflict, match='conflict with "before-first-apply"'):
        do_apply(live, deployment(replicas=3))
    out = do_apply(live, deployment(replicas=3), force=True)
    assert owns(out, "kubectl", ".spec.replicas")
    assert owns(out, "before-first-apply", ".spec.selector.matchLabels.app")


def test_status_goes_through_the_status_subresource_only() -> None:
    config = deployment()
    config["status"] = {"replicas": 9}
    out = do_apply(None, config)
    assert "status" not in out
    status_config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "status": {"replicas": 3},
        "spec": {"replicas": 100},
    }
    out = ssa.apply(
        out, status_config, "controller", False, "Deployment", subresource="status", now=T
    )
    assert out["status"] == {"replicas": 3} and out["spec"]["replicas"] == 2
    e = entry(out, "controller")
    assert e["subresource"] == "status" and "f:spec" not in e["fieldsV1"]


# The ownership diff skips equal subtrees; it must find exactly the paths a
# full comparison of both objects' flattened fields finds.
_scalars = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["a", "b"]), st.booleans())
_env = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["A", "B", "C"])}, optional={"value": _scalars}),
    max_size=3,
)
_container = st.fixed_dictionaries(
    {"name": st.sampled_from(["x", "y", "z"])},
    optional={
        "image": _scalars,
        "env": _env,
        "args": st.lists(_scalars, max_size=2),
        "resources": st.dictionaries(
            st.sampled_from(["limits", "requests"]),
            st.dictionaries(st.sampled_from(["cpu"]), _scalars, max_size=1),
            max_size=2,
        ),
    },
)
_objects = st.fixed_dictionaries(
    {"apiVersion": st.just("apps/v1"), "kind": st.just("Deployment")},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(st.sampled_from(["a", "b"]), _scalars, max_size=2),
                "finalizers": st.lists(st.sampled_from(["f1", "f2", "f3"]), max_size=3),
                "name": st.just("web"),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "replicas": _scalars,
                "template": st.fixed_dictionaries(
                    {
                        "spec": st.fixed_dictionaries(
                            {},
                            optional={
                                "containers": st.lists(_container, max_size=3),
                                "tolerations": st.lists(
                                    st.dictionaries(st.just("key"), _scalars), max_size=2
                                ),
                            },
                        )
                    }
                ),
            },
        ),
        "status": st.dictionaries(st.sampled_from(["replicas", "ready"]), _scalars, max_size=2),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=_objects, new=_objects)
def test_the_ownership_diff_matches_a_full_comparison(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    before, after = fieldsets.flatten("Deployment", old), fieldsets.flatten("Deployment", new)
    present: set[fieldsets.Path] = set()
    gone: set[fieldsets.Path] = set()
    fieldsets.diff(
        "Deployment",
        fieldsets.managed_part(old),
        fieldsets.managed_part(new),
        (),
        "",
        present,
        gone,
    )
    assert present == {p for p, v in after.items() if p not in before or before[p] != v}
    assert gone == before.keys() - after.keys()


def _shapes() -> list[dict[str, Any]]:
    with_lists = deployment(env=[{"name": "A", "value": "1"}, {"name": "B"}])
    with_lists["metadata"]["finalizers"] = ["a.example/x", "b.example/y"]
    with_lists["metadata"]["ownerReferences"] = [{"uid": "u1", "kind": "X", "name": "x"}]
    with_lists["metadata"]["annotations"] = {"nulls": None}
    with_lists["spec"]["template"]["spec"]["volumes"] = []
    with_lists["spec"]["template"]["spec"]["securityContext"] = {}
    with_lists["spec"]["template"]["spec"]["containers"][0]["args"] = ["a", "b"]
    with_lists["spec"]["strategy"] = {"rollingUpdate": None}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "web"}},
    }
    return [deployment(), with_lists, service]


@pytest.mark.parametrize("obj", _shapes())
def test_a_create_entry_is_the_field_set_of_the_whole_object(obj: dict[str, Any]) -> None:
    """The one-walk (and cached) FieldsV1 of a create is the path-set one."""
    kind = obj["kind"]
    for _ in range(2):  # the second from the cache
        out = ssa.record_update(None, obj, "creator", now=T)
        assert entry(out, "creator")["fieldsV1"] == fieldsets.to_fields_v1(
            set(fieldsets.flatten(kind, obj))
        )


def test_creates_from_one_template_share_no_field_sets() -> None:
    a = ssa.record_update(None, deployment(), "rs", now=T)
    b = ssa.record_update(None, deployment(), "rs", now=T)
    entry(a, "rs")["fieldsV1"]["f:spec"]["f:replicas"]["mutated"] = {}
    assert "mutated" not in entry(b, "rs")["fieldsV1"]["f:spec"]["f:replicas"]


def test_a_write_that_changes_nothing_changes_no_entry() -> None:
    live = ssa.record_update(None, deployment(), "a", now=T)
    same = copy.deepcopy(live)
    del same["metadata"]["managedFields"]  # a client that never saw them
    later = "2026-01-01T00:05:00Z"
    assert ssa.updated_entries(live, same, "b", now=later) == live["metadata"]["managedFields"]


def test_status_writes_keep_the_entries_and_update_their_own() -> None:
    live = ssa.record_update(None, deployment(), "creator", now=T)
    status = copy.deepcopy(live)
    status["status"] = {"replicas": 1}
    one = ssa.record_update(live, status, "agent", subresource="status", now=T)
    assert entry(one, "creator") == entry(live, "creator")
    mine = entry(one, "agent")
    assert mine["subresource"] == "status"
    assert mine["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    again = copy.deepcopy(one)
    again["status"] = {"replicas": 2, "readyReplicas": 2}
    later = "2026-01-01T00:05:00Z"
    two = ssa.record_update(one, again, "agent", subresource="status", now=later)
    assert [e["manager"] for e in two["metadata"]["managedFields"]] == ["creator", "agent"]
    assert entry(two, "agent")["time"] == later
    assert entry(two, "agent")["fieldsV1"] == {
        "f:status": {"f:readyReplicas": {}, "f:replicas": {}}
    }


def test_an_untracked_object_stays_untracked_until_its_first_apply() -> None:
    legacy = deployment()  # stored before managedFields, or with them cleared
    changed = deployment(replicas=5)
    updated = ssa.record_update(legacy, changed, "controller", now=T)
    assert "managedFields" not in updated["metadata"]
    applied = do_apply(updated, deployment(replicas=5))
    assert owns(applied, ssa.BEFORE_FIRST_APPLY, ".spec.replicas")
    assert owns(applied, "kubectl", ".spec.replicas")


_ELEMENTS = st.sampled_from(["f:a", "f:b", 'k:{"name":"x"}', "v:1"])
_PATHS = st.sets(st.lists(_ELEMENTS, min_size=1, max_size=3).map(tuple), max_size=8)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(old=_PATHS, removed=_PATHS, added=_PATHS)
def test_editing_a_fields_v1_document_is_editing_its_set(
    old: set[tuple[str, ...]], removed: set[tuple[str, ...]], added: set[tuple[str, ...]]
) -> None:
    doc = fieldsets.to_fields_v1(old)
    before = copy.deepcopy(doc)
    out = fieldsets.edited(doc, removed, added)
    assert doc == before, "edited must not change its input"
    assert out == fieldsets.to_fields_v1((old - removed) | added)


def test_update_managers_are_capped_into_ancient_changes() -> None:
    live = ssa.record_update(None, deployment(), "creator", now="2026-01-01T00:00:00Z")
    for i in range(12):  # twelve more managers, each setting its own label
        changed = copy.deepcopy(live)
        changed["metadata"]["labels"][f"l{i}"] = "x"
        live = ssa.record_update(live, changed, f"m{i:02d}", now=f"2026-01-01T00:{i + 1:02d}:00Z")
    managers = [e["manager"] for e in live["metadata"]["managedFields"]]
    assert len(managers) == ssa.MAX_UPDATE_MANAGERS
    assert ssa.ANCIENT_CHANGES in managers and "creator" not in managers
    assert "m11" in managers and "m00" not in managers
    # Nothing is lost: the oldest managers' fields live on in ancient-changes.
    assert owns(live, ssa.ANCIENT_CHANGES, ".spec.replicas")
    assert owns(live, ssa.ANCIENT_CHANGES, ".metadata.labels.l0")
