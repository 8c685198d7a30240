"""Which Ingresses a controller serves: by class name, by the deprecated
annotation, and class-less ones while its class is the default."""

from __future__ import annotations

from typing import Any

from controlplane.client.ingressclasses import class_of, default_class, served_by

OURS = "skiff.io/ingress-controller"
NGINX = "k8s.io/ingress-nginx"


def cls(
    name: str, controller: str, default: bool = False, ts: str = "2026-01-01T00:00:00Z"
) -> dict[str, Any]:
    ann = {"ingressclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"metadata": {"name": name, "creationTimestamp": ts, "annotations": ann},
            "spec": {"controller": controller}}  # fmt: skip


def ing(
    name: str, class_name: str | None = None, legacy: str | None = None, deleting: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if legacy:
        meta["annotations"] = {"kubernetes.io/ingress.class": legacy}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    return {"metadata": meta, "spec": {"ingressClassName": class_name} if class_name else {}}


def names(objs: list[Any]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_by_class_name_and_the_deprecated_annotation() -> None:
    classes = [cls("skiff", OURS), cls("nginx", NGINX)]
    ingresses = [ing("a", "skiff"), ing("b", "nginx"), ing("c", legacy="skiff"),
                 ing("d", legacy="nginx"), ing("e", "missing"), ing("f", "skiff", deleting=True)]  # fmt: skip
    assert names(served_by(OURS, ingresses, classes)) == ["a", "c"]
    assert names(served_by(NGINX, ingresses, classes)) == ["b", "d"]


def test_class_less_ingresses_follow_the_default_class() -> None:
    ingresses = [ing("plain"), ing("named", "skiff")]
    # Ours is not the default: a class-less Ingress is no one's.
    assert names(served_by(OURS, ingresses, [cls("skiff", OURS)])) == ["named"]
    # Ours is the default: it is ours.
    assert names(served_by(OURS, ingresses, [cls("skiff", OURS, default=True)])) == [
        "plain",
        "named",
    ]
    # Of two defaults the newest governs, as the API server's admission picks.
    two = [
        cls("skiff", OURS, True, "2026-01-01T00:00:00Z"),
        cls("nginx", NGINX, True, "2026-02-01T00:00:00Z"),
    ]
    assert default_class(two) == "nginx"
    assert class_of(ing("plain"), two) == "nginx"
    assert names(served_by(OURS, ingresses, two)) == ["named"]


def test_no_class_of_ours_serves_nothing() -> None:
    # `--disable ingress`: the control plane made no class of ours.
    assert served_by(OURS, [ing("a", "skiff"), ing("b")], [cls("nginx", NGINX, True)]) == []
    assert served_by(OURS, [ing("a", "skiff")], []) == []
