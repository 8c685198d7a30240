"""One `skiff up` for a module of the kubelet-behaviour tests (issue 33):
started as a user starts it, its images imported offline (busybox and the
busybox httpd under docker.io names, and whatever else a module adds), no
registry reached; kubectl 1.33 pointed at its kubeconfig. Everything is
removed afterwards by what the fixture knows (Up.cleanup), also after a
failure, whose log tail goes to stderr.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.client.apiclient import GrpcApiClient
from tests.harness.images import Image, Index, TestImages
from tests.harness.kubectl import NEWEST, read_exec
from tests.harness.nodeprocs import REPO, free_service_cidrs, short_tempdir
from tests.harness.skiff_up import Up, free_cluster_cidrs
from tests.harness.wait import wait_for

KUBECTL = NEWEST
BUSYBOX = "docker.io/skiff-e2e/busybox:1.36"
WEB = "docker.io/skiff-e2e/web:1"


@dataclass
class Cluster:
    up: Up
    api: GrpcApiClient

    @property
    def kubeconfig(self) -> Path:
        """The standard kubeconfig `skiff up` writes beside admin.conf (which
        is skiff's own credential format, not one kubectl reads)."""
        return self.up.data_dir / "kubeconfig"

    def kubectl(
        self, *args: str, input: str | None = None, timeout: float = 60, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), *args],
            input=input, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        if check:
            assert res.returncode == 0, f"kubectl {' '.join(args)}: {res.stdout}{res.stderr}"
        return res

    def exec_read(self, pod: str, *command: str, container: str = "") -> str:
        """The output of a read-only command in the pod (`kubectl exec`),
        never one kubectl dropped (tests/harness/kubectl.py: read_exec)."""
        which = ("-c", container) if container else ()
        return read_exec(lambda: self.kubectl("exec", pod, *which, "--", *command)).stdout

    def status(self, name: str) -> dict[str, Any]:
        st: dict[str, Any] = self.api.get("Pod", name, "default").get("status") or {}
        return st

    def wait_phase(self, name: str, phase: str, timeout: float = 90) -> dict[str, Any]:
        def reached() -> dict[str, Any]:
            st = self.status(name)
            return st if st.get("phase") == phase else {}

        return wait_for(reached, timeout=timeout, interval=0.2, message=f"pod {name} {phase}")

    def wait_ready(self, name: str, timeout: float = 90) -> dict[str, Any]:
        def ready() -> dict[str, Any]:
            st = self.status(name)
            conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
            return st if conds.get("Ready") == "True" else {}

        return wait_for(ready, timeout=timeout, interval=0.2, message=f"pod {name} Ready")


def archive(base: Path, images: TestImages, extra: Mapping[str, Image | Index]) -> Path:
    layout = images.layout(
        base / "layout", {BUSYBOX: images.busybox(), WEB: images.web(port=80), **extra}
    )
    out = base / "images.tar"
    with tarfile.open(out, "w") as tf:
        for entry in sorted(layout.rglob("*")):
            tf.add(entry, arcname=str(entry.relative_to(layout)), recursive=False)
    return out


def _import(up: Up, path: Path) -> None:
    """`skiff image import` of a large archive (Up.import_image allows 2 minutes)."""
    res = subprocess.run(
        [sys.executable, str(REPO / "skiff.py"), "image", "--root",
         str(up.layout.runtime_root), "import", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


@contextmanager
def skiff_up(
    images: TestImages,
    extra: Mapping[str, Image | Index] | None = None,
    name: str = "k",
    archives: tuple[Path, ...] = (),
    up_args: tuple[str, ...] = (),
    agent_root_tmpfs: str = "",
) -> Iterator[Cluster]:
    """`skiff up` with the test images and any other image `archives`
    imported offline, and `up_args` added to its flags. `agent_root_tmpfs`
    (a size, as 64m): the agent's root, where pods' emptyDirs live, is a
    tmpfs of that size, a small disk of the test's own."""
    base = short_tempdir("skk-")
    up = Up(name, base / name, free_cluster_cidrs(1)[0], free_service_cidrs(1)[0],
            extra_args=up_args)  # fmt: skip
    mounted: Path | None = None
    try:
        up.data_dir.mkdir()
        if agent_root_tmpfs:
            mounted = up.layout.agent_root
            mounted.mkdir(parents=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={agent_root_tmpfs}", "tmpfs",
                            str(mounted)], check=True)  # fmt: skip
        up.import_image(archive(base, images, extra or {}))
        for more in archives:
            _import(up, more)
        registries = base / "registries.yaml"
        registries.write_text("mirrors: {}\ndisable_default_endpoint: true\n")
        up.start(registries)
        api = up.wait_ready()
        yield Cluster(up, api)
        api.close()
    except BaseException:
        sys.stderr.write(up.log_tail() + "\n")
        raise
    finally:
        try:
            up.cleanup()
        finally:
            if mounted is not None:  # lazily: skiff up's own mounts beneath go with it
                subprocess.run(["umount", "-l", str(mounted)], check=False, capture_output=True)
            shutil.rmtree(base, ignore_errors=True)


def busybox_pod(name: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"terminationGracePeriodSeconds": 2, "containers": list(containers), **spec},
    }


def container(name: str, script: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "image": BUSYBOX,
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", script],
        **fields,
    }
