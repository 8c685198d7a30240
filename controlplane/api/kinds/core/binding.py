"""Binding (v1, namespaced): binds a pod to a node, as the scheduler does.
`POST /api/v1/namespaces/NS/bindings` with the pod's name as
metadata.name, or the pods/binding subresource; never stored (create
only). The API server refuses a target other than a Node, a pod already
bound, and a pod being deleted (controlplane/apiserver/subresources.py)."""

from __future__ import annotations

from controlplane.api.kinds.definition import KindDef
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import CORE, declare

DEFINITION = KindDef(
    KindInfo("Binding", "v1", has_status=False, create_only=True),
    types={
        **declare(
            CORE,
            """
            Binding [v1 Binding]: Binding ties one object to another; for example, a pod is bound to
                                  a node by a scheduler.
                target!  object  The target object that you want to bind to the standard object.
            """,
        ),
    },
)
