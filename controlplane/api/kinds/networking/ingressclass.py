"""IngressClass (networking.k8s.io/v1): which controller serves an Ingress.
skiff's own is `skiff` (controller `skiff.io/ingress`), made by the ingress
controller and annotated as the default class.

- Defaults, as Kubernetes': `spec.parameters.scope` Cluster.
- Validation: `spec.controller` a domain-prefixed path (at most 250
  characters), never changed; parameters name a kind and a name, with a
  namespace exactly when their scope is Namespace.
- Columns: NAME CONTROLLER PARAMETERS AGE, as Kubernetes prints them.
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.display import NONE, age, name, spec
from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.api.kinds.definition import Column, KindDef, Printer
from controlplane.api.kinds.info import KindInfo
from controlplane.api.kinds.shared.patch_facts import facts
from controlplane.api.schema import declare

Object = dict[str, Any]

_PACKAGE = "io.k8s.api.networking.v1"
SCOPES = ("Cluster", "Namespace")


def defaults(obj: Object) -> None:
    params = (
        (obj.get("spec") or {}).get("parameters") if isinstance(obj.get("spec"), dict) else None
    )
    if isinstance(params, dict):
        params.setdefault("scope", "Cluster")


def _parameters(e: Errors, params: Any) -> None:
    path = "spec.parameters"
    if not isinstance(params, dict):
        e.add(path, "must be an object")
        return
    if not params.get("kind"):
        e.add(f"{path}.kind", "Required value")
    if not params.get("name"):
        e.add(f"{path}.name", "Required value")
    group = params.get("apiGroup")
    if group and not is_dns_subdomain(str(group)):
        e.add(f"{path}.apiGroup", f'Invalid value: "{group}": must be a DNS subdomain')
    scope, namespace = params.get("scope"), params.get("namespace")
    if scope is not None and scope not in SCOPES:
        e.add(
            f"{path}.scope",
            f'Unsupported value: "{scope}": supported values: "Cluster", "Namespace"',
        )
    if scope == "Namespace" and not namespace:
        e.add(f"{path}.namespace", "Required value: `parameters.scope` is set to 'Namespace'")
    elif scope == "Namespace" and not is_dns_label(str(namespace)):
        e.add(f"{path}.namespace", f'Invalid value: "{namespace}": must be a DNS-1123 label')
    if scope == "Cluster" and namespace:
        e.add(f"{path}.namespace", "Forbidden: `parameters.scope` is set to 'Cluster'")


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    cls_spec: Any = obj.get("spec")
    controller = cls_spec.get("controller") if isinstance(cls_spec, dict) else None
    if not controller:
        e.add("spec.controller", "Required value")
        return
    text = str(controller)
    domain, slash, rest = text.partition("/")
    if not slash or not rest or not is_dns_subdomain(domain) or len(text) > 250:
        e.add(
            "spec.controller",
            f'Invalid value: "{text}": must be a domain-prefixed path (such as "acme.io/foo")',
        )
    if old is not None:
        before = (old.get("spec") or {}).get("controller")
        if before and before != controller:
            e.add("spec.controller", "Invalid value: field is immutable")
    if cls_spec.get("parameters") is not None:
        _parameters(e, cls_spec["parameters"])


def row(obj: Object, now: float, wide: bool) -> list[str]:
    sp = spec(obj)
    params = sp.get("parameters")
    shown = NONE
    if isinstance(params, dict):
        group = params.get("apiGroup")
        shown = (
            f"{params.get('kind', '')}{'.' + str(group) if group else ''}/{params.get('name', '')}"
        )
    return [name(obj), str(sp.get("controller") or ""), shown, age(obj, now)]


PRINTER = Printer(
    (
        Column("NAME"),
        Column("CONTROLLER", description="Controller that is responsible for handling this class"),
        Column("PARAMETERS", description="A reference to a resource with additional parameters"),
        Column("AGE"),
    ),
    row,
)

DEFINITION = KindDef(
    KindInfo("IngressClass", "networking.k8s.io/v1", namespaced=False, has_status=False),
    types={
        **declare(
            _PACKAGE,
            """
            IngressClass [networking.k8s.io/v1 IngressClass]: IngressClass represents the class of
                    the Ingress, referenced by the Ingress Spec.
                spec  IngressClassSpec
            IngressClassSpec: IngressClassSpec provides information about the class of an Ingress.
                controller  string                           The controller that implements this
                                                             class (acme.io/foo).
                parameters  IngressClassParametersReference  Configuration for the controller.
            IngressClassParametersReference: IngressClassParametersReference identifies an API
                                             object that configures the class.
                apiGroup   string  The group of the referenced object; none: the core group.
                kind!      string  The type of the referenced object.
                name!      string  The name of the referenced object.
                scope      string  Cluster (default) or Namespace.
                namespace  string  The namespace of the referenced object, with scope Namespace.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
    printer=PRINTER,
    patch_meta=facts(),
)
