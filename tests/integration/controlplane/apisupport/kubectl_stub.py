"""A minimal Kubernetes API stand-in for driving the real kubectl against the
pure API modules (patches, apply, OpenAPI, tables) without the REST server:
discovery from the kinds table, /openapi/v2|v3 from controlplane.api.openapi,
GET/PATCH of objects held in a dict, each patch type applied by its module.
Test-only: no auth, no watch, no validation beyond the modules'."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml

from controlplane.api import (
    json_patch,
    kinds,
    openapi,
    openapi_pb,
    server_side_apply,
    strategic_merge,
)
from controlplane.api.merge_patch import merge_patch
from controlplane.apiserver.tables import table
from controlplane.client.errors import ApiError, Conflict


@dataclass
class Stub:
    url: str
    objects: dict[str, dict[str, Any]]  # by request path of the object
    patches: list[tuple[str, Any]] = field(default_factory=list)  # (content type, body)
    # False: no /openapi/v3, and a v2 document that does not offer
    # fieldValidation, as an older server: kubectl then validates itself.
    modern: bool = True


def _without_field_validation(doc: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    for item in doc["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and "parameters" in op:
                op["parameters"] = [p for p in op["parameters"] if p["name"] != "fieldValidation"]
    return doc


def _resources(gv: str) -> dict[str, Any]:
    out = []
    for k in kinds.all_kinds():
        if gv in (k.api_version, *k.also_api_versions):
            out.append({"name": k.plural, "singularName": k.singular, "namespaced": k.namespaced,
                        "kind": k.kind, "shortNames": list(k.short_names),
                        "verbs": ["get", "list", "create", "update", "patch", "delete"]})  # fmt: skip
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out}


def _groups() -> dict[str, Any]:
    groups: dict[str, list[str]] = {}
    for k in kinds.all_kinds():
        for av in (k.api_version, *k.also_api_versions):
            group, _, version = av.rpartition("/")
            if group and version not in groups.setdefault(group, []):
                groups[group].append(version)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs],
         "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
        for g, vs in groups.items()]}  # fmt: skip


def _get(path: str, stub: Stub, accept: str) -> Any:
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"]}
    if path == "/apis":
        return _groups()
    if path == "/api/v1":
        return _resources("v1")
    if path.startswith("/apis/") and path.count("/") == 3:
        return _resources(path[len("/apis/") :])
    if path == "/openapi/v2":
        if not stub.modern:
            return openapi_pb.encode_v2(_without_field_validation(openapi.v2()))
        return openapi.v2_protobuf() if openapi.PROTOBUF_ACCEPT in accept else openapi.v2()
    if path.startswith("/openapi/v3") and not stub.modern:
        return None
    if path == "/openapi/v3":
        return openapi.v3_paths()
    if path.startswith("/openapi/v3/api/"):
        return openapi.v3("", path.rsplit("/", 1)[1])
    if path.startswith("/openapi/v3/apis/"):
        _, group, version = path[len("/openapi/v3/") :].split("/")
        return openapi.v3(group, version)
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0"}
    obj = stub.objects.get(path)
    if obj is None:
        return None
    if "as=Table" in accept:
        return table(
            kinds.for_object(obj["apiVersion"], obj["kind"]).key, [obj], include_object="Object"
        )
    return obj


class _Handler(BaseHTTPRequestHandler):
    stub: Stub

    def _send(self, code: int, body: Any) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        ctype = openapi.PROTOBUF_CONTENT_TYPE if isinstance(body, bytes) else "application/json"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "reason": reason, "message": message, "code": code})  # fmt: skip

    def do_GET(self) -> None:
        body = _get(urlparse(self.path).path, self.stub, self.headers.get("Accept", ""))
        if body is None:
            self._status(404, "NotFound", f"{self.path} not found")
        else:
            self._send(200, body)

    def do_PATCH(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        live = self.stub.objects.get(url.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        ctype = self.headers.get("Content-Type", "").split(";")[0]
        body = yaml.safe_load(raw) if ctype == "application/apply-patch+yaml" else json.loads(raw)
        self.stub.patches.append((ctype, body))
        if live is None and ctype != "application/apply-patch+yaml":
            self._status(404, "NotFound", f"{url.path} not found")
            return
        kind = kinds.for_object(body.get("apiVersion", "") if isinstance(body, dict) else "",
                                (live or body)["kind"]).key  # fmt: skip
        try:
            if ctype == "application/strategic-merge-patch+json":
                new = strategic_merge.apply(live or {}, body, kind)
            elif ctype == "application/merge-patch+json":
                new = merge_patch(live, body)
            elif ctype == "application/json-patch+json":
                new = json_patch.apply(live, body)
            else:
                manager = query.get("fieldManager", ["kubectl"])[0]
                force = query.get("force", ["false"])[0] == "true"
                new = server_side_apply.apply(live, body, manager, force, kind)
        except Conflict as err:
            self._status(409, "Conflict", str(err))
            return
        except ApiError as err:
            self._status(422, "Invalid", str(err))
            return
        self.stub.objects[url.path] = new
        self._send(200, new)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def running(objects: dict[str, dict[str, Any]], modern: bool = True) -> Iterator[Stub]:
    stub = Stub("", objects, modern=modern)
    handler = type("Handler", (_Handler,), {"stub": stub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
