"""The client libraries' own end-to-end suites, unchanged, against skiff.

The official Python client (`kubernetes/e2e_test` of its release tag), kr8s
(`kr8s/tests` of its sdist), lightkube (`e2e-tests` of its repository) and
kopf's examples (`tests/e2e` of its sdist) each run in their own pytest, in a
virtualenv of their own (their test dependencies are not skiff's), against one
real `skiff up` (the control plane with its scheduler and controllers, and one
node with its runtime and agent, so exec, logs and port-forward reach real
containers; `--disable metrics-server`, as a kind cluster has none), whose
images come from a local registry on 127.0.0.1 through its registries.yaml
mirrors (tests/harness/clientlibs_images.py: busybox stand-ins under the
names the suites use), and one pod in kube-system standing in for a
kind cluster's system pods, which the suites list. KUBECONFIG is as kind writes
it (a client certificate for kubernetes-admin). The only file
replaced is the one naming the cluster: kr8s' root conftest.py (pytest-kind's
`k8s_cluster` fixture becomes the skiff cluster); the others read `KUBECONFIG`
and run `kubectl`, which is kubectl 1.NEWEST by its versioned path.

Where the suites come from (nothing is fetched from anywhere but PyPI):

    SKIFF_CLIENTLIBS_DIR   work directory (default ~/.cache/skiff-clientlibs):
                           venv/ (made with pip from PyPI on first use) and the
                           unpacked sources
    SKIFF_PYCLIENT_GIT     a git directory of kubernetes-client/python, and
    SKIFF_PYCLIENT_TAG     the release tag whose kubernetes/e2e_test runs
    SKIFF_LIGHTKUBE_GIT    a git directory of gtsystem/lightkube (e2e-tests/;
    SKIFF_LIGHTKUBE_REF    its sdist has none), at this ref (default HEAD)

    python -m tests.harness.clientlibs [suite ...]     (make test-clientlibs)

prints one line per suite (passed/total) and, last, one JSON object.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import clientlibs_images as stand_ins
from tests.harness.images import TestImages
from tests.harness.kind_kubeconfig import write_kind_kubeconfig
from tests.harness.kubectl import NEWEST
from tests.harness.nodeprocs import free_cluster_cidr, free_service_cidrs, short_tempdir
from tests.harness.registry import run_registry
from tests.harness.skiff_up import Up
from tests.harness.untar import extract_data
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
# The Python client's e2e tests are the tag's (SKIFF_PYCLIENT_TAG); the client
# installed is that release.
WORK = Path(os.environ.get("SKIFF_CLIENTLIBS_DIR", Path.home() / ".cache" / "skiff-clientlibs"))
SDISTS = {"kr8s": "kr8s==0.20.15", "kopf": "kopf==1.45.2"}
# The suites' own test dependencies (their dependency groups), from PyPI.
TEST_DEPS = [
    "pytest", "pytest-asyncio", "pytest-timeout", "pytest-rerunfailures", "trio", "anyio",
    "kubernetes==36.0.3", "lightkube==0.21.0", "pykube-ng", "kubernetes-asyncio", "hatchling", "hatch-vcs",
    "freezegun", "kmock", "looptime", "pytest-aiohttp", "pytest-mock", "certbuilder",
    "certvalidator", "oscrypto", "pyngrok",
    # kopf's sdist builds its metadata with these (the venv's own setuptools is too old)
    "setuptools>=77", "setuptools-scm",
    # 0.9 wraps what is raised inside a WebSocket session in an ExceptionGroup, which
    # kr8s 0.20.15's exec does not expect (its ExecError tests fail on any cluster)
    "httpx-ws<0.9",
]  # fmt: skip

# kr8s' root conftest.py with pytest-kind's cluster replaced by skiff's (the
# rest of the file, ensure_gc, as kr8s wrote it).
KR8S_CONFTEST = """
import gc
import os
import subprocess
from pathlib import Path

import pytest


class SkiffCluster:
    kubeconfig_path = Path(os.environ["KUBECONFIG"])
    kubectl_path = Path(os.environ["SKIFF_KUBECTL"])

    def kubectl(self, *args, **kwargs):
        return subprocess.check_output(
            [str(self.kubectl_path), *args], env={**os.environ}, encoding="utf-8", **kwargs
        )


