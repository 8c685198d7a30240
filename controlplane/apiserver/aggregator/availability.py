"""The aggregator: local APIServices, Available conditions, the delegation table.

One thread, woken by every change of an APIService or a CRD, and of the
Services and Endpoints that APIServices name (and every `PERIOD` seconds,
as kube-aggregator's availability controller re-checks), makes one pass:

- registers a local APIService for every group/version served here and
  removes automanaged ones no longer served (local.py);
- for each APIService with a service: resolves its endpoints
  (endpoints.py) and runs the discovery check (checks.py) on them;
- writes each APIService's Available condition when it changed, with
  kube-aggregator's reasons: Local, Passed, ServiceNotFound,
  ServiceAccessError, MissingEndpoints, FailedDiscoveryCheck;
- publishes `table`: group/version -> Delegate, read by the proxy and by
  discovery without a lock (replaced whole on each pass).

At start it also publishes kube-system/extension-apiserver-authentication
and the Role that reads it (frontproxy.py).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from controlplane.api import kinds
from controlplane.apiserver.aggregator import checks, local
from controlplane.apiserver.aggregator.endpoints import Unresolved, resolve
from controlplane.apiserver.aggregator.frontproxy import (
    CONFIGMAP,
    FrontProxy,
    authentication_configmap,
)
from controlplane.apiserver.codec import ROOT, decode, object_key
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import AlreadyExists, ApiError, Conflict, NotFound
from controlplane.storage.interface import Event
from machinery import rfc3339
from machinery.wakeloop import WakeLoop

log = logging.getLogger(__name__)

PERIOD = 30.0
KIND = "APIService"
READER_ROLE = "extension-apiserver-authentication-reader"


@dataclass(frozen=True)
class Delegate:
    """A group/version served by an extension API server."""

    name: str  # the APIService
    service: str  # namespace/name
    server_name: str  # <service>.<namespace>.svc
    urls: tuple[str, ...]
    context: ssl.SSLContext | None
    available: bool
    reason: str
    message: str
    # Its APIResourceList: at the last check that passed (Stale when not available).
    resources: dict[str, Any] | None = None
    group_priority: int = 0
    version_priority: int = 0
    openapi_v2: dict[str, Any] | None = None  # its Swagger 2.0 document, when it serves one


@dataclass
class _Seen:
    contexts: dict[tuple[str, bool], ssl.SSLContext] = field(default_factory=dict)


def _condition(status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": "Available", "status": status, "reason": reason, "message": message}


def local_group_versions() -> dict[str, bool]:
    """Every group/version served here -> whether a built-in kind serves it."""
    builtin = {d.key for d in kinds.builtin_definitions()}
    found: dict[str, bool] = {}
    for definition in kinds.definitions():
        for gv in definition.served_versions():
            found[gv] = found.get(gv, False) or definition.key in builtin
    return found


class Aggregator:
    def __init__(
        self, registry: Registry, proxy: FrontProxy, client_ca_pem: bytes,
        period: float = PERIOD, check: Callable[..., dict[str, Any]] = checks.discovery_check,
    ) -> None:  # fmt: skip
        self.registry = registry
        self.proxy = proxy
        self.client_ca_pem = client_ca_pem
        self.period = period
        self.check = check
        self.fetch_openapi: Callable[..., dict[str, Any] | None] = checks.openapi_v2
        self.table: dict[str, Delegate] = {}
        self._loop = WakeLoop()
        self._seen = _Seen()
        self._prefixes = tuple(
            f"{ROOT}{kinds.by_kind(k).storage_name}/" for k in (KIND, "CustomResourceDefinition")
        )
        # The Services and Endpoints delegated APIServices name (their storage keys).
        self._watched: frozenset[str] = frozenset()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.publish_authentication()
        self.sync()
        self._loop.start(self._run, "aggregator")

    def stop(self) -> None:
        self._loop.stop()

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        if event.key.startswith(self._prefixes) or event.key in self._watched:
            self._loop.wake()

    def _run(self) -> None:
        while not self._loop.stopped():
            self._loop.wait(self.period)
            if self._loop.stopped():
                return
            try:
                self.sync()
            except Exception:  # a pass that failed is retried on the next
                log.exception("aggregator pass failed")

    # -- the ConfigMap extension servers read ---------------------------------------

    def publish_authentication(self) -> None:
        wanted = authentication_configmap(self.client_ca_pem, self.proxy)
        role: dict[str, Any] = {
            "metadata": {"name": READER_ROLE, "namespace": "kube-system",
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"],
                       "resourceNames": [CONFIGMAP]}],
        }  # fmt: skip
        for kind, obj in (("ConfigMap", wanted), ("Role", role)):
            try:
                current = self.registry.get_object(kind, obj["metadata"]["name"], "kube-system")
            except NotFound:
                try:
                    self.registry.create(kind, obj)
                except AlreadyExists:
                    pass
                continue
            field_name = "data" if kind == "ConfigMap" else "rules"
            if current.get(field_name) != obj[field_name]:
                current[field_name] = obj[field_name]
                self.registry.update(kind, current)

    # -- one pass ------------------------------------------------------------------

    def sync(self) -> None:
        stored = {
            o["metadata"]["name"]: o
            for o in (decode(d, r) for d, r in self.registry.list(KIND).items)
        }
        self._register_local(stored)
        table: dict[str, Delegate] = {}
        for name, obj in stored.items():
            spec = obj.get("spec") or {}
            group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
            gv = f"{group}/{version}" if group else version
            if not spec.get("service"):
                self._write(
                    obj, _condition("True", "Local", "Local APIServices are always available")
                )
                continue
            delegate = self._check(name, gv, spec)
            before = self.table.get(gv)
            if (
                delegate.resources is None
                and before is not None
                and before.service == delegate.service
            ):
                # As kube-aggregator: the last resources it listed, served as Stale.
                delegate = replace(delegate, resources=before.resources)
            table[gv] = delegate
            status = "True" if delegate.available else "False"
            self._write(obj, _condition(status, delegate.reason, delegate.message))
        self.table = table
        self._watched = frozenset(
            object_key(kinds.by_kind(kind), *d.service.split("/", 1))
            for d in table.values()
            for kind in ("Service", "Endpoints")
        )

    def _register_local(self, stored: dict[str, dict[str, Any]]) -> None:
        served = local_group_versions()
        names = {local.name_of(gv): (gv, builtin) for gv, builtin in served.items()}
        for name, (gv, builtin) in names.items():
            if name in stored:
                continue
            try:
                created, rev = self.registry.create(KIND, local.local_apiservice(gv, builtin))
                stored[name] = decode(created, rev)
            except AlreadyExists:
                pass
            except ApiError as err:
                log.warning("local APIService %s not registered: %s", name, err)
        for name, obj in list(stored.items()):
            if name in names or (obj.get("spec") or {}).get("service"):
                continue
            if local.is_automanaged(obj):
                try:
                    self.registry.delete(KIND, name)
                except NotFound:
                    pass
                stored.pop(name, None)

    def _context(self, spec: dict[str, Any]) -> ssl.SSLContext:
        key = (str(spec.get("caBundle") or ""), bool(spec.get("insecureSkipTLSVerify")))
        context = self._seen.contexts.get(key)
        if context is None:
            context = checks.client_context(self.proxy, *key)
            self._seen.contexts[key] = context
        return context

    def _check(self, name: str, gv: str, spec: dict[str, Any]) -> Delegate:
        service = spec["service"]
        ns, svc = str(service.get("namespace") or ""), str(service.get("name") or "")
        port = int(service.get("port") or 443)
        server_name = f"{svc}.{ns}.svc"
        base = Delegate(
            name, f"{ns}/{svc}", server_name, (), None, False, "", "",
            group_priority=int(spec.get("groupPriorityMinimum") or 0),
            version_priority=int(spec.get("versionPriority") or 0),
        )  # fmt: skip
        try:
            urls = tuple(resolve(self._read, ns, svc, port))
        except Unresolved as err:
            return replace(base, reason=err.reason, message=err.message)
        try:
            context = self._context(spec)
        except (ssl.SSLError, ValueError) as err:
            return replace(base, urls=urls, reason="FailedDiscoveryCheck",
                           message=f"bad caBundle: {err}")  # fmt: skip
        problem = ""
        for url in urls:
            try:
                resources = self.check(url, context, server_name, gv)
            except ValueError as err:
                problem = problem or str(err)
                continue
            spec_v2 = self.fetch_openapi(url, context, server_name)
            return replace(base, urls=urls, context=context, available=True, reason="Passed",
                           message="all checks passed", resources=resources, openapi_v2=spec_v2)  # fmt: skip
        return replace(base, urls=urls, context=context, reason="FailedDiscoveryCheck",
                       message=problem)  # fmt: skip

    def _read(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.registry.get_object(kind, name, namespace)
        except NotFound:
            return None

    def _write(self, obj: dict[str, Any], condition: dict[str, str]) -> None:
        status = obj.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        current = next((c for c in conditions if c.get("type") == "Available"), None)
        if current is not None and all(current.get(k) == v for k, v in condition.items()):
            return
        if current is None or current.get("status") != condition["status"]:
            condition = {**condition, "lastTransitionTime": rfc3339.now()}
        else:
            condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime", "")}
        status["conditions"] = [c for c in conditions if c.get("type") != "Available"] + [condition]
        try:
            self.registry.update(KIND, obj, subresource="status")
        except (Conflict, NotFound):
            self._loop.wake()  # changed meanwhile: the next pass sees it
