"""Static pods: parsing, naming, UID and hash, change detection on a temp dir, mirrors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agent.static_pods import (
    CONFIG_HASH,
    CONFIG_MIRROR,
    CONFIG_SOURCE,
    ManifestError,
    MirrorPods,
    StaticPodSource,
    is_mirror,
    is_static,
    mirror_of,
    mirror_pod,
    read_manifest,
    static_uid,
)
from controlplane.client import errors
from controlplane.client.interface import DeleteOptions
from machinery.clock import FakeClock

WEB = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: busybox:1.36
"""

OTHER = """\
# two documents in one file
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: kube-system}
spec:
  containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  containers: [{name: c, image: busybox:1.36}]
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_pod_is_named_for_the_node_bound_and_annotated(tmp_path: Path) -> None:
    [pod] = read_manifest(write(tmp_path / "web.yaml", WEB), "n1")
    md = pod["metadata"]
    assert md["name"] == "web-n1"
    assert md["namespace"] == "default"
    assert md["labels"] == {"app": "web"}
    assert md["annotations"][CONFIG_SOURCE] == "file"
    assert md["annotations"][CONFIG_HASH] == md["uid"]
    assert pod["spec"]["nodeName"] == "n1"
    assert pod["spec"]["restartPolicy"] == "Always"  # defaulted as the API server does
    assert is_static(pod) and not is_mirror(pod)


def test_several_documents_and_json(tmp_path: Path) -> None:
    pods = read_manifest(write(tmp_path / "two.yml", OTHER), "n1")
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods] == [
        ("kube-system", "a-n1"),
        ("default", "b-n1"),
    ]
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j"},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}  # fmt: skip
    [pod] = read_manifest(write(tmp_path / "j.json", json.dumps(doc)), "n1")
    assert pod["metadata"]["name"] == "j-n1"


def test_uid_is_deterministic_per_content_and_node(tmp_path: Path) -> None:
    a = read_manifest(write(tmp_path / "a.yaml", WEB), "n1")[0]["metadata"]["uid"]
    # same pod, other formatting and a comment: same UID
    again = write(tmp_path / "b.yaml", "# comment\n" + WEB.replace("{app: web}", "\n    app: web"))
    assert read_manifest(again, "n1")[0]["metadata"]["uid"] == a
    assert read_manifest(tmp_path / "a.yaml", "n2")[0]["metadata"]["uid"] != a
    changed = write(tmp_path / "c.yaml", WEB.replace("1.36", "1.37"))
    assert read_manifest(changed, "n1")[0]["metadata"]["uid"] != a
    assert len(a) == 32 and int(a, 16) >= 0
    assert static_uid({"x": 1}, "n1") == static_uid({"x": 1}, "n1")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: [", "cannot parse"),
        ("kind: Deployment\napiVersion: apps/v1\nmetadata: {name: d}\n", "is not Pod"),
        ("kind: Pod\napiVersion: v1\nspec: {containers: []}\n", "metadata.name is required"),
        ("kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec: {}\n", "containers"),
        ("- just a list\n", "not a mapping"),
        (WEB + "---\n" + WEB, "same pod"),
    ],
)
def test_invalid_manifests_say_why(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ManifestError) as err:
        read_manifest(path, "n1")
    assert problem in str(err.value) and str(path) in str(err.value)


def source(tmp_path: Path, clock: FakeClock) -> StaticPodSource:
    return StaticPodSource(tmp_path, "n1", clock, period=5.0)


def names(pods: Any) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


def test_scan_adds_changes_and_removes_on_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    src = source(tmp_path, clock)
    write(tmp_path / "web.yaml", WEB)
    write(tmp_path / "notes.txt", "not a manifest")
    write(tmp_path / ".hidden.yaml", WEB.replace("web", "hidden"))
    first = src.poll()
    assert first is not None and names(first.added) == ["web-n1"] and first.removed == ()
    uid = first.added[0]["metadata"]["uid"]
    assert src.get(uid) is not None

    write(tmp_path / "web.yaml", WEB.replace("1.36", "1.37"))
    assert src.poll() is None  # not due yet
    clock.step(4.9)
    assert src.poll() is None
    clock.step(0.2)
    changed = src.poll()
    assert changed is not None
    assert names(changed.added) == ["web-n1"] and names(changed.removed) == ["web-n1"]
    new_uid = changed.added[0]["metadata"]["uid"]
    assert new_uid != uid and src.get(uid) is None and src.get(new_uid) is not None

    clock.step(5)
    assert src.poll() == type(changed)()  # nothing changed

    (tmp_path / "web.yaml").unlink()
    clock.step(5)
    gone = src.poll()
    assert gone is not None and gone.added == () and names(gone.removed) == ["web-n1"]
    assert src.list() == []


def test_bad_file_is_logged_and_others_still_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "web.yaml", WEB)
    write(tmp_path / "broken.yaml", "kind: Pod\napiVersion: v1\nmetadata: {name: x}\nspec: 7\n")
    write(tmp_path / "two.yaml", OTHER)
    src = source(tmp_path, FakeClock())
    with caplog.at_level(logging.ERROR, logger="skiff.agent.static"):
        changes = src.scan()
    assert names(changes.added) == ["a-n1", "b-n1", "web-n1"]
    assert any("broken.yaml" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="skiff.agent.static"):
        src.scan()  # an unchanged bad file is not reported again
    assert not caplog.records
    # the same pod in two files: the first file (by name) wins
    write(tmp_path / "zz-copy.yaml", WEB)
    with caplog.at_level(logging.ERROR, logger="skiff.agent.static"):
        again = src.scan()
    assert again.added == () and again.removed == ()
    assert any("zz-copy.yaml" in r.getMessage() for r in caplog.records)


def test_missing_directory_is_empty(tmp_path: Path) -> None:
    src = StaticPodSource(tmp_path / "nope", "n1", FakeClock())
    assert src.scan().added == ()


def test_mirror_pod_shape(tmp_path: Path) -> None:
    [pod] = read_manifest(write(tmp_path / "web.yaml", WEB), "n1")
    uid = pod["metadata"]["uid"]
    mirror = mirror_pod(pod, "n1", "node-uid")
    md = mirror["metadata"]
    assert "uid" not in md and md["name"] == "web-n1" and md["namespace"] == "default"
    assert md["annotations"][CONFIG_MIRROR] == uid and md["annotations"][CONFIG_HASH] == uid
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "n1",
                                      "uid": "node-uid", "controller": True}]  # fmt: skip
    assert mirror["spec"]["nodeName"] == "n1"
    assert is_mirror(mirror) and mirror_of(mirror) == uid and mirror_of(pod) == ""


class FakeApi:
    """Only what MirrorPods calls: create, get and delete of pods."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[str] = []
        self.n = 0

    def create(self, kind: str, obj: dict[str, Any], namespace: str | None = None) -> Any:
        key = (namespace or "", obj["metadata"]["name"])
        self.calls.append(f"create {key[1]}")
        if key in self.pods:
            raise errors.AlreadyExists("exists")
        self.n += 1
        stored = {**obj, "metadata": {**obj["metadata"], "uid": f"m{self.n}"}}
        self.pods[key] = stored
        return stored

    def get(self, kind: str, name: str, namespace: str | None = None) -> Any:
        if kind == "Node":
            return {"metadata": {"name": name, "uid": "node-uid"}}
        if (namespace or "", name) not in self.pods:
            raise errors.NotFound(name)
        return self.pods[(namespace or "", name)]

    def delete(
        self, kind: str, name: str, namespace: str | None = None, options: Any = None
    ) -> Any:
        assert isinstance(options, DeleteOptions) and options.grace_period_seconds == 0
        self.calls.append(f"delete {name}")
        cur = self.pods.get((namespace or "", name))
        if cur is None:
            raise errors.NotFound(name)
        if options.precondition_uid != cur["metadata"]["uid"]:
            raise errors.Conflict("uid")
        del self.pods[(namespace or "", name)]


