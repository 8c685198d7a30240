"""The built-in ingress controller's node half: HAProxy on every node.

Ingresses, IngressClasses, Services and EndpointSlices come from shared
informers; their handlers only wake one worker thread, which rebuilds the
whole configuration level-triggered (`sync()`: `model.build`, then
`haproxy.render`), at most once per `min_sync_interval`. Files are written
only when they changed, checked by HAProxy before use, then HAProxy is
started or reloaded without dropping a connection (see haproxy.py). A
configuration HAProxy refuses is logged and the running one kept, so one
bad Ingress never breaks the others. TLS Secrets are read with `get`
(the node authorizer grants the Secrets an Ingress names) and kept for
`secret_ttl` seconds; every `sync_period` everything is read again.

HAProxy costs nothing until it is used: it runs only while an Ingress of
this controller's classes exists (`model.served`: an IngressClass of ours,
which the control plane makes unless started with `--disable ingress`, and
an Ingress of it, or a class-less one while ours is the default class).
The first such Ingress starts it; once it serves, the node annotates
itself with the ports it serves (`ingress.skiff.io/ports`), from which the
control plane writes each Ingress's `status.loadBalancer`, so an address in
the status always answers (what `kubectl wait` on the status relies on).
When the last one is gone the annotation is removed and HAProxy stopped
softly: it stops listening at once and the requests in flight finish
(for up to `drain_timeout`; a reload lets them finish the same way), and
the certificates of the Secrets it served are removed from the disk. A
first configuration HAProxy refuses leaves the node unannotated, and is
retried. `stop()` stops HAProxy with the agent.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.ingress import model
from agent.ingress.haproxy import HAProxy, IngressSettings, render
from agent.sync_runner import SyncRunner
from controlplane.client import errors
from controlplane.client.endpointslices import group_by_service
from controlplane.client.informer import SharedInformer, SharedInformerFactory
from controlplane.client.interface import ApiClient, Object
from controlplane.client.store import object_key
from machinery.atomicfile import publish, write_private
from machinery.clock import Clock, RealClock

log = logging.getLogger("skiff.agent.ingress")

PORTS_ANNOTATION = "ingress.skiff.io/ports"


@dataclass(frozen=True)
class IngressTiming:
    min_sync_interval: float = 0.2
    sync_period: float = 30.0
    retry_interval: float = 2.0
    secret_ttl: float = 30.0
    drain_timeout: float = 10.0  # HAProxy's soft stop when the last Ingress goes


def default_certificate() -> bytes:
    """A self-signed certificate and key (PEM), served to hosts without their own
    (made with the first Ingress: `cryptography` is not loaded before)."""
    from machinery import certificates

    key = certificates.new_key()
    name = certificates.common_name("skiff ingress default certificate")
    lifetime = datetime.timedelta(days=3650)
    return certificates.self_signed(name, key, lifetime) + certificates.key_pem(key)


class IngressController(SyncRunner):
    what = "ingress"  # in the log of a failed sync

    def __init__(
        self,
        api: ApiClient,
        node_name: str,
        settings: IngressSettings,
        timing: IngressTiming | None = None,
        clock: Clock | None = None,
        informers: SharedInformerFactory | None = None,
    ) -> None:
        self.api = api
        self.node_name = node_name
        self.settings = settings
        self.timing = timing or IngressTiming()
        self._init_runner(clock or RealClock())
        self.factory = informers or SharedInformerFactory(api, clock=self.clock)
        self.haproxy = HAProxy(settings)
        self.ingresses: SharedInformer = self.factory.informer_for("Ingress")
        self.classes: SharedInformer = self.factory.informer_for("IngressClass")
        self.services: SharedInformer = self.factory.informer_for("Service")
        self.slices: SharedInformer = self.factory.informer_for("EndpointSlice")
        self._secrets: dict[tuple[str, str], tuple[float, Object | None]] = {}
        self._written: tuple[str, str, dict[str, bytes]] | None = None
        self._serving = False
        self._annotated: str | None = None  # unknown: the first sync writes it
        self._lock = threading.Lock()
        self.syncs = 0
        self.last_config: model.Config | None = None

    # ---- lifecycle -------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._start_runner((self.ingresses, self.classes, self.services, self.slices))
        self.factory.start()
        self._run_loop("ingress")

    def stop(self) -> None:
        self._stop_runner()
        with self._lock:
            self.haproxy.stop()

    # ---- the work --------------------------------------------------------

    def _secret(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        now = self.clock.monotonic()
        cached = self._secrets.get((namespace, name))
        if cached is not None and now - cached[0] < self.timing.secret_ttl:
            return cached[1]
        try:
            obj: Object | None = self.api.get("Secret", name, namespace)
        except (errors.NotFound, errors.Forbidden):
            obj = None
        self._secrets[(namespace, name)] = (now, obj)
        return obj

    def sync(self, full: bool = False) -> None:
        with self._lock:
            self._last_sync = self.clock.monotonic()
            if full:
                self._secrets.clear()
            classes = self.classes.store.list()
            ingresses = model.served(self.ingresses.store.list(), classes)
            if not ingresses:
                self._idle()
                return
            cfg = model.build(
                ingresses,
                classes,
                {object_key(s): s for s in self.services.store.list()},
                group_by_service(self.slices.store.list()),
                self._secret,
            )
            for ing, _, message in cfg.problems:
                log.info("ingress %s: %s", ing, message)
            files = render(cfg, self.settings)
            if files != self._written or not self.haproxy.master_pid():
                self._write(files)
                self.haproxy.apply()
                self._written = files
            self._serving = True
            self.last_config = cfg
            self.syncs += 1
            self._annotate(f"http={self.settings.http_port},https={self.settings.https_port}")

    def _idle(self) -> None:
        """Nothing to serve: no annotation, no HAProxy, no Secret's key on disk."""
        self._annotate("")
        if self._serving or self.haproxy.master_pid():
            self.haproxy.stop(drain=self.timing.drain_timeout)
            log.info("ingress: no Ingress to serve, HAProxy stopped")
        self._written = None
        self._serving = False
        if self.settings.cert_dir.is_dir():
            for old in self.settings.cert_dir.iterdir():
                if old.name != "default.pem":
                    old.unlink(missing_ok=True)
        self.last_config = model.Config()
        self.syncs += 1

    @property
    def serving(self) -> bool:
        """HAProxy runs a configuration of this controller."""
        return self._serving

    def _write(self, files: tuple[str, str, dict[str, bytes]]) -> None:
        text, crt_list, certs = files
        s = self.settings
        s.cert_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(s.state_dir, 0o700)
        default = s.cert_dir / "default.pem"
        if not default.exists():
            write_private(default, default_certificate())
        for name, pem in certs.items():
            write_private(s.cert_dir / name, pem)
        write_private(s.state_dir / "certs.list", crt_list)
        candidate = s.state_dir / "haproxy.cfg.new"
        write_private(candidate, text)
        self.haproxy.check(candidate)  # raises: the running configuration stays
        publish(candidate, s.config_path)
        keep = {*certs, "default.pem"}
        for old in s.cert_dir.iterdir():
            if old.name not in keep:
                old.unlink(missing_ok=True)

    def _annotate(self, value: str) -> None:
        if value == self._annotated:
            return
        patch = {"metadata": {"annotations": {PORTS_ANNOTATION: value or None}}}
        try:
            self.api.patch("Node", self.node_name, patch)
            self._annotated = value
        except errors.ApiError as err:
            log.warning("annotating node %s: %s", self.node_name, err)

    def _ready(self) -> bool:
        informers = (self.ingresses, self.classes, self.services, self.slices)
        return all(i.wait_for_sync(0.5) for i in informers)

    def _sync_timing(self) -> IngressTiming:
        return self.timing


def state_dir(agent_root: Path) -> Path:
    return agent_root / "ingress"
