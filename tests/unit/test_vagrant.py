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
from collections.abc import Mapping
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


# ---------------------------------------------------------------- credentials (issue 32)

CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIBdjCCAR2gAwIBAgIU\n-----END CERTIFICATE-----"
ADMIN_TOKEN = "skiff-admin." + "ab" * 20


def _fake_vagrant(bin_dir: Path, files: Mapping[str, str]) -> None:
    """A `vagrant` answering `ssh controlplane ... -c "sudo cat /var/lib/skiff/controlplane/F"`
    from `files` (what a control-plane VM would print)."""
    store = bin_dir / "vm"
    store.mkdir(parents=True)
    for name, text in files.items():
        (store / name.replace("/", "_")).write_text(text)
    script = bin_dir / "vagrant"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "f=${*: -1}; f=${f##*/controlplane/}; f=${f//\\//_}\n"
        f'cat "{store}/$f"\n'
    )
    script.chmod(0o755)


def _fetch(tmp: Path, files: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    _fake_vagrant(tmp / "bin", files)
    env = {"PATH": f"{tmp / 'bin'}:/usr/bin:/bin", "HOME": str(tmp / "home"),
           "SKIFF_CLUSTER_DIR": str(tmp / "cluster"), "SKIFF_ADMIN_DIR": str(tmp / "admin")}  # fmt: skip
    return subprocess.run([str(VAGRANT_DIR / "fetch-credentials.sh")], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _vm_kubeconfig(extra: str = "") -> str:
    return (
        "apiVersion: v1\nkind: Config\nclusters:\n- name: skiff\n  cluster:\n"
        "    server: https://192.168.56.10:6443\n    certificate-authority-data: AAAA\n"
        f"users:\n- name: admin\n  user:\n    token: {ADMIN_TOKEN}\n{extra}"
    )


def test_nodes_get_only_the_ca_and_a_bootstrap_token(tmp_path: Path) -> None:
    """The admin credential never enters the tree the VMs see, and the host's
    kubeconfig is made from checked parts: a VM's own (which may name a
    command to run, `exec:`) is never used as it is."""
    hostile = _vm_kubeconfig(
        "    exec: {command: /tmp/pwn, apiVersion: client.authentication.k8s.io/v1}\n"
    )
    done = _fetch(tmp_path, {"pki/ca.crt": CA_PEM, "join-token": "abcdef.0123456789abcdef\n",
                             "kubeconfig": hostile})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "cluster").iterdir()) == ["ca.crt", "join-token"]
    assert (tmp_path / "cluster" / "join-token").read_text() == "abcdef.0123456789abcdef\n"
    kubeconfig = (tmp_path / "admin" / "kubeconfig").read_text()
    assert ADMIN_TOKEN in kubeconfig and "exec" not in kubeconfig and "/tmp/pwn" not in kubeconfig
    assert "tls-server-name: skiff-apiserver" in kubeconfig
    assert (tmp_path / "admin" / "kubeconfig").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"join-token": "$(touch /tmp/x)"}, "join-token is not a bootstrap token"),
        ({"pki/ca.crt": "not a cert"}, "pki/ca.crt is not one PEM certificate"),
        ({"kubeconfig": _vm_kubeconfig().replace(ADMIN_TOKEN, "x; rm -rf ~")},
         "the admin token has not the admin's format"),
        ({"kubeconfig": _vm_kubeconfig().replace("https://192.168.56.10:6443", "file:///etc")},
         "is not https://IP:PORT"),
    ],
)  # fmt: skip
def test_what_a_vm_reports_is_checked_before_it_is_kept(
    tmp_path: Path, files: dict[str, str], problem: str
) -> None:
    good = {"pki/ca.crt": CA_PEM, "join-token": "abcdef.0123456789abcdef",
            "kubeconfig": _vm_kubeconfig()}  # fmt: skip
    done = _fetch(tmp_path, {**good, **files})
    assert done.returncode != 0 and problem in done.stderr, done.stderr
    assert not (tmp_path / "admin" / "kubeconfig").exists()


def test_the_vms_mount_the_host_tree_read_only_and_publish_nothing_into_it() -> None:
    vagrantfile = (VAGRANT_DIR / "Vagrantfile").read_text()
    assert 'return { mount_options: ["ro"] } if type == "default"' in vagrantfile
    assert 'opts[:mount_options] = ["ro"] unless type == "rsync"' in vagrantfile
    synced = re.compile(r'^"?(\$\{?(SRC|IN|OUT)\b|\$\{?SKIFF_SYNCED|/skiff\b)')
    for script in ("controlplane.sh", "node.sh", "install.sh"):
        targets = []
        for line in (VAGRANT_DIR / "scripts" / script).read_text().splitlines():
            if line.lstrip().startswith("#"):
                continue
            targets += re.findall(r">>?\s*(\S+)", line)  # redirections
            words = line.split()
            if words and words[0] in ("install", "mv", "cp", "tee", "ln", "tar") and len(words) > 1:
                targets.append(words[-1])  # a copy's destination
        writes = [t for t in targets if synced.match(t)]
        assert writes == [], f"{script} writes into the synced folder: {writes}"