def test_mirror_created_kept_replaced_and_orphans_deleted(tmp_path: Path) -> None:
    api = FakeApi()
    mirrors = MirrorPods(api, "n1", lambda ns, n: api.pods.get((ns, n)), lambda: None)  # type: ignore[arg-type]
    [pod] = read_manifest(write(tmp_path / "web.yaml", WEB), "n1")
    assert mirrors.ensure(pod) == "created"
    assert mirrors.ensure(pod) == "current"  # left alone
    assert api.calls == ["create web-n1"]

    # a user deletes it gracefully: deletionTimestamp set -> replaced
    api.pods[("default", "web-n1")]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert mirrors.ensure(pod) == "created"
    assert api.calls[1:] == ["delete web-n1", "create web-n1"]

    # the file changed: the mirror of the old version is replaced
    [new] = read_manifest(write(tmp_path / "web.yaml", WEB.replace("1.36", "1.37")), "n1")
    assert mirrors.ensure(new) == "created"
    assert mirror_of(api.pods[("default", "web-n1")]) == new["metadata"]["uid"]

    # a pod of the same name that is not a mirror is never touched
    api.pods[("default", "web-n1")] = {"metadata": {"name": "web-n1", "uid": "user"}}
    calls = len(api.calls)
    assert mirrors.ensure(new) == "blocked" and len(api.calls) == calls

    # the static pod is gone: its mirror goes
    api.pods.clear()
    mirrors.ensure(new)
    mirrors.delete_orphans(pod["metadata"]["uid"], list(api.pods.values()))  # other version
    assert ("default", "web-n1") in api.pods
    mirrors.delete_orphans(new["metadata"]["uid"], list(api.pods.values()))
    assert not api.pods
