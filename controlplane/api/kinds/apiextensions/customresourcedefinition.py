"""CustomResourceDefinition (apiextensions.k8s.io/v1, cluster-scoped): a kind
users bring. Its own validation and defaults are controlplane/api/crd_validation.py
(names, versions, structural schemas); serving the kind it defines is
controlplane/api/crd.py (registered in the kinds registry at run time) and
the API server's crd_kinds.py (its admission hook, which needs the server).
"""

from __future__ import annotations

from typing import Any

from controlplane.api.checks import Errors
from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import declare

Object = dict[str, Any]

_PACKAGE = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"


# crd_validation (and the schema machinery under it) is imported at the first
# CRD written: a control plane without CRDs never holds it.


def validate(e: Errors, obj: Object, old: Object | None) -> None:
    from controlplane.api import crd_validation

    e.items.extend(crd_validation.validate_crd(obj, old))


def defaults(obj: Object) -> None:
    from controlplane.api import crd_validation

    crd_validation.default_crd(obj)


DEFINITION = KindDef(
    KindInfo(
        "CustomResourceDefinition",
        "apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "customresourcedefinition",
        ("crd", "crds"),
        namespaced=False,
        has_status=True,
        categories=("api-extensions",),
    ),
    types={
        **declare(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
            """
            CustomResourceDefinition [apiextensions.k8s.io/v1 CustomResourceDefinition]: CustomResourceDefinition
                    represents a resource that should be exposed on the API server.
                spec!   CustomResourceDefinitionSpec
                status  object
            CustomResourceDefinitionSpec: CustomResourceDefinitionSpec describes how a user wants
                                          their resource to appear.
                group!                 string                             The API group of the
                                                                          defined custom resource.
                names!                 object                             The resource and kind
                                                                          names (plural, singular,
                                                                          kind, shortNames, ...).
                scope!                 string                             Cluster or Namespaced.
                versions!              []CustomResourceDefinitionVersion  The API versions of the
                                                                          defined resource.
                conversion             object                             How to convert between
                                                                          versions: None (apiVersion
                                                                          rewritten) or Webhook.
                preserveUnknownFields  boolean                            Deprecated; must be false.
            CustomResourceDefinitionVersion: CustomResourceDefinitionVersion describes a version for
                                             CRD.
                name!                     string    The version name, e.g. v1, v2beta1.
                served!                   boolean   Whether this version is served by REST APIs.
                storage!                  boolean   Whether this version is the one objects are
                                                    stored in.
                deprecated                boolean   Whether this version is deprecated.
                deprecationWarning        string    The warning returned to clients of a deprecated
                                                    version.
                schema                    object    The schema (openAPIV3Schema) used for
                                                    validation, pruning and defaulting.
                subresources              object    The status and scale subresources.
                additionalPrinterColumns  []object  Extra columns shown in kubectl get.
                selectableFields          []object  Fields that may be used as field selectors.
            """,
        ),
    },
    defaults=defaults,
    validate=validate,
)
