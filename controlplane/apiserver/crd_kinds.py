"""Keeps the served kinds in step with the stored CustomResourceDefinitions.

The server wires one CrdKinds to its registry and broadcaster:

    crd_kinds = CrdKinds(registry)
    registry.admission["CustomResourceDefinition"] = crd_kinds.admit
    crd_kinds.start()                               # serve the CRDs in storage
    broadcaster.add_listener(crd_kinds.on_event)    # follow creates/updates/deletes

`admit` registers a new CRD's kind synchronously while it is created, so a
client can create custom objects as soon as the CRD create returns (the CRD
says Established at once); the listener follows every later change, also
those made through another API server on the same storage. It also installs
the caller of conversion webhooks (crd_conversion.py, over the shared HTTPS
webhook client, Services resolved to their endpoints through this registry)
that CRDs with `conversion.strategy: Webhook` convert with. When a CRD is
deleted its kind stops being served and its stored objects are removed, as
kube-apiserver's CRD finalizer does.
"""

from __future__ import annotations

import logging
import threading

from controlplane.api import crd, crd_versions
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.apiserver import admission_context
from controlplane.apiserver.codec import ROOT, Object, decode
from controlplane.apiserver.crd_conversion import ConversionWebhooks
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.webhooks.client import WebhookClient
from controlplane.apiserver.webhooks.resolve import ServiceResolver
from controlplane.client.errors import NotFound
from controlplane.storage.interface import Event, EventType, StorageError

log = logging.getLogger(__name__)


class CrdKinds:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._prefix = f"{ROOT}{by_kind(crd.KIND).storage_name}/"
        self.prefixes = (self._prefix,)  # the keys of the events on_event reads
        resolver = ServiceResolver(self._lookup, self._objects)
        self.webhooks = ConversionWebhooks(WebhookClient(resolver))
        crd_versions.set_webhook_converter(self.webhooks)

    def _lookup(self, kind: str, namespace: str, name: str) -> Object | None:
        try:
            return self.registry.get_object(kind, name, namespace)
        except NotFound:
            return None

    def _objects(self, kind: str, namespace: str) -> list[Object]:
        return [decode(d, r) for d, r in self.registry.list(kind, namespace).items]

    def start(self) -> None:
        """Serve every CRD found in storage."""
        for item, rev in self.registry.list(crd.KIND).items:
            self._serve(decode(item, rev))

    def admit(self, registry: Registry, info: KindInfo, obj: Object, old: Object | None) -> None:
        """Registry admission for a CRD create: serve its kind now (a valid CRD:
        validation ran first). Updates are followed by the listener."""
        from controlplane.api.crd_validation import builtin_warning, served_builtin

        builtin = served_builtin(obj.get("spec"))
        if builtin is not None:
            admission_context.warn(builtin_warning(builtin))
            return
        if old is None and not crd.is_custom(crd.kind_info(obj).key):
            self._serve(obj)

    def on_event(self, event: Event) -> None:
        """Broadcaster listener: cheap, never blocks."""
        if not event.key.startswith(self._prefix):
            return
        name = event.key[len(self._prefix) :]
        if event.type != EventType.DELETE:
            self._serve(decode(event.value, event.rev))
            return
        gone = crd.unregister(name)
        if gone is None:
            return
        threading.Thread(
            target=self._purge, args=(gone, name), name="crd-purge", daemon=True
        ).start()

    def _serve(self, obj: Object) -> None:
        try:
            crd.register(obj)
        except ValueError as err:
            name = (obj.get("metadata") or {}).get("name")
            log.warning("CustomResourceDefinition %s not served: %s", name, err)

    def _purge(self, gone: KindInfo, name: str) -> None:
        """Remove the stored objects of a deleted CRD's kind (unless it was
        re-created meanwhile)."""
        if crd.is_custom(gone.key):
            return
        store = self.registry.store
        try:
            for kv in store.range(f"{ROOT}{gone.storage_name}/").items:
                try:
                    store.delete(kv.key, kv.mod_rev)
                except StorageError:
                    continue
        except StorageError as err:
            log.warning("CustomResourceDefinition %s: removing its objects failed: %s", name, err)
