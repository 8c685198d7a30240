"""The gRPC implementation of the ApiClient contract.

`connect(config)` opens a channel to the API server named in a ClientConfig
(see config.py): TLS pinned to the cluster CA (the server certificate is
checked for the name `skiff-apiserver`, whatever address is dialled) and the
bearer token on every call, and the field manager its writes are recorded
for in managedFields (the `field-manager` metadata key) when the client
names one. Objects are plain dicts; each call maps a failed call's gRPC
status (and the reason and retry advice in its trailing metadata) back to
the exceptions of controlplane.client.errors through the one error table
(machinery.apierrors.from_grpc). `join(...)` exchanges a join token for a node credential.

A watch is a server stream: iterate it for WatchEvents; the iteration ends
when the server closes the stream (shutdown, or the watcher fell too far
behind): re-watch from the last resourceVersion seen. `stop()` ends it from
any thread. Gone is raised when the version is too old: relist.

This module never imports the server side.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Literal, NamedTuple, overload

import grpc

from controlplane.api import jsoncodec
from controlplane.client import errors
from controlplane.client.config import ClientConfig
from controlplane.client.interface import (
    DeleteOptions,
    EventType,
    ListOptions,
    Object,
    ObjectList,
    WatchEvent,
)
from machinery import apierrors
from machinery.rpc_errors import rpc_status, rpc_trailers
from proto.controlplane.v1 import api_pb2, api_pb2_grpc

SERVER_NAME = "skiff-apiserver"
DEFAULT_TIMEOUT = 30.0
FIELD_MANAGER_KEY = "field-manager"  # the server's fieldmanager.GRPC_KEY
OMIT_MANAGED_FIELDS_KEY = "omit-managed-fields"  # the server's servicer.OMIT_MANAGED_FIELDS_KEY
MAX_MESSAGE = 1 << 30

_CODES: dict[int, str] = {c.value[0]: c.name for c in grpc.StatusCode}


class Binding(NamedTuple):
    """One pods/binding: put pod namespace/name on node (Kubernetes' Binding)."""

    namespace: str
    name: str
    node: str
    uid: str = ""
    annotations: dict[str, str] | None = None


def _item_error(result: Any) -> errors.ApiError | None:
    """The error of one item of a batched answer (BindResult, CreateResult), if any."""
    if not result.code:
        return None
    return apierrors.from_grpc(
        _CODES.get(result.code, "UNKNOWN"), result.message, result.reason,
        result.retry_after_seconds,
    )  # fmt: skip


def map_error(err: grpc.RpcError) -> errors.ApiError:
    code, details = rpc_status(err)
    trailers = rpc_trailers(err)
    try:
        retry_after = int(trailers.get(apierrors.RETRY_AFTER_KEY) or 0)
    except ValueError:
        retry_after = 0
    return apierrors.from_grpc(
        code.name, details, trailers.get(apierrors.REASON_KEY, ""), retry_after
    )


def _obj(pb: Any) -> Object:
    obj: Object = jsoncodec.loads(pb.json)
    obj.setdefault("metadata", {})["resourceVersion"] = str(pb.resource_version)
    return obj


def _selecting(kind: str, namespace: str | None, options: ListOptions) -> dict[str, Any]:
    """The fields a ListRequest and a WatchRequest share: what they select, from which version."""
    return {
        "kind": kind,
        "namespace": namespace or "",
        "label_selector": options.label_selector,
        "field_selector": options.field_selector,
        "resource_version": options.resource_version,
    }


def open_channel(config: ClientConfig) -> grpc.Channel:
    """A channel to config.grpc_target: TLS + token when the config has a CA, else plaintext."""
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_MESSAGE),
        ("grpc.max_send_message_length", MAX_MESSAGE),
        ("grpc.keepalive_time_ms", 30_000),
        ("grpc.keepalive_permit_without_calls", 1),
    ]
    if not config.ca_pem:
        return grpc.insecure_channel(config.grpc_target, options=options)
    # The token travels as per-call metadata (see GrpcApiClient), not as call
    # credentials: a Python auth plugin costs a thread hop per call.
    if config.cert_pem:
        creds = grpc.ssl_channel_credentials(config.ca_pem, config.key_pem, config.cert_pem)
    else:
        creds = grpc.ssl_channel_credentials(root_certificates=config.ca_pem)
    options.append(("grpc.ssl_target_name_override", SERVER_NAME))
    return grpc.secure_channel(config.grpc_target, creds, options=options)