@pytest.fixture
def ensure_gc():
    gc.collect()
    yield
    gc.collect()


@pytest.fixture(scope="session", autouse=True)
def k8s_cluster(request):
    yield SkiffCluster()
"""


SYSTEM_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: system-stand-in, namespace: kube-system, labels: {k8s-app: system-stand-in}}
spec:
  containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
"""


@dataclass
class Suite:
    name: str
    cwd: Path
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    suite: str
    passed: int
    failed: int
    skipped: int
    failures: dict[str, str]

    @property
    def total(self) -> int:
        return self.passed + self.failed


def venv_python() -> Path:
    venv = WORK / "venv"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *TEST_DEPS], check=True)
    for name, req in SDISTS.items():
        src = source(name, req, py)
        probe = subprocess.run([str(py), "-c", f"import {name}"], capture_output=True)
        if probe.returncode != 0:
            subprocess.run([str(py), "-m", "pip", "install", "-q", str(src)], check=True)
    return py


def source(name: str, req: str, py: Path) -> Path:
    """The unpacked release sdist of `req` (pip download from PyPI)."""
    version = req.split("==")[1]
    out = WORK / "src" / f"{name}-{version}"
    if out.exists():
        return out
    dl = WORK / "sdists"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(py), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "--no-build-isolation", req, "-d", str(dl)], check=True,
    )  # fmt: skip
    with tarfile.open(dl / f"{name}-{version}.tar.gz") as tar:
        extract_data(tar, WORK / "src")
    return out


