"""Every kind the control plane serves, one module per kind.

    kinds/
      info.py         KindInfo: a kind's names, group/version, scope, subresources
      definition.py   KindDef: everything about one kind (the fields are listed there)
      registry.py     the table of kinds: found from the modules below, CRDs added
                      at run time; lookup by any name
      shared/         what several kinds share: metadata, the pod spec (validation,
                      defaults, schema), merge facts, workload templates, claims
      core/ apps/ batch/ ... volcano/
                      one module per kind, grouped by API group, each declaring
                      `DEFINITION = KindDef(...)`

The generic machinery (validation.validate(), defaults.apply_defaults(),
columns, patch_meta, pruning, openapi, the REST discovery, conversion and
tables, the API server's admission) reads the definitions through this
package; none of it names a kind.

Adding a kind is one module: `kinds/<group>/<kind>.py` with a DEFINITION
(start from a kind like it: core/configmap.py for plain data, core/podtemplate.py
for a kind with a pod template, apps/deployment.py for a workload). It states
only what is its own: a KindInfo (plural and singular are guessed from the
Kind as Kubernetes guesses them), its types as a schema table
(`schema.declare`: one line a field), its hooks; the shared pieces
(metadata, the pod template, workload rules and cells, list checks) are
imported from shared/ and controlplane/api/checks.py. The
registry finds it by walking the group packages; modules whose name starts
with `_` are helpers and are not walked. A new group is a new package
(`__init__.py` with a docstring). A kind's module may import another's
(CronJob uses Job's spec rules) but must not look kinds up at import: the
registry is being built then. Test it with a unit test of its rules and
an integration test through kubectl.

This package is pure data and functions: it never imports the API server,
the storage or the client transport, so skiffctl can use it freely.
"""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.registry import (
    UnknownKind,
    all_kinds,
    builtin_definitions,
    builtin_kinds,
    by_kind,
    definition,
    definitions,
    find,
    for_object,
    lookup,
    register,
    served_at,
    supported_kinds,
    unregister,
    withdraw_groups,
    withdrawn_groups,
)

__all__ = [
    "KindDef",
    "KindInfo",
    "UnknownKind",
    "all_kinds",
    "builtin_definitions",
    "builtin_kinds",
    "by_kind",
    "definition",
    "definitions",
    "find",
    "for_object",
    "lookup",
    "register",
    "served_at",
    "supported_kinds",
    "unregister",
    "withdraw_groups",
    "withdrawn_groups",
]
