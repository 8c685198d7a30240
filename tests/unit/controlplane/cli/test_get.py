"""skiffctl get: tables that line up, kinds by any name, output formats, errors, watch."""

from __future__ import annotations

import json
import threading
from typing import Any

import yaml

from tests.fakes.skiffctl import Ctl
from tests.harness.wait import wait_for


def make_pod(
    ctl: Ctl,
    name: str,
    ns: str = "default",
    node: str = "",
    phase: str = "Running",
    ready: bool = True,
    restarts: int = 0,
    **labels: str,
) -> None:
    ctl.client.create(
        "Pod",
        {
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        },
        ns,
    )
    ctl.client.patch(
        "Pod",
        name,
        {
            "status": {
                "phase": phase,
                "podIP": "10.0.0.5",
                "containerStatuses": [
                    {
                        "name": "c",
                        "ready": ready,
                        "restartCount": restarts,
                        "state": {"running": {}}
                        if ready
                        else {"waiting": {"reason": "CrashLoopBackOff"}},
                    }
                ],
            }
        },
        ns,
        subresource="status",
    )


def columns(line: str) -> list[int]:
    """Start offsets of each column in a table line."""
    return [
        i
        for i, ch in enumerate(line)
        if ch != " " and (i == 0 or (line[i - 1] == " " and line[i - 2 : i] == "  "))
    ]


def test_pods_table_lines_up_with_kubectl_columns(ctl: Ctl) -> None:
    make_pod(ctl, "web-1", node="n1")
    make_pod(ctl, "a-much-longer-pod-name", ready=False, restarts=7)
    ctl.clock.step(3 * 3600 + 5)
    r = ctl("get", "pods")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split() == ["a-much-longer-pod-name", "0/1", "CrashLoopBackOff", "7", "3h"]
    assert lines[2].split() == ["web-1", "1/1", "Running", "0", "3h"]
    header = lines[0]
    for ln in lines[1:]:
        for col in ("READY", "STATUS", "RESTARTS", "AGE"):
            start = header.index(col)
            assert ln[start - 1] == " " and ln[start] != " "
    wide = ctl("get", "po", "-o", "wide").out.splitlines()
    assert wide[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert wide[2].split()[5:7] == ["10.0.0.5", "n1"]


def test_kind_names_and_type_name_forms(ctl: Ctl) -> None:
    ctl.client.create(
        "Deployment", {"metadata": {"name": "web"}, "spec": {"replicas": 3}}, "default"
    )
    for word in ("deploy", "deployment", "deployments", "Deployment", "deployments.apps"):
        r = ctl("get", word)
        assert r.code == 0 and r.out.splitlines()[0].split() == [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
        ], word
        assert r.out.splitlines()[1].split()[:2] == ["web", "0/3"]
    r = ctl("get", "deploy", "-o", "name")
    assert r.out == "deployment.apps/web\n"
    assert ctl("get", r.out.strip(), "-o", "name").out == "deployment.apps/web\n"


def test_nodes_and_services_columns(ctl: Ctl) -> None:
    ctl.client.create(
        "Node",
        {
            "metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": True},
        },
    )
    ctl.client.patch(
        "Node",
        "n1",
        {
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": "v0.1.0"},
            }
        },
        subresource="status",
    )
    r = ctl("get", "no")
    assert r.out.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert r.out.splitlines()[1].split() == [
        "n1",
        "Ready,SchedulingDisabled",
        "control-plane",
        "0s",
        "v0.1.0",
    ]
    ctl.client.create(
        "Service",
        {
            "metadata": {"name": "web"},
            "spec": {
                "type": "NodePort",
                "clusterIP": "10.96.0.10",
                "ports": [{"port": 80, "nodePort": 30080}],
            },
        },
        "default",
    )
    r = ctl("get", "svc")
    assert r.out.splitlines()[0].split() == [
        "NAME",
        "TYPE",
        "CLUSTER-IP",
        "EXTERNAL-IP",
        "PORT(S)",
        "AGE",
    ]
    assert r.out.splitlines()[1].split() == [
        "web",
        "NodePort",
        "10.96.0.10",
        "<none>",
        "80:30080/TCP",
        "0s",
    ]


def test_namespaces_selectors_and_all_namespaces(ctl: Ctl) -> None:
    make_pod(ctl, "a", app="web")
    make_pod(ctl, "b", app="db")
    make_pod(ctl, "c", ns="kube-system", app="web")
    assert [ln.split()[0] for ln in ctl("get", "pods", "-l", "app=web").out.splitlines()[1:]] == [
        "a"
    ]
    r = ctl("get", "pods", "-A", "-l", "app=web")
    assert r.out.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [ln.split()[:2] for ln in r.out.splitlines()[1:]] == [
        ["default", "a"],
        ["kube-system", "c"],
    ]
    r = ctl("get", "pods", "-n", "kube-system", "--field-selector", "metadata.name=c")
    assert [ln.split()[0] for ln in r.out.splitlines()[1:]] == ["c"]
    assert [ln.split()[0] for ln in ctl("-n", "kube-system", "get", "po").out.splitlines()[1:]] == [
        "c"
    ]
    r = ctl("get", "pods", "-n", "empty")
    assert r.code == 0 and r.out == "" and r.err == "No resources found in empty namespace.\n"
    r = ctl("get", "po", "--show-labels")
    assert r.out.splitlines()[0].split()[-1] == "LABELS" and "app=web" in r.out


def test_pagination_reads_every_page(ctl: Ctl) -> None:
    for i in range(7):
        make_pod(ctl, f"p{i}")
    r = ctl("get", "pods", "--chunk-size", "3", "--no-headers")
    assert len(r.out.splitlines()) == 7
    assert len([c for c in ctl.client.calls if c.verb == "list"]) == 3


