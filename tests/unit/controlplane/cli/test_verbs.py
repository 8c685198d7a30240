"""skiffctl delete, patch, scale, cordon/uncordon, drain, describe, events, stubs."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from controlplane.client.interface import DeleteOptions
from tests.fakes.skiffctl import Ctl, Result
from tests.harness.wait import wait_for


def deploy(ctl: Ctl, name: str = "web", replicas: int = 2) -> None:
    ctl.client.create(
        "Deployment",
        {
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        },
        "default",
    )


def pod(
    ctl: Ctl,
    name: str,
    node: str = "n1",
    owner: str | None = "ReplicaSet",
    ns: str = "default",
    **extra: Any,
) -> None:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "o", "uid": "u", "controller": True}]
    ctl.client.create("Pod", {"metadata": meta, "spec": {"nodeName": node, **extra}}, ns)


# ---- delete -------------------------------------------------------------------


def test_delete_forms_and_messages(ctl: Ctl, tmp_path: Path) -> None:
    deploy(ctl, "a")
    deploy(ctl, "b")
    deploy(ctl, "c")
    r = ctl("delete", "deploy", "a")
    assert (r.code, r.out) == (0, 'deployment.apps "a" deleted\n')
    assert ctl("delete", "deployment.apps/b").out == 'deployment.apps "b" deleted\n'
    f = tmp_path / "c.yaml"
    f.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: c}\n")
    assert ctl("delete", "-f", str(f)).out == 'deployment.apps "c" deleted\n'
    r = ctl("delete", "deploy", "a")
    assert r.code == 1 and r.err == 'Error from server (NotFound): deployments.apps "a" not found\n'
    assert ctl("delete", "deploy", "a", "--ignore-not-found").code == 0
    r = ctl("delete", "deploy")
    assert r.code == 1 and "no name was specified" in r.err


def test_delete_by_selector_and_all(ctl: Ctl) -> None:
    for n in ("a", "b", "c"):
        deploy(ctl, n)
    r = ctl("delete", "deploy", "-l", "app=a")
    assert r.out == 'deployment.apps "a" deleted\n'
    r = ctl("delete", "deploy", "--all")
    assert r.out == 'deployment.apps "b" deleted\ndeployment.apps "c" deleted\n'


def test_delete_passes_grace_and_cascade(ctl: Ctl) -> None:
    deploy(ctl, "a")
    seen: list[DeleteOptions] = []
    real = ctl.client.delete

    def spy(
        kind: str, name: str, namespace: str | None = None, options: DeleteOptions | None = None
    ) -> Any:
        seen.append(options or DeleteOptions())
        return real(kind, name, namespace, options)

    ctl.client.delete = spy  # type: ignore[method-assign]
    ctl("delete", "deploy", "a", "--grace-period", "5", "--cascade=orphan")
    assert seen[-1] == DeleteOptions(grace_period_seconds=5, propagation_policy="Orphan")
    deploy(ctl, "a")
    ctl("delete", "deploy/a", "--force", "--cascade", "foreground", "--wait=false")
    assert seen[-1] == DeleteOptions(grace_period_seconds=0, propagation_policy="Foreground")
    assert ctl("delete", "deploy/a", "--cascade=sideways").code == 2


def test_delete_waits_for_finalizers_by_watching(ctl: Ctl) -> None:
    ctl.client.create("ConfigMap", {"metadata": {"name": "c", "finalizers": ["x/y"]}}, "default")
    result: list[Result] = []
    t = threading.Thread(target=lambda: result.append(ctl("delete", "cm", "c")))
    t.start()
    wait_for(lambda: ctl.client.open_watches("ConfigMap") == 1)
    assert t.is_alive()
    ctl.client.patch("ConfigMap", "c", {"metadata": {"finalizers": None}}, "default")
    t.join(5)
    assert result[0].code == 0 and result[0].out == 'configmap "c" deleted\n'


def test_delete_wait_times_out_on_clock(ctl: Ctl) -> None:
    ctl.client.create("ConfigMap", {"metadata": {"name": "c", "finalizers": ["x/y"]}}, "default")
    result: list[Result] = []
    t = threading.Thread(target=lambda: result.append(ctl("delete", "cm", "c", "--timeout", "30")))
    t.start()
    wait_for(lambda: ctl.client.open_watches("ConfigMap") == 1)
    ctl.clock.step(30)
    t.join(5)
    assert result[0].code == 1 and "timed out" in result[0].err


# ---- patch / scale -----------------------------------------------------------------


def test_patch_merge(ctl: Ctl) -> None:
    deploy(ctl)
    r = ctl(
        "patch", "deploy", "web", "-p", '{"spec":{"replicas":5},"metadata":{"labels":{"app":null}}}'
    )
    assert (r.code, r.out) == (0, "deployment.apps/web patched\n")
    live = ctl.client.get("Deployment", "web", "default")
    assert live["spec"]["replicas"] == 5 and "app" not in live["metadata"]["labels"]
    assert ctl("patch", "deployment/web", "-p", "spec: {replicas: 5}").out == (
        "deployment.apps/web patched (no change)\n"
    )
    r = ctl("patch", "deploy", "web", "--type", "json", "-p", "[]")
    assert r.code == 1 and "not supported" in r.err
    r = ctl("patch", "deploy", "web", "-p", "[1]")
    assert r.code == 1 and "JSON object" in r.err
    r = ctl("patch", "deploy", "nope", "-p", "{}")
    assert r.code == 1 and "NotFound" in r.err
    r = ctl("patch", "deploy", "web", "--subresource", "status", "-p", '{"status":{"replicas":1}}')
    assert r.code == 0
    assert ctl.client.get("Deployment", "web", "default")["status"] == {"replicas": 1}


def test_scale(ctl: Ctl) -> None:
    deploy(ctl)
    r = ctl("scale", "deploy/web", "--replicas", "4")
    assert (r.code, r.out) == (0, "deployment.apps/web scaled\n")
    assert ctl.client.get("Deployment", "web", "default")["spec"]["replicas"] == 4
    assert ctl.client.calls_of("update_scale")
    r = ctl("scale", "deploy", "web", "--replicas", "1", "--current-replicas", "3")
    assert r.code == 1 and "Expected replicas to be 3, was 4" in r.err
    assert ctl("scale", "deploy", "web", "--replicas=1", "--current-replicas=4").code == 0
    r = ctl("scale", "pod", "p", "--replicas", "1")
    assert r.code == 1 and "cannot be scaled" in r.err
    assert ctl("scale", "deploy/web").code == 2  # --replicas is required
    assert ctl("scale", "deploy/web", "--replicas", "-1").code == 1


# ---- nodes -------------------------------------------------------------------------


def test_cordon_uncordon(ctl: Ctl) -> None:
    ctl.client.create("Node", {"metadata": {"name": "n1", "labels": {"pool": "a"}}})
    assert ctl("cordon", "n1").out == "node/n1 cordoned\n"
    assert ctl.client.get("Node", "n1")["spec"]["unschedulable"] is True
    assert ctl("cordon", "node/n1").out == "node/n1 already cordoned\n"
    assert ctl("uncordon", "-l", "pool=a").out == "node/n1 uncordoned\n"
    assert "unschedulable" not in ctl.client.get("Node", "n1").get("spec", {})
    assert ctl("uncordon", "n1").out == "node/n1 already uncordoned\n"
    r = ctl("cordon", "n9")
    assert r.code == 1 and 'nodes "n9" not found' in r.err


def test_drain_refuses_then_evicts_and_waits(ctl: Ctl) -> None:
    ctl.client.graceful_pod_delete = True
    ctl.client.create("Node", {"metadata": {"name": "n1"}})
    pod(ctl, "rs-pod")
    pod(ctl, "ds-pod", owner="DaemonSet")
    pod(ctl, "bare", owner=None)
    pod(ctl, "scratch", volumes=[{"name": "tmp", "emptyDir": {}}])
    pod(ctl, "elsewhere", node="n2", owner=None)
    r = ctl("drain", "n1")
    assert r.code == 1
    assert (
        "cannot delete Pods that declare no controller (use --force to override): default/bare"
        in r.err
    )
    assert "--ignore-daemonsets" in r.err and "--delete-emptydir-data" in r.err
    assert ctl.client.get("Node", "n1")["spec"]["unschedulable"] is True
    assert not ctl.client.calls_of("delete")  # nothing deleted when the drain is refused

    result: list[Result] = []
    t = threading.Thread(
        target=lambda: result.append(
            ctl("drain", "n1", "--ignore-daemonsets", "--delete-emptydir-data", "--force")
        )
    )
    t.start()
    wait_for(lambda: ctl.client.open_watches("Pod") == 1)
    for name in ("bare", "rs-pod", "scratch"):
        ctl.client.finish_delete("Pod", name, "default")  # the agent confirms
    t.join(5)
    r = result[0]
    assert r.code == 0, r.err
    assert "Warning: ignoring DaemonSet-managed Pods: default/ds-pod" in r.err
    assert r.out.splitlines() == [
        "node/n1 already cordoned",
        "evicting pod default/bare",
        "evicting pod default/rs-pod",
        "evicting pod default/scratch",
        "pod/bare evicted",
        "pod/rs-pod evicted",
        "pod/scratch evicted",
        "node/n1 drained",
    ]
    remaining = {p["metadata"]["name"] for p in ctl.client.objects("Pod")}
    assert remaining == {"ds-pod", "elsewhere"}


# ---- describe / events ---------------------------------------------------------------


def test_describe_pod_with_events(ctl: Ctl) -> None:
    pod(ctl, "web-1", containers=[{"name": "app", "image": "busybox:1.36"}])
    ctl.client.create(
        "Event",
        {
            "metadata": {"name": "e1"},
            "type": "Normal",
            "reason": "Scheduled",
            "message": "Successfully assigned default/web-1 to n1",
            "involvedObject": {"kind": "Pod", "name": "web-1"},
            "source": {"component": "default-scheduler"},
        },
        "default",
    )
    ctl.client.create(
        "Event",
        {
            "metadata": {"name": "e2"},
            "reason": "Other",
            "involvedObject": {"kind": "Pod", "name": "other"},
        },
        "default",
    )
    r = ctl("describe", "pod", "web-1")
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].split() == ["Name:", "web-1"]
    assert lines[1].split() == ["Namespace:", "default"]
    assert lines[0].index("web-1") == lines[1].index("default")  # values line up
    assert "Controlled By:" in r.out and "ReplicaSet/o" in r.out
    assert "Image:" in r.out and "busybox:1.36" in r.out
    events = r.out[r.out.index("Events:") :]
    assert "Scheduled" in events and "default-scheduler" in events and "Other" not in events
    r = ctl("describe", "pod/missing")
    assert r.code == 1 and "NotFound" in r.err


def test_describe_other_kinds(ctl: Ctl) -> None:
    deploy(ctl)
    ctl.client.create("Node", {"metadata": {"name": "n1"}})
    pod(ctl, "p")
    ctl.client.create(
        "ConfigMap", {"metadata": {"name": "cm"}, "data": {"key": "value"}}, "default"
    )
    assert "Replicas:" in ctl("describe", "deploy", "web").out
    node = ctl("describe", "no", "n1").out
    assert "Non-terminated Pods:" in node and " p " in node
    cm = ctl("describe", "cm", "cm").out
    assert "Data:" in cm and "key:" in cm
    both = ctl("describe", "deploy").out
    assert both.count("Name:") == 1


def test_events_sorted_filtered_and_empty(ctl: Ctl) -> None:
    assert ctl("events").err == "No events found in default namespace.\n"
    for i, (typ, reason, when) in enumerate(
        [
            ("Warning", "BackOff", "2023-11-14T22:10:00Z"),
            ("Normal", "Pulled", "2023-11-14T22:00:00Z"),
        ]
    ):
        ctl.client.create(
            "Event",
            {
                "metadata": {"name": f"e{i}"},
                "type": typ,
                "reason": reason,
                "lastTimestamp": when,
                "message": f"m{i}",
                "involvedObject": {"kind": "Pod", "name": f"p{i}"},
            },
            "default",
        )
    r = ctl("events")
    lines = r.out.splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert [ln.split()[2] for ln in lines[1:]] == ["Pulled", "BackOff"]
    assert "pod/p0" in lines[2]
    assert len(ctl("events", "--types", "Warning").out.splitlines()) == 2
    assert len(ctl("events", "--for", "pod/p1").out.splitlines()) == 2
    assert ctl("events", "--types", "Loud").code == 1


# ---- dispatch, stubs, connection -------------------------------------------------------


def test_usage_and_help(ctl: Ctl, capsys: pytest.CaptureFixture[str]) -> None:
    assert ctl().code == 2
    assert ctl("--help").code == 0
    assert "VERB" in capsys.readouterr().out


def test_bad_arguments_never_connect(ctl: Ctl) -> None:
    assert ctl("get", "gizmo").code == 1
    assert ctl("get", "pods", "--bogus").code == 2
    assert ctl.factory_calls == 0


def test_default_factory_reports_missing_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from controlplane.cli.main import main

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SKIFF_CONFIG", raising=False)
    code = main(["--config", str(tmp_path / "nope.conf"), "get", "pods"])
    assert code == 1
    assert "nope.conf" in capsys.readouterr().err


def test_unavailable_server_message(ctl: Ctl) -> None:
    from controlplane.client import errors

    ctl.client.fail("list", errors.Unavailable("connection refused"))
    r = ctl("get", "pods")
    assert r.code == 1 and r.err == "Unable to connect to the server: connection refused\n"


def test_events_watch_prints_new_events(ctl: Ctl) -> None:
    result: list[Result] = []
    t = threading.Thread(target=lambda: result.append(ctl("events", "-w", "--types", "Warning")))
    t.start()
    wait_for(lambda: ctl.client.open_watches("Event") == 1)
    for name, typ in (("e1", "Normal"), ("e2", "Warning")):
        ctl.client.create(
            "Event",
            {
                "metadata": {"name": name},
                "type": typ,
                "reason": f"R{name}",
                "involvedObject": {"kind": "Pod", "name": "p"},
            },
            "default",
        )
    wait_for(lambda: len(ctl.client.objects("Event")) == 2)
    ctl.client.end_watches()
    t.join(5)
    r = result[0]
    assert r.code == 0
    lines = r.out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("LAST SEEN")
    assert lines[1].split()[1:3] == ["Warning", "Re2"]
