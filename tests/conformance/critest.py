"""Run the CRI conformance suite (critest, cri-tools v1.26.1) against skiff.

    python -m tests.conformance.critest [--shared ../shared] [-- critest args]

Starts a throwaway registry on 127.0.0.1, builds every image critest pulls
with the project's `shared/tools/build-test-images.sh` and pushes them there,
starts `skiff runtime` with registries.yaml mirrors for registry.k8s.io,
gcr.io, docker.io and public.ecr.aws (default endpoints disabled, so nothing
leaves the machine) and a skiff-cni bridge config, runs
`shared/tools/critest-run.sh` and prints its summary. Everything it made is
removed afterwards: the runtime's pods and processes (by pid), the bridge,
the cgroup, the registry. critest itself must be built locally
(`/usr/local/bin/critest`); this tool never builds it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.harness.cgroup import CGROUP_ROOT, remove_cgroup_tree
from tests.harness.mounts import unmount_all
from tests.harness.registry import run_registry
from tests.harness.wait import wait_for

REPO = Path(__file__).resolve().parents[2]
MIRRORED = ("registry.k8s.io", "gcr.io", "docker.io", "public.ecr.aws")


def critest_binary() -> str | None:
    return shutil.which("critest") or (
        "/usr/local/bin/critest" if os.access("/usr/local/bin/critest", os.X_OK) else None
    )


def _sh(*cmd: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), text=True, capture_output=True, check=False, cwd=cwd)


def run(shared: Path, extra: list[str], out: Path) -> tuple[int, str]:
    """Returns (critest-run exit code, summary text)."""
    base = Path(tempfile.mkdtemp(prefix="skiff-critest-", dir="/var/tmp"))
    tag = base.name[-6:].lower().replace("_", "x")
    bridge, cgroup = f"skct{tag}"[:15], f"/skiff-critest-{tag}"
    proc: subprocess.Popen[bytes] | None = None
    try:
        with run_registry() as reg:
            built = _sh("bash", str(shared / "tools" / "build-test-images.sh"), reg.host, cwd=base)
            if built.returncode != 0:
                return 2, f"building test images failed:\n{built.stderr[-3000:]}"
            mirrors = "".join(f'  {h}:\n    endpoint: ["http://{reg.host}"]\n' for h in MIRRORED)
            (base / "registries.yaml").write_text(
                f"disable_default_endpoint: true\nmirrors:\n{mirrors}"
            )
            bin_dir, conf_dir = base / "cni-bin", base / "cni-conf"
            conf_dir.mkdir()
            _sh(sys.executable, "-m", "runtime.cni.install", "--bin-dir", str(bin_dir), cwd=REPO)
            (conf_dir / "10-critest.conflist").write_text(
                json.dumps(
                    {
                        "cniVersion": "1.0.0",
                        "name": "critest",
                        "plugins": [
                            {
                                "type": "skiff-cni",
                                "bridge": bridge,
                                "isGateway": True,
                                "ipMasq": True,
                                "hairpinMode": True,
                                "capabilities": {"portMappings": True},
                                "ipam": {
                                    "type": "skiff-ipam",
                                    "subnet": "10.89.0.0/24",
                                    "dataDir": str(base / "ipam"),
                                },
                            }
                        ],
                    }
                )
            )
            sock = base / "cri.sock"
            log = (base / "runtime.log").open("wb")
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "skiff",
                    "runtime",
                    "--listen",
                    f"unix://{sock}",
                    "--root",
                    str(base / "root"),
                    "--state",
                    str(base / "state"),
                    "--cni-conf-dir",
                    str(conf_dir),
                    "--cni-bin-dir",
                    str(bin_dir),
                    "--registry-config",
                    str(base / "registries.yaml"),
                    "--disable-default-registry-endpoint",
                    "--cgroup-parent",
                    cgroup,
                ],
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            wait_for(sock.is_socket, timeout=60, message="skiff runtime socket")
            env = {**os.environ, "ENDPOINT": f"unix://{sock}", "OUTDIR": str(out), "TIMEOUT": "20m"}
            res = subprocess.run(
                ["bash", str(shared / "tools" / "critest-run.sh"), *extra],
                env=env,
                text=True,
                capture_output=True,
                check=False,
                cwd=base,
            )
            _remove_pods(sock)
            return res.returncode, (res.stdout + res.stderr[-2000:]).strip()
    finally:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        _sh("ip", "link", "del", bridge)
        for hierarchy in [CGROUP_ROOT, *CGROUP_ROOT.iterdir()]:
            remove_cgroup_tree(hierarchy / cgroup.lstrip("/"))
        unmount_all(base)
        shutil.rmtree(base, ignore_errors=True)


def _remove_pods(sock: Path) -> None:
    crictl = shutil.which("crictl")
    if crictl is None:
        return
    ep = ["--runtime-endpoint", f"unix://{sock}"]
    ids = _sh(crictl, *ep, "pods", "-q").stdout.split()
    for pod in ids:
        _sh(crictl, *ep, "stopp", pod)
        _sh(crictl, *ep, "rmp", pod)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.conformance.critest")
    p.add_argument(
        "--shared", default=str(REPO.parent / "shared"), help="the steering repo's shared/ dir"
    )
    p.add_argument("--out", default="", help="where critest's reports go (default: a temp dir)")
    p.add_argument("extra", nargs="*", help="extra critest arguments (after --)")
    args = p.parse_args(argv)
    if critest_binary() is None:
        print(
            "critest is not installed (build cri-tools v1.26.1 into /usr/local/bin)",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="critest-out-"))
    code, summary = run(Path(args.shared), args.extra, out)
    print(summary)
    print(f"reports in {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