def test_yaml_json_outputs(ctl: Ctl) -> None:
    make_pod(ctl, "a")
    make_pod(ctl, "b")
    one = yaml.safe_load(ctl("get", "pod", "a", "-o", "yaml").out)
    assert one["kind"] == "Pod" and one["metadata"]["name"] == "a"
    many = json.loads(ctl("get", "pods", "-o", "json").out)
    assert many["kind"] == "List" and [i["metadata"]["name"] for i in many["items"]] == ["a", "b"]


def test_errors_and_exit_codes(ctl: Ctl) -> None:
    make_pod(ctl, "a")
    r = ctl("get", "pod", "a", "missing")
    assert r.code == 1 and r.out.splitlines()[1].split()[0] == "a"
    assert r.err == 'Error from server (NotFound): pods "missing" not found\n'
    assert ctl("get", "pod", "missing", "--ignore-not-found").code == 0
    r = ctl("get", "gizmos")
    assert r.code == 1 and 'resource type "gizmos"' in r.err and "Pod" in r.err
    assert ctl("get").code == 1
    r = ctl("get", "pods", "-o", "fancy")
    assert r.code == 1 and "unable to match a printer" in r.err
    assert ctl("frobnicate").code == 2
    assert ctl("get", "pods", "--bogus-flag").code == 2


def test_multiple_kinds_print_one_table_each_with_type_prefix(ctl: Ctl) -> None:
    make_pod(ctl, "a")
    ctl.client.create("Service", {"metadata": {"name": "s"}, "spec": {}}, "default")
    blocks = ctl("get", "pods,svc").out.split("\n\n")
    assert blocks[0].splitlines()[1].split()[0] == "pod/a"
    assert blocks[1].splitlines()[1].split()[0] == "service/s"


def test_watch_prints_rows_until_the_watch_ends(ctl: Ctl) -> None:
    make_pod(ctl, "a")
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(ctl("get", "pods", "-w")))
    t.start()
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    make_pod(ctl, "b")
    ctl.client.delete("Pod", "a", "default")
    wait_for(lambda: len(ctl.client.calls_of("delete")) == 1)
    ctl.client.end_watches()
    t.join(5)
    r = result[0]
    assert r.code == 0
    names = [ln.split()[0] for ln in r.out.splitlines()]
    assert names[0] == "NAME" and names[1] == "a"
    assert names[2:] == ["b", "b", "a"]  # ADDED b, MODIFIED b (status), DELETED a


def test_jsonpath_and_custom_columns(ctl: Ctl) -> None:
    make_pod(ctl, "a", node="n1")
    make_pod(ctl, "b", node="n2")
    assert ctl("get", "pod", "a", "-o", "jsonpath={.status.podIP}").out == "10.0.0.5"
    assert ctl("get", "pods", "-o", "jsonpath={.items[*].metadata.name}").out == "a b"
    r = ctl(
        "get",
        "pods",
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.spec.nodeName}{"\\n"}{end}',
    )
    assert r.out == "a\tn1\nb\tn2\n"
    r = ctl("get", "pods", "-o", "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,X:.nope")
    assert r.out.splitlines() == ["NAME   NODE   X", "a      n1     <none>", "b      n2     <none>"]
    r = ctl("get", "pods", "-o", "jsonpath={.items[")
    assert r.code == 1 and "jsonpath" in r.err
    assert ctl("get", "pods", "-o", "custom-columns=bad").code == 1


def test_sort_by(ctl: Ctl) -> None:
    for name, restarts in (("a", 3), ("b", 10), ("c", 1)):
        make_pod(ctl, name, restarts=restarts)
    r = ctl("get", "pods", "-o", "name", "--sort-by", "{.status.containerStatuses[0].restartCount}")
    assert r.out.split() == ["pod/c", "pod/a", "pod/b"]
    r = ctl("get", "pods", "--no-headers", "--sort-by=.metadata.name")
    assert [ln.split()[0] for ln in r.out.splitlines()] == ["a", "b", "c"]
    assert ctl("get", "pods", "--sort-by", ".a[").code == 1


def test_name_with_all_namespaces_is_refused(ctl: Ctl) -> None:
    r = ctl("get", "pod", "a", "-A")
    assert r.code == 1 and "across all namespaces" in r.err
    ctl.client.create("Node", {"metadata": {"name": "n1"}})
    assert ctl("get", "node", "n1", "-A", "-o", "name").out == "node/n1\n"


def test_watch_by_name_resumes_from_the_object_version(ctl: Ctl) -> None:
    make_pod(ctl, "a")
    make_pod(ctl, "b")
    rv_a = ctl.client.get("Pod", "a", "default")["metadata"]["resourceVersion"]
    versions: list[str] = []
    real_watch = ctl.client.watch

    def spy(*args: Any, **kwargs: Any) -> Any:
        versions.append(args[2].resource_version)
        return real_watch(*args, **kwargs)

    ctl.client.watch = spy  # type: ignore[method-assign]
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(ctl("get", "pod", "a", "-w", "-o", "name")))
    t.start()
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    ctl.client.patch("Pod", "b", {"metadata": {"labels": {"x": "1"}}}, "default")
    ctl.client.patch("Pod", "a", {"metadata": {"labels": {"x": "1"}}}, "default")
    ctl.client.end_watches()
    t.join(5)
    assert result[0].out == "pod/a\npod/a\n"
    assert versions == [rv_a]  # no change between the get and the watch can be missed
