"""Namespace (v1, cluster-scoped): a scope for names; its name is a DNS-1123 label.

Defaults: spec.finalizers [kubernetes], status.phase Active, and the label
`kubernetes.io/metadata.name` set to the name on every write (Kubernetes'
SetDefaults_Namespace and Canonicalize: selectors may rely on it, so a
client cannot change or remove it). Validation:
status.phase Active or Terminating. Columns: NAME STATUS AGE. (Its
lifecycle, finalizing and the protected namespaces are the API server's:
controlplane/apiserver/namespaces.py and deletion.py.)
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors, enum, mapping
from controlplane.api.display import age, name, status
from controlplane.api.kinds.definition import KindDef, Printer, columns
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.fill import child
from controlplane.api.kinds.shared.patch_facts import CONDITIONS, facts
from controlplane.api.schema import CORE, declare

Object = dict[str, Any]


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    ns_status: Any = obj.get("status")
    if mapping(e, "status", ns_status):
        enum(e, "status.phase", ns_status.get("phase"), ("Active", "Terminating"))


NAME_LABEL = "kubernetes.io/metadata.name"


def defaults(obj: Object) -> None:
    meta = child(obj, "metadata")
    if meta.get("name"):
        labels = meta.get("labels")
        if labels is None:
            labels = meta["labels"] = {}
        if isinstance(labels, dict):  # anything else: validation names it
            labels[NAME_LABEL] = meta["name"]
    child(obj, "spec").setdefault("finalizers", ["kubernetes"])
    child(obj, "status").setdefault("phase", "Active")


def row(obj: Object, now: float, wide: bool) -> list[str]:
    return [name(obj), str(status(obj).get("phase") or "Active"), age(obj, now)]


DEFINITION = KindDef(
    KindInfo("Namespace", "v1", short_names=("ns",), namespaced=False),
    types={
        **declare(
            CORE,
            """
            Namespace [v1 Namespace]: Namespace provides a scope for Names.
                spec    NamespaceSpec
                status  object
            NamespaceSpec: NamespaceSpec describes the attributes on a Namespace.
                finalizers  []string  Must be empty before the namespace is removed.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    name_rule="label",
    printer=Printer(columns(("NAME", "STATUS", "AGE")), row),
    patch_meta=facts(status=CONDITIONS),
)
