"""GET metrics.k8s.io/v1beta1 nodes[/NAME] and [namespaces/NS/]pods[/NAME].

The built-in metrics API (apiserver/metricsapi/): NodeMetrics of every Node
and PodMetrics of every Pod the collector has two samples of, filtered by
`labelSelector` on the Node's or the Pod's labels (which the metrics
objects carry, as metrics-server's do); get and list only, authorized as
`get`/`list` of nodes or pods in metrics.k8s.io (metrics-server's
system:aggregated-metrics-reader role). Objects with no metrics yet are
left out of lists and a get of one is a NotFound, as metrics-server answers.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controlplane.api.selectors import SelectorError, parse_label_selector
from controlplane.apiserver.codec import decode
from controlplane.apiserver.metricsapi import objects
from controlplane.apiserver.rest import lists
from controlplane.apiserver.rest.context import Call
from controlplane.apiserver.rest.respond import document_response, json_response
from controlplane.apiserver.rest.status import BadRequest
from controlplane.client.errors import NotFound


def _items(call: Call) -> list[dict[str, Any]]:
    t = call.target
    call.registry.authorizer.authorize(call.who, "get" if t.name else "list", t.info,
                                       t.namespace, t.name)  # fmt: skip
    try:
        selector = parse_label_selector(call.query("labelSelector"))
    except SelectorError as err:
        raise BadRequest(f"labelSelector: {err}") from err
    collector = call.server.metrics_api
    if collector is not None:
        collector.demand()  # scraping while the API is read
    found: list[dict[str, Any]] = []
    if t.info.kind == "NodeMetrics":
        pairs = collector.node_pairs() if collector is not None else {}
        for data, rev in call.registry.list("Node").items:
            node = decode(data, rev)
            meta = node.get("metadata") or {}
            name, labels = str(meta.get("name") or ""), meta.get("labels") or {}
            pair = pairs.get(name)
            if pair is None or (t.name and name != t.name) or not selector.matches(labels):
                continue
            obj = objects.node_metrics(name, pair, labels)
            if obj is not None:
                found.append(obj)
    else:
        pod_pairs = collector.pod_pairs(t.namespace or None) if collector is not None else {}
        for data, rev in call.registry.list("Pod", t.namespace or None).items:
            pod = decode(data, rev)
            meta = pod.get("metadata") or {}
            ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            labels = meta.get("labels") or {}
            pod_pair = pod_pairs.get((ns, name))
            if pod_pair is None or (t.name and name != t.name) or not selector.matches(labels):
                continue
            obj = objects.pod_metrics(ns, name, pod_pair, labels)
            if obj is not None:
                found.append(obj)
    if t.name and not found:
        raise NotFound(f'{t.info.resource} "{t.name}" not found')
    return found


async def serve(call: Call) -> web.StreamResponse:
    items = await call.server.run(_items, call)
    t = call.target
    if lists.wants_table(call.request):
        return json_response(lists.table_of(call, items, lists.include_object(call), {}))
    if t.name:
        return document_response(call, items[0])
    return document_response(call, {"kind": f"{t.info.kind}List", "apiVersion": t.info.api_version,
                                    "metadata": {}, "items": items})  # fmt: skip
