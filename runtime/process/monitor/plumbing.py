"""What every monitor mode shares: its reports to the runtime (JSON lines
on stdout, the last one closes it), detaching from the runtime, resetting
signal state before an exec, and the atomic write of its exit file.

Standard library only; never forks except in `detach`.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from machinery.atomicfile import write_atomic

Spec = dict[str, Any]


def write_json_atomic(path: str, obj: Any) -> None:
    write_atomic(path, json.dumps(obj), durable=True)


def reset_signals() -> None:
    signal.set_wakeup_fd(-1)
    for sig in (
        signal.SIGCHLD,
        signal.SIGTERM,
        signal.SIGINT,
        signal.SIGPIPE,
        signal.SIGXFSZ,
        signal.SIGHUP,
    ):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def detach(fork: bool = True) -> None:
    """Fork; the parent exits at once (the runtime reaps it), the child
    becomes a session leader that init adopts. A child of the zygote needs
    no fork: the zygote never waits for it and init adopts it anyway."""
    if fork and os.fork() > 0:
        os._exit(0)
    os.setsid()


def write_line(obj: Any) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


def report(obj: Any) -> None:
    """The final report: then stdout is closed (the runtime reads to EOF)."""
    write_line(obj)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
