"""Kind-specific admission: what the Kubernetes API server does beyond defaults.

Each built-in kind's definition (controlplane/api/kinds/) may carry an
`admit` hook (Pod: priority, ServiceAccount and QoS; Service: cluster IPs
and node ports; Secret: stringData; PersistentVolumeClaim: the default
class and protection; ...). `default_admission()` gathers them by kind key
for the Registry, which calls the one of the kind written, on create and
update, after validation; the server adds its own (CustomResourceDefinition:
serve the new kind). A hook gets the registry (as kinds.definition.AdmissionApi),
the kind, the object being written (mutable) and the stored object (None on
create); it raises API errors.
"""

from __future__ import annotations

from controlplane.api import kinds
from controlplane.apiserver.registry import Admit


def default_admission() -> dict[str, Admit]:
    """kind key -> admission hook: each built-in kind's definition's `admit`."""
    return {d.key: d.admit for d in kinds.builtin_definitions() if d.admit is not None}
