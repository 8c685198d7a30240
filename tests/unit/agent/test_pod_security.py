"""Weak defaults (issue 17): pods run under RuntimeDefault seccomp unless
they ask for Unconfined, runAsNonRoot is enforced with the kubelet's
messages naming the image user, AppArmor fields reach the runtime, and
allowPrivilegeEscalation: false sets no_new_privs."""

from __future__ import annotations

from typing import Any

from agent.pod_config import container_security, run_as_non_root_error
from proto.runtime.v1 import api_pb2 as cri


def pod(sc: dict[str, Any] | None = None, pod_sc: dict[str, Any] | None = None) -> dict[str, Any]:
    c = {"name": "c", "image": "img", "securityContext": sc or {}}
    return {"metadata": {"name": "p"}, "spec": {"securityContext": pod_sc or {}, "containers": [c]}}


def image(uid: int | None = None, user: str = "") -> cri.Image:
    img = cri.Image(id="sha256:x", username=user)
    if uid is not None:
        img.uid.value = uid
    return img


def test_runtime_default_unless_unconfined() -> None:
    p = pod()
    sec = container_security(p, p["spec"]["containers"][0])
    assert sec.seccomp.profile_type == cri.SecurityProfile.RuntimeDefault
    assert sec.seccomp_profile_path == "runtime/default"
    p = pod(pod_sc={"seccompProfile": {"type": "Unconfined"}})
    sec = container_security(p, p["spec"]["containers"][0])
    assert sec.seccomp.profile_type == cri.SecurityProfile.Unconfined


def test_run_as_non_root() -> None:
    p = pod(pod_sc={"runAsNonRoot": True})
    c = p["spec"]["containers"][0]
    assert run_as_non_root_error(p, c, image(uid=0)) == (
        "container has runAsNonRoot and image will run as root"
    )
    assert run_as_non_root_error(p, c, image(uid=1000)) is None
    msg = run_as_non_root_error(p, c, image(user="nginx"))
    assert msg is not None and "non-numeric user (nginx)" in msg
    assert run_as_non_root_error(p, c, image()) == (
        "container has runAsNonRoot and image will run as root"
    )
    c["securityContext"] = {"runAsUser": 0}
    assert run_as_non_root_error(p, c, image(uid=1000)) == (
        "container's runAsUser breaks non-root policy"
    )
    c["securityContext"] = {"runAsUser": 1001}
    assert run_as_non_root_error(p, c, image(user="nginx")) is None
    free = pod()
    assert run_as_non_root_error(free, free["spec"]["containers"][0], image(uid=0)) is None


def test_apparmor_and_no_new_privs_reach_the_runtime() -> None:
    aa = {"type": "Localhost", "localhostProfile": "k8s-nginx"}
    p = pod(sc={"appArmorProfile": aa, "allowPrivilegeEscalation": False})
    sec = container_security(p, p["spec"]["containers"][0])
    assert sec.apparmor.profile_type == cri.SecurityProfile.Localhost
    assert sec.apparmor.localhost_ref == "k8s-nginx"
    assert sec.no_new_privs
