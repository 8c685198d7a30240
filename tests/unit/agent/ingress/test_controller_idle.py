"""The node's ingress costs nothing until used: HAProxy starts with the first
Ingress of our classes, the node is annotated (and so the Ingress's status
written) only once HAProxy runs, and the last Ingress's deletion stops it
softly, removes the annotation and the Secrets' keys from the disk. HAProxy
itself is a stand-in here; tests/linux/proxy/test_ingress_haproxy.py runs
the real one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.ingress.controller import PORTS_ANNOTATION, IngressController, IngressTiming
from agent.ingress.haproxy import IngressSettings
from agent.ingress.model import CONTROLLER
from tests.fakes.fake_apiclient import FakeApiClient
from tests.harness.wait import wait_for


class FakeHAProxy:
    """Records what the controller asks of HAProxy, and the node's annotation
    at the moment HAProxy was started."""

    def __init__(self, api: FakeApiClient) -> None:
        self.api = api
        self.running = False
        self.starts: list[str | None] = []  # the node's annotation when started
        self.reloads = 0
        self.stops: list[float] = []  # the drain asked for

    def check(self, path: Path) -> None:
        assert path.read_text().startswith("global")

    def master_pid(self) -> int:
        return 4242 if self.running else 0

    def apply(self) -> None:
        if self.running:
            self.reloads += 1
            return
        node = self.api.get("Node", "n1")
        self.starts.append((node["metadata"].get("annotations") or {}).get(PORTS_ANNOTATION))
        self.running = True

    def stop(self, drain: float = 0.0) -> bool:
        was = self.running
        self.running = False
        self.stops.append(drain)
        return was


def ingress_class(default: bool = False) -> dict[str, Any]:
    ann = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "skiff", "annotations": ann}, "spec": {"controller": CONTROLLER}}  # fmt: skip


def ingress(name: str, class_name: str | None = "skiff", tls: bool = False) -> dict[str, Any]:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    path = {"path": "/", "pathType": "Prefix", "backend": backend}
    spec: dict[str, Any] = {"rules": [{"host": f"{name}.test", "http": {"paths": [path]}}]}
    if class_name:
        spec["ingressClassName"] = class_name
    if tls:
        spec["tls"] = [{"hosts": ["a.test"], "secretName": "a-tls"}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}  # fmt: skip


def annotation(api: FakeApiClient) -> str | None:
    node = api.get("Node", "n1")
    value: str | None = (node["metadata"].get("annotations") or {}).get(PORTS_ANNOTATION)
    return value


Env = tuple[FakeApiClient, IngressController, FakeHAProxy]


def start(tmp_path: Path, api: FakeApiClient) -> Env:
    settings = IngressSettings(state_dir=tmp_path / "ingress", http_port=8080, https_port=8443)
    ctl = IngressController(
        api, "n1", settings, IngressTiming(min_sync_interval=0.0, drain_timeout=7.0)
    )
    fake = FakeHAProxy(api)
    ctl.haproxy = fake  # type: ignore[assignment]
    ctl.start()
    return api, ctl, fake


@pytest.fixture
def api() -> FakeApiClient:
    api = FakeApiClient()
    api.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    return api


@pytest.fixture
def env(tmp_path: Path, api: FakeApiClient) -> Iterator[Env]:
    api.create("IngressClass", ingress_class(default=True))
    e = start(tmp_path, api)
    try:
        yield e
    finally:
        e[1].stop()


def synced_past(ctl: IngressController, count: int) -> None:
    wait_for(lambda: ctl.syncs > count and ctl.last_error is None, message="ingress sync")


def test_no_haproxy_until_the_first_ingress_and_none_after_the_last(
    env: Env, tmp_path: Path
) -> None:
    api, ctl, fake = env
    synced_past(ctl, 0)
    assert not fake.running and fake.starts == [] and annotation(api) is None
    assert not ctl.serving
    n = ctl.syncs
    ctl.sync(full=True)  # the periodic full sync starts nothing either
    assert ctl.syncs == n + 1 and fake.starts == []

    api.create("Ingress", ingress("first"), "default")
    wait_for(lambda: annotation(api) == "http=8080,https=8443", message="node annotated")
    assert fake.starts == [None]  # started before the node said it serves
    assert ctl.serving and ctl.last_config is not None
    assert ctl.last_config.ingresses == ["default/first"]

    api.create("Ingress", ingress("second"), "default")
    wait_for(lambda: fake.reloads == 1, message="reloaded for the second")
    api.delete("Ingress", "first", "default")
    wait_for(lambda: fake.reloads == 2, message="reloaded without the first")
    assert fake.running and fake.stops == []

    api.delete("Ingress", "second", "default")
    wait_for(lambda: not fake.running, message="HAProxy stopped")
    assert fake.stops == [7.0]  # softly: the requests in flight finish
    wait_for(lambda: annotation(api) is None, message="annotation removed")
    assert not ctl.serving and ctl.last_config is not None and ctl.last_config.ingresses == []


def test_class_less_ingress_served_while_ours_is_the_default(env: Env) -> None:
    api, ctl, fake = env
    synced_past(ctl, 0)
    api.create("Ingress", ingress("plain", class_name=None), "default")
    wait_for(lambda: fake.running, message="HAProxy started for a class-less Ingress")
    assert ctl.last_config is not None and ctl.last_config.ingresses == ["default/plain"]


def test_other_classes_start_nothing(env: Env) -> None:
    api, ctl, fake = env
    api.create("IngressClass", {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                                "metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}})  # fmt: skip
    api.create("Ingress", ingress("theirs", class_name="nginx"), "default")
    api.create("Ingress", ingress("legacy", class_name=None) | {"metadata": {
        "name": "legacy", "namespace": "default", "annotations": {"kubernetes.io/ingress.class": "nginx"}}},
        "default")  # fmt: skip
    wait_for(lambda: len(api.objects("Ingress", "default")) == 2, message="created")
    n = ctl.syncs
    ctl.sync()  # the controller's own loop may sync beside it: at least this one ran
    assert ctl.syncs >= n + 1 and fake.starts == [] and annotation(api) is None


def test_secrets_keys_leave_the_disk_with_the_last_ingress(env: Env) -> None:
    api, ctl, fake = env
    certs = ctl.settings.cert_dir
    certs.mkdir(parents=True)
    (certs / "crt_old.pem").write_text("a key of a Secret no longer served")
    (certs / "default.pem").write_text("the default certificate")
    api.create("Ingress", ingress("a"), "default")
    wait_for(lambda: fake.running, message="started")
    api.delete("Ingress", "a", "default")
    wait_for(lambda: not fake.running, message="stopped")
    assert sorted(p.name for p in certs.iterdir()) == ["default.pem"]


def test_a_restarted_agent_with_nothing_to_serve_stops_what_it_finds(
    tmp_path: Path, api: FakeApiClient
) -> None:
    """The previous agent served (its annotation, its HAProxy); the Ingresses
    went while no agent ran."""
    api.create("IngressClass", ingress_class())
    api.patch("Node", "n1", {"metadata": {"annotations": {PORTS_ANNOTATION: "http=80,https=443"}}})
    _, ctl, fake = start(tmp_path, api)
    try:
        fake.running = True  # adopted through its pid file
        ctl.sync()
        assert not fake.running and annotation(api) is None
    finally:
        ctl.stop()


def test_without_a_class_of_ours_nothing_runs(tmp_path: Path, api: FakeApiClient) -> None:
    """`--disable ingress`: the control plane made no class of ours."""
    api.create("Ingress", ingress("orphan", class_name="skiff"), "default")
    _, ctl, fake = start(tmp_path, api)
    try:
        synced_past(ctl, 0)
        assert fake.starts == [] and annotation(api) is None
    finally:
        ctl.stop()
