"""The per-container and per-sandbox monitor: skiff's containerd-shim/conmon.

Started by the runtime (runtime.process.spawn) as a standalone script
(`python -S runtime/process/monitor container|sandbox SPEC`) or forked by the
monitor zygote; never imported by the runtime itself. It detaches (forks,
the first process exits, the second calls setsid), so it outlives a restart
or `kill -9` of the runtime. One job per module:

* `sandbox`: holds a pod's namespaces (sandbox mode);
* `container`: the monitor of one container, its lifecycle and exit file;
* `init`: the container init and exec'd processes it forks;
* `logpump`: the init's output into the CRI log;
* `control`: the control socket; `execs` and `attach` serve its streams;
* `zygote`: forks monitors that share its memory, dials into pod netns;
* `plumbing`: reports to the runtime, detaching, signal resets.

It must stay small: standard library plus `runtime.linux` and
`runtime.process.logs` only; never grpc, protobuf or pyroute2. It is single
threaded, which is what makes its fork/setns/unshare calls safe.
"""

from __future__ import annotations

import json
import os

from machinery import libc
from runtime.process.monitor.container import run_container
from runtime.process.monitor.sandbox import run_sandbox
from runtime.process.monitor.zygote import run_zygote

# (imported here, not where used: the zygote loads every mode before it
# forks, so that monitors share those pages)


def main(argv: list[str], fork: bool = True) -> int:
    if argv[0] == "zygote":
        return run_zygote(int(argv[1]), float(argv[2]), main)
    mode, spec_path = argv[0], argv[1]
    with open(spec_path) as f:
        spec = json.load(f)
    err_log = spec.get("monitor_log")
    if err_log:
        fd = os.open(err_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    if mode == "sandbox":
        libc.set_name("skiff-sandbox")
        return run_sandbox(spec, fork)
    libc.set_name("skiff-monitor")
    return run_container(spec, fork, autostart=mode == "container-start")
