"""The control plane's components as processes of their own: the command
of each (`python -m MODULE --kubeconfig FILE` with the flags `skiff
controlplane` was given), the check of their configuration before they
start, and whether to run them so by default (controlplane/main.py starts
them under supervisor.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from controlplane.apiserver.rbaccomponents import (
    BATCH_SCHEDULER,
    CONTROLLER_MANAGER,
    SCHEDULER,
    ComponentIdentity,
)
from controlplane.client.component import SOCKET_ENV
from controlplane.client.secureserving import SecureServingOptions
from controlplane.supervisor import ProcessSpec
from machinery import onecpu

# How each component runs as a process: `python -m MODULE --kubeconfig FILE`.
PROCESS_MODULES: dict[str, tuple[str, ComponentIdentity]] = {
    "scheduler": ("controlplane.scheduler.run", SCHEDULER),
    "volcano-scheduler": ("controlplane.scheduler.batch.run", BATCH_SCHEDULER),
    "controllers": ("controlplane.controllers.manager", CONTROLLER_MANAGER),
}


# Which `skiff controlplane` flag names the configuration file a component
# process gets as its --config (without one, it reads its $SKIFF_*_CONFIG).
# Which `skiff controlplane` flag gives a scheduler process its --metrics-listen
# (the controller manager's --controller-metrics-listen goes with its own flags).
METRICS_FLAGS = {"scheduler": "scheduler_metrics_listen",
                 "volcano-scheduler": "volcano_metrics_listen"}  # fmt: skip
CONFIG_FLAGS = {"scheduler": "scheduler_config", "volcano-scheduler": "volcano_scheduler_config"}


# Which `skiff controlplane` flag gives each component its --secure-port.
SECURE_PORT_FLAGS = {"scheduler": "scheduler_secure_port",
                     "volcano-scheduler": "volcano_scheduler_secure_port",
                     "controllers": "controller_manager_secure_port"}  # fmt: skip


def secure_serving(
    name: str, args: argparse.Namespace, data_dir: Path
) -> SecureServingOptions | None:
    """Component `name`'s secure port as `skiff controlplane` gives it: its
    --*-secure-port on --component-bind-address, a self-signed certificate,
    client certificates of the cluster CA; None for port 0."""
    port = int(getattr(args, SECURE_PORT_FLAGS[name], 0) or 0)
    if not port:
        return None
    return SecureServingOptions(secure_port=port,
                                bind_address=getattr(args, "component_bind_address", "127.0.0.1"),
                                client_ca_file=str(data_dir / "pki" / "ca.crt"))  # fmt: skip


def secure_argv(options: SecureServingOptions | None) -> list[str]:
    """The flags that give a component process `options` (--secure-port=0: none)."""
    if options is None:
        return ["--secure-port=0"]
    return [f"--secure-port={options.secure_port}", f"--bind-address={options.bind_address}",
            f"--client-ca-file={options.client_ca_file}"]  # fmt: skip


def manager_argv(args: argparse.Namespace) -> list[str]:
    """The controller manager's flags (controllers/config.py add_flags) as given to `skiff
    controlplane`, with its `--disable servicelb|ingress` in --controllers."""
    from controlplane.controllers import config

    own = argparse.ArgumentParser(add_help=False)
    config.add_flags(own)
    argv: list[str] = []
    for dest in vars(own.parse_args([])):
        flag, value = dest.replace("_", "-"), getattr(args, dest)
        if dest == "controllers":
            # `skiff controlplane --disable servicelb|ingress` is a controller
            # the process must not run: `-name` in its own --controllers.
            value = ",".join(config.config_from_args(args).controllers)
        if isinstance(value, bool):
            argv.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            argv.append(f"--{flag}={value}")
    return argv


def use_processes(flag: bool | None) -> bool:
    """--component-processes as given, else whether this process may use 2
    CPUs or more: on one, processes bring no parallelism, only their memory."""
    if flag is not None:
        return flag
    return len(onecpu.usable()) >= 2  # not this thread's one CPU under --one-cpu


def check_components(names: list[str], args: argparse.Namespace) -> None:
    """ValueError, with the reason, for a configuration a component process
    would refuse at its start: `skiff controlplane` refuses it at once."""
    from controlplane.controllers import config
    from controlplane.scheduler import run as scheduler
    from controlplane.scheduler.batch import run as batch_scheduler

    checks: dict[str, Callable[[], object]] = {
        "scheduler": lambda: scheduler.checked(args.scheduler_config),
        "volcano-scheduler": lambda: batch_scheduler.load_conf(args.volcano_scheduler_config),
        "controllers": lambda: config.config_from_args(args),
    }
    for name in names:
        try:
            checks[name]()
        except (OSError, ValueError) as err:
            raise ValueError(f"{name}: refusing to start: {err}") from err


def component_processes(
    names: list[str], args: argparse.Namespace, data_dir: Path, socket: str
) -> list[ProcessSpec]:
    """The child process of each component in `names`, with its own
    kubeconfig, reaching the API server on its private socket `socket`."""
    # The children import the components from where this process found them.
    root = str(Path(__file__).resolve().parent.parent)
    pythonpath = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    specs = []
    for name in names:
        module, identity = PROCESS_MODULES[name]
        argv = [sys.executable, "-m", module, "--kubeconfig", str(data_dir / identity.kubeconfig),
                "--log-level", args.log_level]  # fmt: skip
        if name == "controllers":
            argv += manager_argv(args)
        argv += secure_argv(secure_serving(name, args, data_dir))
        listen = getattr(args, METRICS_FLAGS.get(name, ""), "")
        if listen:
            argv += ["--metrics-listen", listen]
        config = CONFIG_FLAGS.get(name)
        if config is not None and getattr(args, config, None):
            argv += ["--config", str(Path(getattr(args, config)).absolute())]
        specs.append(ProcessSpec(name, argv, {SOCKET_ENV: socket, "PYTHONPATH": pythonpath}))
    return specs