class GrpcWatch:
    """An open watch over a server stream."""

    def __init__(self, call: Any, kind: str) -> None:
        self._call = call
        self._kind = kind
        self._stopped = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        try:
            for message in self._call:
                # The server may pack events that were waiting into one message.
                for pb in (message, *message.more) if message.more else (message,):
                    etype: EventType = pb.type
                    if etype == "BOOKMARK":
                        obj: Object = {
                            "kind": self._kind,
                            "metadata": {"resourceVersion": str(pb.object.resource_version)},
                        }
                    else:
                        obj = _obj(pb.object)
                    yield WatchEvent(etype, obj)
        except grpc.RpcError as err:
            if self._stopped.is_set() or rpc_status(err)[0] == grpc.StatusCode.CANCELLED:
                return
            raise map_error(err) from err

    def stop(self) -> None:
        self._stopped.set()
        self._call.cancel()


class GrpcApiClient:
    """ApiClient over gRPC. Thread-safe; share one per process."""

    def __init__(
        self,
        config: ClientConfig,
        timeout: float = DEFAULT_TIMEOUT,
        field_manager: str = "",
        lean_watches: bool = False,
    ) -> None:
        self.timeout = timeout
        self._field_manager = field_manager
        self._lean_watches = lean_watches
        self._connect(config)

    def _connect(self, config: ClientConfig) -> None:
        channel = open_channel(config)
        # Sent only over TLS or a unix socket (the control plane's own
        # components): a plaintext network channel carries no token. A
        # client certificate proves who we are instead of the token.
        private = bool(config.ca_pem) or config.grpc_target.startswith("unix:")
        send_token = config.token and private and not config.cert_pem
        token = (("authorization", f"Bearer {config.token}"),) if send_token else ()
        named = ((FIELD_MANAGER_KEY, self._field_manager),) if self._field_manager else ()
        metadata: tuple[tuple[str, str], ...] = (*token, *named)
        # Watches of a client whose caches never read managedFields get
        # objects without them: about half the bytes to send and decode.
        lean = ((OMIT_MANAGED_FIELDS_KEY, "true"),) if self._lean_watches else ()
        # The stubs first: a call between these lines may pair the new
        # channel with the old metadata (the certificate wins over a token),
        # never a channel without the certificate with metadata without the token.
        self.config = config
        self._channel = channel
        self._stub = api_pb2_grpc.ObjectsStub(channel)
        self._auth = api_pb2_grpc.AuthStub(channel)
        self._metadata = metadata
        self._watch_metadata = (*metadata, *lean)

    def reconnect(self, config: ClientConfig, linger: float = 60.0) -> None:
        """Use `config` (a rotated client certificate) for every call from
        now on; the old channel is closed after `linger` seconds, so calls
        and watches already on it end on their own (watchers re-watch)."""
        old = self._channel
        self._connect(config)
        timer = threading.Timer(linger, old.close)
        timer.daemon = True
        timer.start()

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> GrpcApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self._metadata)
        except grpc.RpcError as err:
            raise map_error(err) from err

    def create(self, kind: str, obj: Object, namespace: str | None = None) -> Object:
        req = api_pb2.CreateRequest(kind=kind, namespace=namespace or "",
                                    json=jsoncodec.dumps(obj))  # fmt: skip
        return _obj(self._call(self._stub.Create, req).object)

    def get(self, kind: str, name: str, namespace: str | None = None) -> Object:
        req = api_pb2.GetRequest(kind=kind, name=name, namespace=namespace or "")
        return _obj(self._call(self._stub.Get, req).object)

    def list(
        self, kind: str, namespace: str | None = None, options: ListOptions | None = None
    ) -> ObjectList:
        options = options or ListOptions()
        req = api_pb2.ListRequest(
            **_selecting(kind, namespace, options),
            limit=options.limit,
            continue_token=options.continue_token,
        )
        # A server stream of chunks: decoding one overlaps the sending of the next.
        call = self._stub.ListStream(req, timeout=max(self.timeout, 120.0), metadata=self._metadata)
        items: builtins.list[Object] = []
        resource_version = continue_token = ""
        try:
            with jsoncodec.paused_gc():
                for resp in call:
                    items += [_obj(item) for item in resp.items]
                    if resp.items_json:
                        decoded: builtins.list[Object] = jsoncodec.loads(resp.items_json)
                        if not resp.versions_inline:
                            for obj, rv in zip(decoded, resp.item_resource_versions, strict=True):
                                obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
                        items += decoded
                    resource_version = resp.resource_version or resource_version
                    continue_token = resp.continue_token or continue_token
        except grpc.RpcError as err:
            raise map_error(err) from err
        return ObjectList(
            items=items, resource_version=resource_version, continue_token=continue_token
        )

    def update(self, kind: str, obj: Object) -> Object:
        req = api_pb2.UpdateRequest(kind=kind, json=jsoncodec.dumps(obj))
        return _obj(self._call(self._stub.Update, req).object)

    def update_status(self, kind: str, obj: Object) -> Object:
        req = api_pb2.UpdateRequest(kind=kind, json=jsoncodec.dumps(obj), subresource="status")
        return _obj(self._call(self._stub.Update, req).object)

    def patch(
        self, kind: str, name: str, patch: Object, namespace: str | None = None,
        subresource: str = "",
    ) -> Object:  # fmt: skip
        req = api_pb2.PatchRequest(
            kind=kind, name=name, namespace=namespace or "", patch=jsoncodec.dumps(patch),
            subresource=subresource,
        )  # fmt: skip
        return _obj(self._call(self._stub.Patch, req).object)

    def delete(
        self, kind: str, name: str, namespace: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Object | None:  # fmt: skip
        options = options or DeleteOptions()
        req = api_pb2.DeleteRequest(
            kind=kind,
            name=name,
            namespace=namespace or "",
            grace_period_seconds=(
                -1 if options.grace_period_seconds is None else options.grace_period_seconds
            ),
            propagation_policy=options.propagation_policy or "",
            precondition_uid=options.precondition_uid or "",
            precondition_resource_version=options.precondition_resource_version or "",
        )
        resp = self._call(self._stub.Delete, req)
        return _obj(resp.object) if resp.HasField("object") else None

    def watch(
        self, kind: str, namespace: str | None = None, options: ListOptions | None = None,
        allow_bookmarks: bool = True,
    ) -> GrpcWatch:  # fmt: skip
        req = api_pb2.WatchRequest(
            **_selecting(kind, namespace, options or ListOptions()), allow_bookmarks=allow_bookmarks
        )
        call: Any = self._stub.Watch(req, metadata=self._watch_metadata)
        # Surface refusals (Gone, Invalid, Unauthenticated) here, not at the
        # first iteration: wait for the server's response headers.
        try:
            call.initial_metadata()
        except grpc.RpcError as err:
            raise map_error(err) from err
        if call.done() and call.code() != grpc.StatusCode.OK:
            raise map_error(call)
        return GrpcWatch(call, kind)

    def get_scale(self, kind: str, name: str, namespace: str) -> Object:
        req = api_pb2.GetRequest(kind=kind, name=name, namespace=namespace or "")
        return _obj(self._call(self._stub.GetScale, req).object)

    def update_scale(self, kind: str, name: str, namespace: str, replicas: int) -> Object:
        req = api_pb2.UpdateScaleRequest(
            kind=kind, name=name, namespace=namespace or "", replicas=replicas
        )
        return _obj(self._call(self._stub.UpdateScale, req).object)

    def bind(self, bindings: Sequence[Binding]) -> builtins.list[int | errors.ApiError]:
        """Bind many pods in one call; per binding, the pod's new resourceVersion
        or the error that refused it."""
        req = api_pb2.BindRequest(
            bindings=[
                api_pb2.Binding(
                    namespace=b.namespace, name=b.name, node_name=b.node, uid=b.uid,
                    annotations_json=jsoncodec.dumps(b.annotations) if b.annotations else b"",
                )
                for b in bindings
            ]
        )  # fmt: skip
        resp = self._call(self._stub.Bind, req)
        return [_item_error(r) or int(r.resource_version) for r in resp.results]

    @overload
    def create_many(
        self,
        items: Sequence[tuple[str, Object, str | None]],
        *,
        omit_objects: Literal[False] = False,
    ) -> builtins.list[Object | errors.ApiError]: ...

    @overload
    def create_many(
        self, items: Sequence[tuple[str, Object, str | None]], *, omit_objects: Literal[True]
    ) -> builtins.list[int | errors.ApiError]: ...

    def create_many(
        self, items: Sequence[tuple[str, Object, str | None]], *, omit_objects: bool = False
    ) -> builtins.list[Object | errors.ApiError] | builtins.list[int | errors.ApiError]:
        """Create many objects, each (kind, object, namespace), in one call; per
        item, the created object (with omit_objects: only its resourceVersion,
        the server sends no object back) or the error that refused it. Not a
        transaction (interface.BatchCreator)."""
        req = api_pb2.CreateManyRequest(
            items=[
                api_pb2.CreateRequest(kind=kind, namespace=ns or "", json=jsoncodec.dumps(obj))
                for kind, obj, ns in items
            ],
            omit_objects=omit_objects,
        )
        resp = self._call(self._stub.CreateMany, req)
        if omit_objects:
            return [_item_error(r) or int(r.resource_version) for r in resp.results]
        return [_item_error(r) or _obj(r.object) for r in resp.results]

    def whoami(self) -> dict[str, Any]:
        resp = self._call(self._auth.WhoAmI, api_pb2.WhoAmIRequest())
        return {"user": resp.user, "node": resp.node_name, "admin": resp.admin}


def connect(
    config: ClientConfig,
    timeout: float = DEFAULT_TIMEOUT,
    field_manager: str = "",
    lean_watches: bool = False,
) -> GrpcApiClient:
    """An ApiClient for the server in `config` (the channel connects lazily);
    `field_manager`: who its writes are recorded for (default: the server
    picks from the credential or the User-Agent); `lean_watches`: its
    watches deliver objects without metadata.managedFields."""
    return GrpcApiClient(config, timeout, field_manager, lean_watches)


def join(server: str, ca_pem: bytes, join_token: str, node_name: str) -> ClientConfig:
    """Exchange the cluster join token for a node credential (a ClientConfig)."""
    return join_node(server, ca_pem, join_token, node_name)[0]


def join_node(
    server: str, ca_pem: bytes, join_token: str, node_name: str, serving_csr_pem: bytes = b""
) -> tuple[ClientConfig, bytes]:
    """join, also asking for the agent's serving certificate (returned, or b"")."""
    channel = open_channel(ClientConfig(server=server, ca_pem=ca_pem))
    try:
        stub = api_pb2_grpc.AuthStub(channel)
        try:
            resp = stub.Join(
                api_pb2.JoinRequest(
                    join_token=join_token, node_name=node_name, serving_csr_pem=serving_csr_pem
                ),
                timeout=DEFAULT_TIMEOUT,
            )
        except grpc.RpcError as err:
            raise map_error(err) from err
    finally:
        channel.close()
    config = ClientConfig(server=server, ca_pem=resp.ca_pem or ca_pem, token=resp.token)
    return config, resp.serving_cert_pem
