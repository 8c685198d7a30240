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

`default_plugins()` are the admission plugins of every kind, run after the
kind's own in kube-apiserver's order: LimitRanger (limitranger.py),
RuntimeClass (runtimeclass_admission.py), then ResourceQuota
(quota_admission.py), last, so it charges what the others filled in.
"""

from __future__ import annotations

from controlplane.api import kinds
from controlplane.apiserver import limitranger, runtimeclass_admission
from controlplane.apiserver.quota_admission import QuotaAdmission
from controlplane.apiserver.registry import Admit, Plugin


def default_admission() -> dict[str, Admit]:
    """kind key -> admission hook: each built-in kind's definition's `admit`."""
    return {d.key: d.admit for d in kinds.builtin_definitions() if d.admit is not None}


def default_plugins() -> list[Plugin]:
    """The admission plugins of every kind, in the order they run."""
    return [limitranger.admit, runtimeclass_admission.admit, QuotaAdmission()]
