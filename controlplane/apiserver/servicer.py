"""The gRPC servicers: thin delegation to the registry and the broadcaster.

Every RPC goes through `rpc.rpc`, the one place that checks the request
size, authenticates the bearer token, takes a flow-control slot, logs and
audits the call once, and turns API errors into gRPC status codes. Objects
travel as JSON bytes with their resourceVersion beside them
(see proto/controlplane/v1/api.proto). Writes name their field manager in
the `field-manager` metadata key (else it comes from the caller's identity or
User-Agent: fieldmanager.for_grpc); the registry records it in managedFields.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from controlplane.api import jsoncodec, limits
from controlplane.apiserver import fieldmanager
from controlplane.apiserver.audit import AuditLog
from controlplane.apiserver.auth import Identity, TokenAuthority
from controlplane.apiserver.bootstrap import BootstrapJoin
from controlplane.apiserver.codec import Stored, kind_info, with_version
from controlplane.apiserver.fieldmanager import FieldManager
from controlplane.apiserver.flowcontrol import FlowControl
from controlplane.apiserver.grpc_status import abort, item_failure
from controlplane.apiserver.listing import ListResult, Selectors
from controlplane.apiserver.metrics import ApiServerMetrics, labels, scope
from controlplane.apiserver.registry import Registry
from controlplane.apiserver.rpc import RpcBase, rpc
from controlplane.apiserver.subresources import PodBinding
from controlplane.apiserver.watch import Broadcaster
from controlplane.client import errors
from controlplane.client.interface import DeleteOptions
from proto.controlplane.v1 import api_pb2, api_pb2_grpc

log = logging.getLogger(__name__)

LIST_CHUNK = 1000  # items per ListStream message (about 1 MB of pods)
MAX_BATCH = 5000  # items per CreateMany call


def _manager(context: grpc.ServicerContext, who: Identity) -> FieldManager:
    """Who a write is recorded for in managedFields (fieldmanager.for_grpc)."""
    explicit = agent = ""
    for key, value in context.invocation_metadata():
        if key == fieldmanager.GRPC_KEY:
            explicit = value.decode() if isinstance(value, bytes) else str(value)
        elif key == "user-agent":
            agent = value.decode() if isinstance(value, bytes) else str(value)
    return fieldmanager.for_grpc(explicit, agent, who)


# A Watch call's metadata key: "true" asks for objects without
# metadata.managedFields (the client's apiclient.OMIT_MANAGED_FIELDS_KEY).
OMIT_MANAGED_FIELDS_KEY = "omit-managed-fields"


def _omits_managed_fields(context: grpc.ServicerContext) -> bool:
    for key, value in context.invocation_metadata():
        if key == OMIT_MANAGED_FIELDS_KEY:
            text = value.decode() if isinstance(value, bytes) else str(value)
            if text not in ("true", "false"):
                raise errors.Invalid(
                    f"{OMIT_MANAGED_FIELDS_KEY}: must be true or false, not {text!r}"
                )
            return text == "true"
    return False


def _obj(stored: Stored) -> api_pb2.Object:
    return api_pb2.Object(json=stored[0], resource_version=stored[1])


def _in_order(
    n: int, refused: dict[int, errors.ApiError], outcomes: Iterator[Stored | errors.ApiError]
) -> Iterator[Stored | errors.ApiError]:
    """The outcomes of a batch's n items in request order: those refused before
    reaching the registry, the registry's answers for the others."""
    for i in range(n):
        yield refused.get(i) or next(outcomes)


def _list_message(
    items: list[Stored], resource_version: str = "", continue_token: str = ""
) -> api_pb2.ListResponse:
    """Items of a List as one JSON array, each object with its resourceVersion
    written in (and beside it, for clients that read it there)."""
    return api_pb2.ListResponse(
        items_json=b"[" + b",".join([with_version(d, r) for d, r in items]) + b"]",
        item_resource_versions=[r for _, r in items],
        versions_inline=True,
        resource_version=resource_version,
        continue_token=continue_token,
    )


