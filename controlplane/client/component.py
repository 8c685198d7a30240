"""One control-plane component as a process of its own, as kube-scheduler and
kube-controller-manager run with `--kubeconfig`.

`run_component` connects with the component's kubeconfig (`skiff
controlplane` writes `<data-dir>/{scheduler,volcano-scheduler,
controller-manager}.conf`, each with that component's own identity), starts
the component hook `start(client, stop)` the control plane would call, and
returns once SIGINT or SIGTERM has stopped it. A missing or malformed
kubeconfig is a clear refusal (status 2), never an admin fallback.

As a child of `skiff controlplane --component-processes`
(controlplane/supervisor.py) it finds two more things in its environment:
LIFELINE_ENV, a pipe whose end of file means the control plane is gone
(the component then stops as on SIGTERM, and exits at once if that takes
longer than LIFELINE_GRACE seconds), and SOCKET_ENV, the control plane's
private gRPC socket, which it reaches as the in-process components do
instead of the kubeconfig's address; the kubeconfig's token stays its
identity.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from controlplane.api import jsoncodec
from controlplane.client import secureserving
from controlplane.client.apiclient import connect
from controlplane.client.config import ClientConfig, ConfigError, load_config
from controlplane.client.interface import ApiClient
from controlplane.client.secureserving import (
    SecureServer,
    SecureServingOptions,
    delegation,
)
from machinery import metrics
from machinery.metrics import Registry
from machinery.signals import StopSignals

log = logging.getLogger("skiff.component")

Start = Callable[[ApiClient, threading.Event], object]
T = TypeVar("T")

# Set in the environment by `skiff controlplane --component-processes`.
LIFELINE_ENV = "SKIFF_LIFELINE_FD"
SOCKET_ENV = "SKIFF_CONTROLPLANE_SOCKET"
LIFELINE_GRACE = 10.0
# How long the component's threads get to stop before its connection closes.
STOP_GRACE = 5.0


def config_file(path: str | None, env: str) -> tuple[str, str] | None:
    """(path, text) of a component's configuration file: the one given
    (--config), else the one named by $`env` (the older way, kept as a
    fallback); None: neither, the defaults apply."""
    path = path or os.environ.get(env)
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return path, f.read()


def with_metrics(
    start: Callable[[ApiClient, threading.Event], threading.Thread],
    registry: Callable[[], Registry],
    listen: str,
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """`start`, with the component's /metrics served on `listen` (HOST:PORT)
    from its start until its thread has ended; `start` itself when "" ."""
    if not listen:
        return start

    def begin(client: ApiClient, stop: threading.Event) -> threading.Thread:
        server = metrics.serve(registry(), listen)
        try:
            thread = start(client, stop)
        except BaseException:
            server.stop()
            raise

        def close() -> None:
            thread.join()
            server.stop()

        threading.Thread(target=close, name=f"{thread.name}-metrics", daemon=True).start()
        return thread

    return begin


def with_secure_serving(
    start: Callable[[ApiClient, threading.Event], threading.Thread],
    registry: Callable[[], Registry],
    options: SecureServingOptions | None,
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """`start`, with the component's /metrics and health checks on its secure
    port (secureserving.py) from its start until its thread has ended;
    `start` itself without options or with port 0. A port that cannot be
    bound is logged and the component runs without it."""
    if options is None or not options.secure_port:
        return start

    def begin(client: ApiClient, stop: threading.Event) -> threading.Thread:
        found = registry()
        server = open_secure_port(client, options, lambda: metrics.render(found))
        try:
            thread = start(client, stop)
        except BaseException:
            if server is not None:
                server.close()
            raise
        if server is not None:
            port = server

            def close() -> None:
                thread.join()
                port.close()

            threading.Thread(target=close, name=f"{thread.name}-secure", daemon=True).start()
        return thread

    return begin


class OpenPort:
    """A secure port and the review connections opened for it."""

    def __init__(self, server: SecureServer, clients: list[Any]) -> None:
        self.server, self.clients = server, clients

    @property
    def port(self) -> int:
        return self.server.port

    def close(self) -> None:
        self.server.stop()
        for client in self.clients:
            client.close()


def open_secure_port(
    client: Any,
    options: SecureServingOptions,
    render: Callable[[], bytes],
    health: Callable[[], str] = lambda: "",
) -> OpenPort | None:
    """Serve `render` (/metrics) and `health` on the secure port; None (logged)
    when it cannot listen or its certificate does not load."""
    opened: list[Any] = []

    def connect_to(path: str) -> Any:
        found = connect(load_config(path), timeout=30)
        opened.append(found)
        return found

    try:
        auth = delegation(client, options, connect_to)
        return OpenPort(SecureServer(options, auth, render, health), opened)
    except (OSError, ValueError, ConfigError) as err:
        for c in opened:
            c.close()
        log.error("secure port %s:%d not served: %s",
                  options.bind_address, options.secure_port, err)  # fmt: skip
        return None


def in_background(
    name: str, run: Callable[[ApiClient, threading.Event, T], None], load: Callable[[], T]
) -> Callable[[ApiClient, threading.Event], threading.Thread]:
    """A component hook that loads its configuration at once (an error
    refuses the start, with the reason), then runs `run(client, stop,
    config)` on a thread named `name`, which it returns: the thread ends once
    the component has stopped (its Lease released)."""

    def start(client: ApiClient, stop: threading.Event) -> threading.Thread:
        config = load()
        thread = threading.Thread(target=run, args=(client, stop, config), name=name, daemon=True)
        thread.start()
        return thread

    return start


@dataclass(frozen=True)
class ConfiguredComponent(Generic[T]):
    """A component run alone that reads one configuration file (a scheduler):
    `python -m MODULE --kubeconfig FILE [--config FILE]`."""

    prog: str  # in messages, e.g. "scheduler"
    thread: str  # its thread's name
    field_manager: str  # its writes' name in managedFields
    kubeconfig_help: str
    config_flags: tuple[str, ...]  # --config and the peer's name for it
    config_help: str
    load: Callable[[str | None], T]  # the configuration in a file (None: the fallback)
    run: Callable[[ApiClient, threading.Event, T], None]
    # The process's metrics registry, served on --metrics-listen (None: no flag).
    metrics: Callable[[], Registry] | None = None
    # Its default --secure-port (secureserving.py), for /metrics and health (0: no flags).
    secure_port: int = 0

    def main(self, module: str, argv: Sequence[str] | None = None) -> int:
        """Parse the flags, refuse a bad configuration (status 2), run until a signal."""
        parser = argparse.ArgumentParser(prog=f"python -m {module}")
        parser.add_argument("--kubeconfig", "--credentials", dest="kubeconfig", required=True,
                            help=self.kubeconfig_help)  # fmt: skip
        parser.add_argument(*self.config_flags, dest="config", default=None, help=self.config_help)
        parser.add_argument("--log-level", default=os.environ.get("SKIFF_LOG_LEVEL", "INFO"))
        if self.metrics is not None:
            parser.add_argument("--metrics-listen", default="",
                                help="HOST:PORT for /metrics over plain HTTP (keep it on "
                                "loopback; the secure port checks its callers)")  # fmt: skip
        if self.secure_port:
            secureserving.add_flags(parser, self.secure_port)
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
        logging.basicConfig(
            level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s"
        )
        try:
            config = self.load(args.config)
        except (OSError, ValueError) as err:
            print(f"{self.prog}: refusing to start: {err}", file=sys.stderr)
            return 2
        serving = None
        if self.secure_port:
            try:
                serving = secureserving.options_from_args(args)
            except ValueError as err:
                print(f"{self.prog}: refusing to start: {err}", file=sys.stderr)
                return 2
        start = in_background(self.thread, self.run, lambda: config)
        if self.metrics is not None:
            start = with_metrics(start, self.metrics, args.metrics_listen)
            start = with_secure_serving(start, self.metrics, serving)
        return run_component(self.prog, args.kubeconfig, start, self.field_manager)


def run_component(prog: str, kubeconfig: str, start: Start, field_manager: str = "") -> int:
    """Run `start` with a client for `kubeconfig` until a signal; the exit status.

    `field_manager` names the component's writes in managedFields."""
    try:
        config = load_config(kubeconfig)
    except ConfigError as err:
        print(f"{prog}: --kubeconfig: {err}", file=sys.stderr)
        return 2
    stop = StopSignals()  # the lifeline's set() wakes this thread too
    watch_lifeline(prog, stop)
    socket = os.environ.get(SOCKET_ENV, "")
    if socket:  # the control plane's own socket: plaintext, in its private data directory
        config = ClientConfig(f"unix:{socket}", token=config.token)
    # Informer caches keep many decoded objects and every event makes short-lived
    # ones: the collector's thresholds of the API server's process (jsoncodec).
    jsoncodec.tune_gc()
    # No component reads managedFields: its watches leave them out (as in process).
    client = connect(config, timeout=30, field_manager=field_manager, lean_watches=True)
    before = set(threading.enumerate())
    try:
        try:
            start(client, stop)
        except ValueError as err:  # a configuration the component refuses, with the reason
            print(f"{prog}: refusing to start: {err}", file=sys.stderr)
            return 2
        stop.wait_in_main()
        # The component's own threads finish their last writes (a Lease
        # released) before the connection goes.
        join_threads_since(before, time.monotonic() + STOP_GRACE)
    finally:
        client.close()
    return 0


