"""The API priority and fairness configuration: keeps the bootstrap
FlowSchemas and PriorityLevelConfigurations (controlplane/api/apf_bootstrap.py)
as Kubernetes' apf bootstrap ensurer does, and every FlowSchema's Dangling
condition as its APF controller does.

A deleted bootstrap object is created again at once; a changed one is put
back: a mandatory one always (exempt, catch-all; the probes FlowSchema), a
suggested one while its `apf.kubernetes.io/autoupdate-spec` annotation
says "true". A
FlowSchema's status says whether the priority level it names exists
(`Dangling` False/Found or True/NotFound, with Kubernetes' messages); a
level coming or going re-checks every schema. (The API server creates the
bootstrap objects at start; this controller keeps them.)
"""

from __future__ import annotations

from controlplane.api import apf_bootstrap as apf
from controlplane.client import errors
from controlplane.client.interface import Object
from controlplane.controllers.base import Controller, ControllerContext
from machinery import rfc3339

_SEP = "|"


class ApfConfigurationController(Controller):
    name = "apf-configuration"
    default_workers = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.schemas = self.watch(apf.FS)
        self.levels = self.watch(apf.PLC)
        self.follow(self.schemas, self._schema, self._schema)
        self.follow(self.levels, self._level, self._level)

    def _schema(self, obj: Object) -> None:
        self.enqueue_key(f"{apf.FS}{_SEP}{obj['metadata']['name']}")

    def _level(self, obj: Object) -> None:
        self.enqueue_key(f"{apf.PLC}{_SEP}{obj['metadata']['name']}")
        for fs in self.schemas.store.list():
            self._schema(fs)

    def sync(self, key: str) -> float | None:
        kind, _, name = key.partition(_SEP)
        store = self.schemas.store if kind == apf.FS else self.levels.store
        stored = store.get(name)
        boot = apf.wanted(kind, name)
        if boot is not None:
            want, mandatory = boot
            if stored is None:
                # "we always re-create a missing configuration object" (Kubernetes' ensurer)
                try:
                    self.client.create(kind, want)
                except errors.AlreadyExists:
                    pass
                return None
            fixed = apf.reconcile(stored, want, mandatory)
            if fixed is not None:
                try:
                    stored = self.client.update(kind, fixed)
                except errors.Conflict:
                    return 0.0  # changed meanwhile: look again
        if kind == apf.FS and stored is not None:
            self._dangling(stored)
        return None

    def _dangling(self, schema: Object) -> None:
        levels = {lv["metadata"]["name"] for lv in self.levels.store.list()}
        cond = apf.dangling(schema, levels)
        status = dict(schema.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        old = next((c for c in conditions if c.get("type") == cond["type"]), None)
        if old is not None and all(old.get(k) == v for k, v in cond.items()):
            return
        cond["lastTransitionTime"] = rfc3339.format_time(self.clock.now())
        status["conditions"] = [c for c in conditions if c is not old] + [cond]
        self.write_status(apf.FS, schema, status)


def init(ctx: ControllerContext) -> Controller:
    return ApfConfigurationController(ctx)
