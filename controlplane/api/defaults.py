"""Kubernetes defaults for the fields skiff supports, per kind.

`apply_defaults(kind, obj)` fills in what the Kubernetes API server would
fill in on create and update (restartPolicy Always, replicas 1, RollingUpdate
25%/25%, Service port protocol TCP and targetPort = port, ...): the kind's
`KindDef.defaults` (controlplane/api/kinds/<group>/<kind>.py; a custom kind's
are its CRD schema's). It mutates `obj` in place and never removes or
rewrites a value the user set. Pure: no storage access (things that need
other objects, such as a Pod's priority from its PriorityClass or a
Service's clusterIP, are admission: KindDef.admit).
"""

from __future__ import annotations

from typing import Any

from controlplane.api import kinds

Object = dict[str, Any]


def apply_defaults(kind: str, obj: Object) -> None:
    """Fill in Kubernetes defaults for `kind` (a kinds key) in place."""
    definition = kinds.find(kind)
    if definition is not None and definition.defaults is not None:
        definition.defaults(obj)