def join_threads_since(before: set[threading.Thread], deadline: float) -> None:
    """Join the threads started since `before` was taken, until none is left
    or `deadline` (time.monotonic()) passes. threading.enumerate() also lists
    a thread still being started, which join() refuses (RuntimeError): one
    started as the stop came (a new leader's) is joined once running, in the
    next pass; a thread a joined one started is found the same way."""
    me = threading.current_thread()
    while time.monotonic() < deadline:
        running = [t for t in threading.enumerate() if t not in before and t is not me]
        alive = [t for t in running if t.is_alive()]
        if not alive:
            if not running:
                return
            time.sleep(0.001)  # a thread between start() and running: a moment
            continue
        for thread in alive:
            thread.join(max(0.0, deadline - time.monotonic()))


def watch_lifeline(
    prog: str, stop: threading.Event, exit: Callable[[int], object] = os._exit
) -> None:
    """With LIFELINE_ENV set: set `stop` when the pipe it names reaches end of
    file (its writer, the control plane, is gone), and `exit(1)` LIFELINE_GRACE
    seconds later if the process is still there."""
    value = os.environ.pop(LIFELINE_ENV, "")
    if not value:
        return
    try:
        fd = int(value)
        os.fstat(fd)
    except (ValueError, OSError) as err:
        print(f"{prog}: ${LIFELINE_ENV}={value!r}: not an open file descriptor ({err})",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from err

    def watch() -> None:
        while True:
            try:
                if not os.read(fd, 512):  # nobody writes: only end of file returns
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        log.warning("%s: the control plane is gone: stopping", prog)
        stop.set()
        threading.Event().wait(LIFELINE_GRACE)
        exit(1)  # still here: a thread did not stop

    threading.Thread(target=watch, name="lifeline", daemon=True).start()
