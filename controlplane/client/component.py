"""One control-plane component as a process of its own, as kube-scheduler and
kube-controller-manager run with `--kubeconfig`.

`run_component` connects with the component's kubeconfig (`skiff
controlplane` writes `<data-dir>/{scheduler,volcano-scheduler,
controller-manager}.conf`, each with that component's own identity), starts
the component hook `start(client, stop)` the control plane would call, and
returns once SIGINT or SIGTERM has stopped it. A missing or malformed
kubeconfig is a clear refusal (status 2), never an admin fallback.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from controlplane.client.apiclient import connect
from controlplane.client.config import ConfigError, load_config
from controlplane.client.interface import ApiClient

Start = Callable[[ApiClient, threading.Event], None]


def run_component(prog: str, kubeconfig: str, start: Start, field_manager: str = "") -> int:
    """Run `start` with a client for `kubeconfig` until a signal; the exit status.

    `field_manager` names the component's writes in managedFields."""
    try:
        config = load_config(kubeconfig)
    except ConfigError as err:
        print(f"{prog}: --kubeconfig: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    client = connect(config, timeout=30, field_manager=field_manager)
    try:
        try:
            start(client, stop)
        except ValueError as err:  # a configuration the component refuses, with the reason
            print(f"{prog}: refusing to start: {err}", file=sys.stderr)
            return 2
        stop.wait()
    finally:
        client.close()
    return 0
