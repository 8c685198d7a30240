"""ServiceAccounts every namespace needs, and the CA pods trust.

Two of kube-controller-manager's controllers, one key per namespace:
- serviceaccount: every active namespace has the ServiceAccount `default`
  (pods run as it unless they name another);
- root-ca-cert-publisher: every active namespace has the ConfigMap
  `kube-root-ca.crt` holding the cluster CA (`ca.crt`), which the token
  volume of every pod projects next to its token. It runs only when the
  manager's client knows the CA (a real cluster; not the in-memory one).

Level-triggered: a namespace change, or the deletion or change of one of
these objects, re-queues its namespace; `sync` creates or repairs. It never
touches terminating namespaces or objects of other names.
"""

from __future__ import annotations

from controlplane.api.serviceaccounts import ROOT_CA_CONFIGMAP
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers.base import Controller, ControllerContext

DEFAULT = "default"


def _namespace_of(obj: Object) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "")


class _PerNamespace(Controller):
    """Re-queue a namespace when it, or the watched kind's object in it, changes."""

    kind = ""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.namespaces = self.watch("Namespace")
        self.objects = self.watch(self.kind)
        self.follow(self.namespaces, self.enqueue)
        self.objects.add_event_handler(
            on_update=lambda o, n: self._object(n), on_delete=self._object
        )

    def _object(self, obj: Object) -> None:
        self.enqueue_key(_namespace_of(obj))

    def active(self, namespace: str) -> bool:
        ns = self.namespaces.store.get(namespace)
        return ns is not None and not (ns.get("metadata") or {}).get("deletionTimestamp")

    def ensure(self, namespace: str, body: Object) -> None:
        try:
            self.client.create(self.kind, body, namespace)
        except errors.AlreadyExists:
            pass
        except errors.NotFound:
            pass  # the namespace went away meanwhile
        except errors.Forbidden:
            pass  # it is terminating: nothing to add


class ServiceAccountController(_PerNamespace):
    name = "serviceaccount"
    kind = "ServiceAccount"
    default_workers = 1

    def sync(self, key: str) -> float | None:
        if self.active(key) and self.objects.store.get(DEFAULT, key) is None:
            self.ensure(key, {"metadata": {"name": DEFAULT}})
        return None


class RootCAPublisher(_PerNamespace):
    name = "root-ca-cert-publisher"
    kind = "ConfigMap"
    default_workers = 1

    def __init__(self, ctx: ControllerContext, ca_pem: str) -> None:
        super().__init__(ctx)
        self.ca_pem = ca_pem

    def _object(self, obj: Object) -> None:
        if (obj.get("metadata") or {}).get("name") == ROOT_CA_CONFIGMAP:
            super()._object(obj)

    def sync(self, key: str) -> float | None:
        if not self.active(key):
            return None
        data = {"ca.crt": self.ca_pem}
        current = self.objects.store.get(ROOT_CA_CONFIGMAP, key)
        if current is None:
            self.ensure(key, {"metadata": {"name": ROOT_CA_CONFIGMAP}, "data": data})
        elif current.get("data") != data:
            try:
                self.client.patch("ConfigMap", ROOT_CA_CONFIGMAP, {"data": data}, key)
            except errors.NotFound:
                self.enqueue_key(key)
        return None


def init(ctx: ControllerContext) -> Controller:
    return ServiceAccountController(ctx)


def init_root_ca(ctx: ControllerContext) -> Controller | None:
    config = getattr(ctx.client, "config", None)
    ca_pem = ctx.config.root_ca_pem or getattr(config, "ca_pem", b"") or b""
    if not ca_pem:
        return None  # no CA to publish (an in-memory or plaintext client)
    return RootCAPublisher(ctx, ca_pem.decode())
