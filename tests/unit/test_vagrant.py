"""vagrant/: the Vagrantfile validates, the scripts pass shellcheck, and the
systemd units' command lines are accepted by skiff's own argument parsers.

`vagrant validate` runs with a throwaway VAGRANT_HOME and dot-file path, with
update checks off, so it neither writes into the repository nor reaches the
network; it is skipped (with the reason) when vagrant is not installed.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness.systemd_units import UNITS, VAGRANT_DIR, unit_argv

# What the provisioning scripts write into the env files, for parsing units.
UNIT_ENV = {
    "SKIFF_ADVERTISE_ADDRESS": "192.168.56.10",
    "SKIFF_API_PORT": "6443",
    "SKIFF_NODE_GRACE": "120",
    "SKIFF_SERVER": "192.168.56.10:6443",
    "SKIFF_NODE_NAME": "node1",
    "SKIFF_NODE_IP": "192.168.56.11",
    "SKIFF_CNI_BACKEND": "vxlan",
}


def scripts() -> list[Path]:
    found = []
    for path in sorted(VAGRANT_DIR.rglob("*")):
        if ".vagrant" in path.parts or ".cluster" in path.parts or not path.is_file():
            continue
        if path.suffix == ".sh" or path.read_bytes()[:2] == b"#!":
            found.append(path)
    return found


def test_there_are_scripts_and_units() -> None:
    names = {p.name for p in scripts()}
    assert {"install.sh", "controlplane.sh", "node.sh", "fetch-credentials.sh"} <= names
    assert {p.name for p in UNITS.glob("*.service")} == {
        "skiff-controlplane.service",
        "skiff-runtime.service",
        "skiff-agent.service",
    }


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("script", scripts(), ids=lambda p: str(p.relative_to(VAGRANT_DIR)))
def test_shellcheck(script: Path) -> None:
    proc = subprocess.run(
        ["shellcheck", "-x", "-S", "style", str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.access(script, os.X_OK), f"{script} is not executable"


def _vagrant_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAGRANT_", "SKIFF_"))}
    env.update(
        VAGRANT_HOME=str(tmp / "home"),
        VAGRANT_DOTFILE_PATH=str(tmp / "dot"),
        VAGRANT_CHECKPOINT_DISABLE="1",
        VAGRANT_BOX_UPDATE_CHECK_DISABLE="1",
        VAGRANT_NO_COLOR="1",
    )
    env.update(extra)
    return env


@pytest.mark.skipif(
    shutil.which("vagrant") is None,
    reason="vagrant is not installed (Debian: apt-get install vagrant)",
)
def test_vagrant_validate(tmp_path: Path) -> None:
    cases = {
        "default": {},
        # (nfs/virtiofs/9p/virtualbox are checked against the host's NFS
        # server, libvirtd or VirtualBox by `vagrant validate`; this machine
        # has none of them.)
        "five nodes, control plane as a node, rsync": {
            "SKIFF_NODES": "5",
            "SKIFF_CP_NODE": "1",
            "SKIFF_SYNC": "rsync",
            "SKIFF_CNI_BACKEND": "vxlan",
        },
    }
    procs = {}
    for i, (name, extra) in enumerate(cases.items()):  # in parallel: ruby starts slowly
        procs[name] = subprocess.Popen(
            ["vagrant", "validate"],
            cwd=VAGRANT_DIR,
            env=_vagrant_env(tmp_path / str(i), **extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    bad = subprocess.Popen(
        ["vagrant", "validate"],
        cwd=VAGRANT_DIR,
        env=_vagrant_env(tmp_path / "bad", SKIFF_NODES="-1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    outputs = {name: proc.communicate(timeout=120)[0] for name, proc in procs.items()}
    bad_out, _ = bad.communicate(timeout=120)
    if any("No usable default provider" in out for out in outputs.values()):
        pytest.skip("vagrant has no usable provider (Debian: apt-get install vagrant-libvirt)")
    for name, proc in procs.items():
        out = outputs[name]
        assert proc.returncode == 0, f"{name}: {out}"
        assert "validated successfully" in out, f"{name}: {out}"
    assert bad.returncode != 0 and "SKIFF_NODES" in bad_out
    assert not (VAGRANT_DIR / ".vagrant").exists()


def test_controlplane_unit_flags_parse() -> None:
    argv = unit_argv(UNITS / "skiff-controlplane.service", UNIT_ENV)
    assert argv[:2] == ["/opt/skiff/src/.venv/bin/skiff", "controlplane"]
    from controlplane.main import build_parser

    args = build_parser().parse_args(argv[2:])
    assert args.listen == "0.0.0.0:6443"
    assert args.advertise_address == "192.168.56.10"
    assert args.tls_san == ["192.168.56.10"]
    assert args.node_monitor_grace_period == 120


def test_runtime_unit_flags_parse() -> None:
    argv = unit_argv(UNITS / "skiff-runtime.service", UNIT_ENV)
    assert argv[:2] == ["/opt/skiff/src/.venv/bin/skiff", "runtime"]
    from runtime.config import from_args

    cfg = from_args(argv[2:])
    assert cfg.listen == "unix:///run/skiff/cri.sock"
    pre = unit_argv(UNITS / "skiff-runtime.service", UNIT_ENV, "ExecStartPre")
    assert pre[1:3] == ["-m", "runtime.cni.install"]
    importlib.import_module("runtime.cni.install")


def test_agent_unit_flags_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = unit_argv(UNITS / "skiff-agent.service", UNIT_ENV)
    assert argv[:2] == ["/opt/skiff/src/.venv/bin/skiff", "agent"]
    agent_main = importlib.import_module("agent.main")
    monkeypatch.setenv("SKIFF_JOIN_TOKEN", "join-token-from-env")
    args = agent_main.build_parser().parse_args(argv[2:])
    assert args.server == "192.168.56.10:6443"
    assert args.node_name == "node1" and args.node_ip == "192.168.56.11"
    assert args.ca_file == "/etc/skiff/ca.crt"
    assert args.runtime_endpoint == "unix:///run/skiff/cri.sock"
    assert args.cni_backend == "vxlan"
    # The join token comes from the environment file, not the command line.
    assert args.token == "join-token-from-env"
    assert "join-token-from-env" not in argv


def test_scripts_write_every_variable_the_units_read() -> None:
    wanted = set()
    for unit in UNITS.glob("*.service"):
        wanted |= set(re.findall(r"\$\{(\w+)\}", unit.read_text()))
    written = set()
    for script in scripts():
        written |= set(re.findall(r"^(SKIFF_\w+)=", script.read_text(), re.MULTILINE))
    assert wanted <= written, wanted - written
    assert "SKIFF_JOIN_TOKEN" in written
