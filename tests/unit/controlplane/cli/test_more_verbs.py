"""skiffctl wait, create, label/annotate, api-resources, get all."""

from __future__ import annotations

import threading

import pytest

from controlplane.cli.wait import parse_duration
from tests.fakes.skiffctl import Ctl, Result
from tests.harness.wait import wait_for


def pod(ctl: Ctl, name: str, **labels: str) -> None:
    ctl.client.create("Pod", {"metadata": {"name": name, "labels": labels}, "spec": {}}, "default")


def set_ready(ctl: Ctl, name: str, ready: str = "True") -> None:
    ctl.client.patch(
        "Pod",
        name,
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": ready}]}},
        "default",
        subresource="status",
    )


def run_async(ctl: Ctl, *argv: str) -> tuple[threading.Thread, list[Result]]:
    out: list[Result] = []
    t = threading.Thread(target=lambda: out.append(ctl(*argv)))
    t.start()
    return t, out


@pytest.mark.parametrize(
    ("text", "seconds"), [("30", 30), ("30s", 30), ("2m", 120), ("1h30m", 5400), ("500ms", 0.5)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_wait_condition_already_met_and_later(ctl: Ctl) -> None:
    pod(ctl, "a")
    pod(ctl, "b")
    set_ready(ctl, "a")
    assert ctl("wait", "pod/a", "--for=condition=Ready").out == "pod/a condition met\n"
    t, out = run_async(ctl, "wait", "pod", "a", "b", "--for", "condition=ready", "--timeout", "1m")
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    set_ready(ctl, "b", "False")
    assert t.is_alive()
    set_ready(ctl, "b")
    t.join(5)
    assert out[0].code == 0 and out[0].out == "pod/a condition met\npod/b condition met\n"


def test_wait_times_out_on_the_clock(ctl: Ctl) -> None:
    pod(ctl, "a")
    t, out = run_async(ctl, "wait", "pod/a", "--for=condition=Ready", "--timeout=30s")
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    ctl.clock.step(30)
    t.join(5)
    assert out[0].code == 1
    assert out[0].err == "error: timed out waiting for the condition on pods/a\n"


def test_wait_for_delete_and_jsonpath_and_selector(ctl: Ctl) -> None:
    pod(ctl, "a", app="x")
    pod(ctl, "b", app="x")
    t, out = run_async(ctl, "wait", "pods", "-l", "app=x", "--for=delete")
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    ctl.client.delete("Pod", "a", "default")
    ctl.client.delete("Pod", "b", "default")
    t.join(5)
    assert out[0].out == "pod/a deleted\npod/b deleted\n"
    assert ctl("wait", "pod/gone", "--for=delete").out == "pod/gone deleted\n"
    pod(ctl, "c")
    set_ready(ctl, "c")
    r = ctl("wait", "pod/c", "--for=jsonpath={.status.phase}=Running")
    assert r.out == "pod/c condition met\n"
    assert ctl("wait", "pod/c", "--for=sunshine").code == 1
    assert ctl("wait", "pods", "--for=delete").code == 1  # no name, selector or --all


def test_create(ctl: Ctl) -> None:
    m = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"
    assert ctl("create", "-f", "-", stdin=m).out == "configmap/c created\n"
    r = ctl("create", "-f", "-", stdin=m)
    assert r.code == 1 and "AlreadyExists" in r.err
    assert ctl("create", "namespace", "team").out == "namespace/team created\n"
    assert ctl("create", "gizmo", "x").code == 1


def test_label_and_annotate(ctl: Ctl) -> None:
    ctl.client.create("Node", {"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    assert ctl("label", "node", "n1", "gpu=true").out == "node/n1 labeled\n"
    r = ctl("label", "node/n1", "zone=b")
    assert r.code == 1 and "--overwrite is false" in r.err
    assert ctl("label", "node/n1", "zone=b", "--overwrite").out == "node/n1 labeled\n"
    assert ctl("label", "no", "n1", "gpu-").out == "node/n1 labeled\n"
    assert ctl.client.get("Node", "n1")["metadata"]["labels"] == {"zone": "b"}
    assert ctl("label", "no", "n1", "zone=b").out == "node/n1 not labeled\n"
    assert ctl("annotate", "no", "n1", "note=hi").out == "node/n1 annotated\n"
    assert ctl.client.get("Node", "n1")["metadata"]["annotations"] == {"note": "hi"}
    assert ctl("label", "nodes", "--all", "x=y").out == "node/n1 labeled\n"
    assert ctl("label", "no", "n1").code == 1


def test_api_resources() -> None:
    ctl = Ctl()
    r = ctl("api-resources")
    lines = r.out.splitlines()
    assert lines[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert ["deployments", "deploy", "apps/v1", "true", "Deployment"] in [
        ln.split() for ln in lines
    ]
    assert "deployments.apps" in ctl("api-resources", "-o", "name").out.split()
    assert "pods" not in ctl("api-resources", "--namespaced=false").out.split()
    assert ctl.factory_calls == 0


def test_get_all(ctl: Ctl) -> None:
    pod(ctl, "p")
    ctl.client.create("Deployment", {"metadata": {"name": "d"}, "spec": {}}, "default")
    ctl.client.create("ConfigMap", {"metadata": {"name": "c"}}, "default")
    names = ctl("get", "all", "-o", "name").out.split()
    assert names == ["pod/p", "deployment.apps/d"]
