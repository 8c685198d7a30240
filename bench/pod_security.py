"""The pod the API benches create (bench.apiserver, bench.kubeapi) and their
--pod-security setting: with it the control plane enforces (and audits and
warns) the Pod Security Standards level in every namespace, and the pods
benched meet it."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

# --pod-security LEVEL: the control plane enforces (and audits and warns) the
# Pod Security Standards level in every namespace, and the pods benched meet
# it. An environment variable, so client processes see it too.
POD_SECURITY_ENV = "SKIFF_BENCH_POD_SECURITY"
# --pod-shape restricted: the pods meet restricted, nothing is enforced (the
# same objects as with --pod-security restricted, so the two runs differ only
# in the admission).
POD_SHAPE_ENV = "SKIFF_BENCH_POD_SHAPE"
_RESTRICTED_CONTAINER = {
    "securityContext": {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}


def pod(name: str, i: int = 0) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "registry.local/bench/app:1.0",
        "ports": [{"containerPort": 8080}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        "env": [{"name": "MODE", "value": "bench"}],
    }
    if "restricted" in (os.environ.get(POD_SECURITY_ENV), os.environ.get(POD_SHAPE_ENV)):
        container.update(_RESTRICTED_CONTAINER)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench", "shard": str(i % 16)}},
        "spec": {"containers": [container]},
    }


def pod_security_args(data_dir: Path) -> list[str]:
    """The admission configuration file of --pod-security (none without it)."""
    level = os.environ.get(POD_SECURITY_ENV)
    if not level:
        return []
    path = data_dir.parent / "admission.json"
    defaults = {f"{mode}{suffix}": value for mode in ("enforce", "audit", "warn")
                for suffix, value in (("", level), ("-version", "latest"))}  # fmt: skip
    path.write_text(json.dumps({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [{"name": "PodSecurity", "configuration": {
            "apiVersion": "pod-security.admission.config.k8s.io/v1",
            "kind": "PodSecurityConfiguration",
            "defaults": defaults,
            "exemptions": {"usernames": [], "runtimeClasses": [], "namespaces": []},
        }}],
    }))  # fmt: skip
    return ["--admission-control-config-file", str(path)]


def add_pod_security_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pod-security", choices=("privileged", "baseline", "restricted"), default="",
        help="PodSecurity enforce/audit/warn at this level in every namespace",
    )  # fmt: skip
    parser.add_argument(
        "--pod-shape", choices=("restricted",), default="",
        help="the pods meet this level, enforced or not (compare with --pod-security)",
    )  # fmt: skip


def set_pod_security(level: str, shape: str = "") -> None:
    if level:
        os.environ[POD_SECURITY_ENV] = level
    if shape:
        os.environ[POD_SHAPE_ENV] = shape