def git_tree(git_dir: str, ref: str, path: str, dest: Path) -> Path:
    if not dest.exists():
        dest.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "--git-dir", git_dir, "archive", ref, path], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def suites(py: Path) -> dict[str, Suite]:
    found: dict[str, Suite] = {}
    kr8s = source("kr8s", SDISTS["kr8s"], py)
    (kr8s / "conftest.py").write_text(KR8S_CONFTEST)
    found["kr8s"] = Suite("kr8s", kr8s, ["kr8s/tests", "-o", "addopts=", "-o", "timeout=120"])
    kopf = source("kopf", SDISTS["kopf"], py)
    found["kopf"] = Suite("kopf", kopf, ["tests/e2e", "--only-e2e", "--timeout=60"])
    if git := os.environ.get("SKIFF_PYCLIENT_GIT"):
        tag = os.environ.get("SKIFF_PYCLIENT_TAG", "HEAD")
        root = git_tree(git, tag, "kubernetes/e2e_test", WORK / "src" / f"pyclient-{tag}")
        # The wheel once shipped kubernetes.e2e_test; its tests import it so.
        pkg = subprocess.run(
            [str(py), "-c", "import kubernetes, os; print(os.path.dirname(kubernetes.__file__))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        shutil.rmtree(Path(pkg) / "e2e_test", ignore_errors=True)
        shutil.copytree(root / "kubernetes" / "e2e_test", Path(pkg) / "e2e_test")
        # Its tests read kubernetes/e2e_test/test_yaml/ from the working directory.
        found["pyclient"] = Suite("pyclient", root, ["--pyargs", "kubernetes.e2e_test"])
    if git := os.environ.get("SKIFF_LIGHTKUBE_GIT"):
        ref = os.environ.get("SKIFF_LIGHTKUBE_REF", "HEAD")
        root = git_tree(git, ref, "e2e-tests", WORK / "src" / f"lightkube-{ref}")
        found["lightkube"] = Suite("lightkube", root, ["e2e-tests"])
    return found


@dataclass
class SkiffCluster:
    """`skiff up`: the control plane and one real node (runtime and agent),
    its images from a local registry (tests/harness/clientlibs_images.py)."""

    base: Path  # the suites' logs and reports
    up: Up

    @property
    def kubeconfig(self) -> Path:
        """As kind writes it (tests/harness/kind_kubeconfig.py): the suites
        were written against kind."""
        return self.base / "kubeconfig"

    def start(self, registries: Path) -> SkiffCluster:
        self.up.data_dir.mkdir(parents=True)
        self.up.start(registries)
        self.up.wait_ready(timeout=180).close()
        pki = self.up.layout.controlplane_dir / "pki"
        write_kind_kubeconfig(self.up.data_dir / "kubeconfig", pki, self.kubeconfig)
        # The suites read pods of kube-system (a kind cluster's CoreDNS, etcd,
        # kube-proxy...); skiff runs its components as processes, so one pod
        # stands in for them there.
        subprocess.run([str(NEWEST), "apply", "-f", "-"], input=SYSTEM_POD, text=True,
                       env=self.env(), check=True, capture_output=True)  # fmt: skip
        wait_for(self._system_pod_running, timeout=120, message="the kube-system pod Running")
        return self

    def _system_pod_running(self) -> bool:
        out = subprocess.run(
            [str(NEWEST), "get", "pod", "-n", "kube-system", "system-stand-in", "-o",
             "jsonpath={.status.phase}"], env=self.env(), capture_output=True, text=True,
            check=False,
        ).stdout  # fmt: skip
        return out == "Running"

    def env(self) -> dict[str, str]:
        bin_dir = self.base / "bin"
        bin_dir.mkdir(exist_ok=True)
        kubectl = bin_dir / "kubectl"
        if not kubectl.exists():
            kubectl.symlink_to(NEWEST)
        return {
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.base), "KUBECONFIG": str(self.kubeconfig),
            "SKIFF_KUBECTL": str(kubectl),
        }  # fmt: skip


@contextmanager
def skiff_cluster(base: Path) -> Iterator[SkiffCluster]:
    """A registry with the suites' images, and `skiff up` pulling from it;
    everything removed afterwards (skiff up's log tail on stderr if it failed)."""
    top = short_tempdir("skcl-")  # unix socket paths under it stay short
    # No metrics API, as kind has no metrics-server (kr8s asks for one resource named pods).
    up = Up("clientlibs", top / "up", free_cluster_cidr(), free_service_cidrs(1)[0],
            extra_args=("--disable", "metrics-server"))  # fmt: skip
    try:
        with run_registry() as registry:
            stand_ins.push_all(registry, TestImages(top / "images"))
            shutil.rmtree(top / "images")
            registries = stand_ins.mirrors(top / "registries.yaml", registry)
            try:
                yield SkiffCluster(base, up).start(registries)
            except BaseException:
                sys.stderr.write(up.log_tail() + "\n")
                raise
            finally:
                up.cleanup()
    finally:
        shutil.rmtree(top, ignore_errors=True)


def run_suite(py: Path, suite: Suite, cluster: SkiffCluster, timeout: float = 1800) -> Result:
    report = cluster.base / f"{suite.name}.xml"
    log = cluster.base / f"{suite.name}.log"
    with log.open("wb") as out:
        subprocess.run(
            [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
             *suite.args], cwd=suite.cwd, env={**cluster.env(), **suite.env}, stdout=out,
            stderr=subprocess.STDOUT, timeout=timeout, check=False,
        )  # fmt: skip
    return parse_junit(suite.name, report)


def parse_junit(name: str, report: Path) -> Result:
    passed = failed = skipped = 0
    failures: dict[str, str] = {}
    for case in ET.parse(report).iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if case.find("skipped") is not None:
            skipped += 1
        elif bad is not None:
            failed += 1
            failures[test] = (bad.get("message") or "")[:300]
        else:
            passed += 1
    return Result(name, passed, failed, skipped, failures)


def main(argv: list[str]) -> int:
    py = venv_python()
    available = suites(py)
    chosen = argv or list(available)
    base = WORK / f"run-{os.getpid()}"  # its logs stay for reading
    base.mkdir(parents=True)
    results: dict[str, Result] = {}
    with skiff_cluster(base) as cluster:
        for name in chosen:
            results[name] = r = run_suite(py, available[name], cluster)
            print(f"{name:10} {r.passed}/{r.total} passed ({r.skipped} skipped)", flush=True)
            for test, why in sorted(r.failures.items()):
                print(f"    FAIL {test}: {why.splitlines()[0] if why else ''}"[:240])
    print(json.dumps({n: {"passed": r.passed, "total": r.total} for n, r in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