def _json(data: bytes, what: str = "object") -> Any:
    limits.check_body(data, what)
    try:
        return jsoncodec.loads(data)
    except (ValueError, UnicodeDecodeError, jsoncodec.DecodeError) as err:
        raise errors.Invalid(f"{what}: not valid JSON: {err}") from err


class ObjectsServicer(RpcBase, api_pb2_grpc.ObjectsServicer):
    def __init__(
        self,
        registry: Registry,
        broadcaster: Broadcaster,
        authority: TokenAuthority | None,
        flow: FlowControl | None = None,
        audit: AuditLog | None = None,
        metrics: ApiServerMetrics | None = None,
    ) -> None:
        super().__init__(authority, flow, audit, metrics)
        self.registry = registry
        self.broadcaster = broadcaster

    @rpc("Create", mutating=True)
    def Create(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        obj = _json(request.json)
        stored = self.registry.create(
            request.kind, obj, request.namespace or None, who, copy_input=False,
            manager=_manager(context, who),
        )  # fmt: skip
        return api_pb2.ObjectResponse(object=_obj(stored))

    @rpc("Get", mutating=False)
    def Get(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        stored = self.registry.get(request.kind, request.name, request.namespace or None, who)
        return api_pb2.ObjectResponse(object=_obj(stored))

    @rpc("List", mutating=False)
    def List(self, request: Any, context: Any, who: Identity) -> api_pb2.ListResponse:
        with jsoncodec.paused_gc():
            return self._list(request, who)

    def _list(self, request: Any, who: Identity) -> api_pb2.ListResponse:
        result = self._registry_list(request, who)
        return _list_message(result.items, str(result.resource_version), result.continue_token)

    def _registry_list(self, request: Any, who: Identity) -> ListResult:
        return self.registry.list(
            request.kind,
            request.namespace or None,
            request.label_selector,
            request.field_selector,
            int(request.limit),
            request.continue_token,
            who,
        )

    @rpc("ListStream", mutating=False)
    def ListStream(
        self, request: Any, context: Any, who: Identity
    ) -> Iterator[api_pb2.ListResponse]:
        if request.limit or request.continue_token:
            with jsoncodec.paused_gc():
                result = self._registry_list(request, who)
            return self._chunks(result.items, str(result.resource_version), result.continue_token)
        pages = self.registry.list_pages(
            request.kind,
            request.namespace or None,
            request.label_selector,
            request.field_selector,
            who,
            LIST_CHUNK,
        )
        return self._stream_pages(pages, context)

    @staticmethod
    def _stream_pages(
        pages: Iterator[ListResult], context: grpc.ServicerContext
    ) -> Iterator[api_pb2.ListResponse]:
        """One message per page as the store reads it, each object with its
        resourceVersion written in; the last message carries the list's
        resourceVersion (the snapshot's revision)."""
        try:
            held: ListResult | None = None
            for page in pages:
                if held is not None and held.items:
                    yield _list_message(held.items)
                held = page
            if held is not None:
                yield _list_message(held.items, str(held.resource_version))
        except errors.ApiError as err:
            # The pages are read while streaming, past the handler's wrapper:
            # a failure ends the stream with the error's own status.
            abort(context, err)
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()

    @staticmethod
    def _chunks(
        items: list[Stored], resource_version: str, continue_token: str
    ) -> Iterator[api_pb2.ListResponse]:
        for start in range(0, max(len(items), 1), LIST_CHUNK):
            chunk = items[start : start + LIST_CHUNK]
            last = start + LIST_CHUNK >= len(items)
            yield _list_message(
                chunk, resource_version if last else "", continue_token if last else ""
            )

    @rpc("Update", mutating=True)
    def Update(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        obj = _json(request.json)
        stored = self.registry.update(
            request.kind, obj, request.subresource, who, copy_input=False,
            manager=_manager(context, who),
        )  # fmt: skip
        return api_pb2.ObjectResponse(object=_obj(stored))

    @rpc("Patch", mutating=True)
    def Patch(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        patch = _json(request.patch, "patch")
        stored = self.registry.patch(
            request.kind, request.name, patch, request.namespace or None, request.subresource, who,
            manager=_manager(context, who),
        )  # fmt: skip
        return api_pb2.ObjectResponse(object=_obj(stored))

    @rpc("Delete", mutating=True)
    def Delete(self, request: Any, context: Any, who: Identity) -> api_pb2.DeleteResponse:
        options = DeleteOptions(
            grace_period_seconds=(
                None if request.grace_period_seconds < 0 else int(request.grace_period_seconds)
            ),
            propagation_policy=request.propagation_policy or None,
            precondition_uid=request.precondition_uid or None,
            precondition_resource_version=request.precondition_resource_version or None,
        )
        stored = self.registry.delete(
            request.kind, request.name, request.namespace or None, options, who
        )
        if stored is None:
            return api_pb2.DeleteResponse()
        return api_pb2.DeleteResponse(object=_obj(stored))

    @rpc("Watch")
    def Watch(self, request: Any, context: Any, who: Identity) -> Iterator[api_pb2.WatchEvent]:
        info = kind_info(request.kind)
        namespace = request.namespace if info.namespaced else ""
        if request.namespace and not info.namespaced:
            raise errors.Invalid(f"metadata.namespace: not allowed: {info.kind} is cluster-scoped")
        selectors = Selectors.parse(request.label_selector, request.field_selector)
        self.registry.authorizer.authorize(
            who, "watch", info, namespace, "", fields=selectors.fields, labels=selectors.labels
        )
        rv_text = request.resource_version
        rv: int | None = None
        if rv_text and rv_text != "0":
            try:
                rv = int(rv_text)
            except ValueError as err:
                raise errors.Invalid(f"resourceVersion: {rv_text!r} is not valid") from err
        omit = _omits_managed_fields(context)
        end = self._watch_count(who, info, namespace)
        try:
            watcher = self.broadcaster.watch(
                info, namespace, selectors, rv, bool(request.allow_bookmarks),
                omit_managed_fields=omit,
            )  # fmt: skip
        except BaseException:
            end()
            raise
        context.add_callback(watcher.stop)
        context.add_callback(end)
        # Headers now, so the client learns at once that the watch is open.
        context.send_initial_metadata(())
        return self._stream(watcher, context, end)

    def _watch_count(self, who: Identity, info: Any, namespace: str) -> Callable[[], None]:
        """Count an open watch for flow control (raises over a cap) and /metrics."""
        flow_end = self.flow.watch(who) if self.flow is not None else (lambda: None)
        if self.metrics is None:
            return flow_end
        gone = self.metrics.watch(labels("WATCH", info, "", "", scope(info, namespace, "")))

        def end() -> None:
            flow_end()
            gone()

        return end

    @staticmethod
    def _stream(
        watcher: Any, context: Any, end: Callable[[], None] = lambda: None
    ) -> Iterator[api_pb2.WatchEvent]:
        try:
            for batch in watcher.batches():
                messages = []
                for item in batch:
                    message = item.wire
                    if message is None:
                        message = api_pb2.WatchEvent(
                            type=item.type,
                            object=api_pb2.Object(json=item.data, resource_version=item.rev),
                        )
                        item.wire = message
                    messages.append(message)
                if len(messages) == 1:
                    yield messages[0]
                else:
                    first = messages[0]
                    yield api_pb2.WatchEvent(
                        type=first.type, object=first.object, more=messages[1:]
                    )
        finally:
            watcher.stop()
            end()

    @rpc("GetScale", mutating=False)
    def GetScale(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        scale = self.registry.get_scale(request.kind, request.name, request.namespace or None, who)
        rv = int(scale["metadata"].pop("resourceVersion"))
        return api_pb2.ObjectResponse(
            object=api_pb2.Object(json=json.dumps(scale).encode(), resource_version=rv)
        )

    @rpc("UpdateScale", mutating=True)
    def UpdateScale(self, request: Any, context: Any, who: Identity) -> api_pb2.ObjectResponse:
        scale = self.registry.update_scale(
            request.kind, request.name, request.namespace or None, int(request.replicas), who,
            _manager(context, who),
        )  # fmt: skip
        rv = int(scale["metadata"].pop("resourceVersion"))
        return api_pb2.ObjectResponse(
            object=api_pb2.Object(json=json.dumps(scale).encode(), resource_version=rv)
        )

    @rpc("Bind", mutating=True)
    def Bind(self, request: Any, context: Any, who: Identity) -> api_pb2.BindResponse:
        bindings = []
        refused: dict[int, errors.ApiError] = {}
        for i, b in enumerate(request.bindings):
            annotations = None
            if b.annotations_json:
                try:
                    annotations = _json(b.annotations_json, "annotations")
                except errors.Invalid as err:
                    refused[i] = err
                if not isinstance(annotations, dict) or not all(
                    isinstance(v, str) for v in annotations.values()
                ):
                    refused.setdefault(i, errors.Invalid("annotations: must map names to strings"))
            bindings.append(PodBinding(b.namespace, b.name, b.node_name, b.uid, annotations))
        valid = [b for i, b in enumerate(bindings) if i not in refused]
        outcomes: Iterator[Stored | errors.ApiError] = iter(self.registry.bind_many(valid, who))
        return api_pb2.BindResponse(
            results=[
                api_pb2.BindResult(**item_failure(o))
                if isinstance(o, errors.ApiError)
                else api_pb2.BindResult(resource_version=o[1])
                for o in _in_order(len(bindings), refused, outcomes)
            ]
        )

    @rpc("CreateMany", mutating=True)
    def CreateMany(self, request: Any, context: Any, who: Identity) -> api_pb2.CreateManyResponse:
        if len(request.items) > MAX_BATCH:
            raise errors.Invalid(f"items: at most {MAX_BATCH} per call, got {len(request.items)}")
        work: list[tuple[str, Any, str | None]] = []
        refused: dict[int, errors.ApiError] = {}
        for i, item in enumerate(request.items):
            try:
                work.append((item.kind, _json(item.json), item.namespace or None))
            except errors.Invalid as err:
                refused[i] = err
        outcomes = iter(self.registry.create_many(work, who, _manager(context, who)))
        brief = bool(request.omit_objects)  # the caller keeps what it sent
        return api_pb2.CreateManyResponse(
            results=[
                api_pb2.CreateResult(**item_failure(o))
                if isinstance(o, errors.ApiError)
                else api_pb2.CreateResult(resource_version=o[1])
                if brief
                else api_pb2.CreateResult(object=_obj(o), resource_version=o[1])
                for o in _in_order(len(request.items), refused, outcomes)
            ]
        )


class AuthServicer(RpcBase, api_pb2_grpc.AuthServicer):
    def __init__(
        self,
        authority: TokenAuthority | None,
        ca_pem: bytes,
        joins: BootstrapJoin | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        super().__init__(authority, audit=audit)
        self.ca_pem = ca_pem
        self.joins = joins

    @rpc("Join", authenticate=False)
    def Join(self, request: Any, context: Any) -> api_pb2.JoinResponse:
        if self.joins is None:
            raise errors.Unavailable("this server runs without authentication")
        token, cert = self.joins.join(
            request.join_token, request.node_name, request.serving_csr_pem
        )
        log.info("node=%s joined", request.node_name)
        return api_pb2.JoinResponse(token=token, ca_pem=self.ca_pem, serving_cert_pem=cert)

    @rpc("WhoAmI")
    def WhoAmI(self, request: Any, context: Any, who: Identity) -> api_pb2.WhoAmIResponse:
        return api_pb2.WhoAmIResponse(user=who.user, node_name=who.node or "", admin=who.admin)
