"""The agent's gRPC endpoint (default :10250): container logs and stats.

Only the API server calls it (pods/log, node stats), through the TLS
front of agent/stream_proxy.py, which has checked the API server's client
certificate before relaying the connection to this server's unix socket.
Logs come from the CRI log files under the pod log directory; stats from
CRI ListContainerStats grouped per pod, plus node readings. It never
changes anything on the node.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import psutil

from agent.cri_client import CRIClient, CRIError
from agent.logs import pick_file, read_log
from agent.pod_config import (
    CONTAINER_NAME_LABEL,
    POD_NAME_LABEL,
    POD_NAMESPACE_LABEL,
    POD_UID_LABEL,
)
from machinery import rfc3339
from proto.agent.v1 import agent_pb2 as pb
from proto.agent.v1 import agent_pb2_grpc as pb_grpc
from proto.runtime.v1 import api_pb2 as cri

log = logging.getLogger("skiff.agent.server")


def _u64(v: Any) -> int:
    return int(v.value) if v is not None else 0


@dataclass(eq=False)
class AgentServicer(pb_grpc.AgentServicer):
    node_name: str
    pods: Callable[[str, str], Mapping[str, Any] | None]
    runtime: CRIClient
    log_root: Path

    def ContainerLogs(
        self, request: pb.LogsRequest, context: grpc.ServicerContext
    ) -> Iterator[pb.LogChunk]:
        pod = self.pods(request.namespace or "default", request.pod)
        if pod is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND, f'pod "{request.pod}" not found on node {self.node_name}'
            )
        names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
        names += [c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []]
        names += [c["name"] for c in (pod.get("spec") or {}).get("ephemeralContainers") or []]
        container = request.container
        if not container:
            if len(names) != 1:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"a container name must be specified for pod {request.pod}, choose one of: {names}",
                )
            container = names[0]
        if container not in names:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"container {container} is not valid for pod {request.pod}: choose one of {names}",
            )
        md = pod["metadata"]
        cdir = (
            self.log_root / f"{md.get('namespace', 'default')}_{md['name']}_{md['uid']}" / container
        )
        path = pick_file(cdir, request.previous)
        if path is None:
            what = "previous terminated container" if request.previous else "container"
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f'{what} "{container}" in pod "{request.pod}" has no logs yet',
            )
        since = 0
        if request.since_seconds:
            since = time.time_ns() - request.since_seconds * 1_000_000_000
        stop = threading.Event()
        context.add_callback(stop.set)

        def running() -> bool:
            if stop.is_set() or not context.is_active():
                return False
            try:
                found = self.runtime.list_containers(
                    {POD_UID_LABEL: md["uid"], CONTAINER_NAME_LABEL: container}
                )
            except CRIError:
                return False
            return any(c.state == cri.CONTAINER_RUNNING for c in found)

        sent = 0
        tail = (
            request.tail_lines if request.tail_lines > 0 else (-1 if request.tail_lines == 0 else 0)
        )
        for line in read_log(
            path,
            tail=tail,
            since_ns=since,
            follow=request.follow and not request.previous,
            keep_following=running,
            wait=stop.wait,
        ):
            data = line.data
            if request.timestamps:
                data = f"{rfc3339.format_nano(line.timestamp_ns)} ".encode() + data
            if request.limit_bytes and sent + len(data) > request.limit_bytes:
                data = data[: request.limit_bytes - sent]
            sent += len(data)
            yield pb.LogChunk(data=data, stream=line.stream, timestamp_nanos=line.timestamp_ns)
            if request.limit_bytes and sent >= request.limit_bytes:
                return

    def Stats(self, request: pb.StatsRequest, context: grpc.ServicerContext) -> pb.StatsResponse:
        try:
            return self.collect_stats(request)
        except CRIError as err:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"runtime stats: {err.message}")

    def collect_stats(self, request: pb.StatsRequest) -> pb.StatsResponse:
        """The node's and its pods' usage (CRIError when the runtime cannot say)."""
        stats = self.runtime.list_container_stats()
        pods: dict[str, pb.PodStats] = {}
        for s in stats:
            labels = s.attributes.labels
            ns, name = labels.get(POD_NAMESPACE_LABEL, ""), labels.get(POD_NAME_LABEL, "")
            if (
                not name
                or (request.pod and name != request.pod)
                or (request.namespace and ns != request.namespace)
            ):
                continue
            usage = pb.Usage(
                timestamp_nanos=s.cpu.timestamp,
                cpu_usage_core_nano_seconds=_u64(s.cpu.usage_core_nano_seconds),
                cpu_usage_nano_cores=_u64(s.cpu.usage_nano_cores),
                memory_working_set_bytes=_u64(s.memory.working_set_bytes),
                memory_usage_bytes=_u64(s.memory.usage_bytes),
                memory_rss_bytes=_u64(s.memory.rss_bytes),
            )
            ps = pods.setdefault(
                labels.get(POD_UID_LABEL, name),
                pb.PodStats(namespace=ns, pod=name, uid=labels.get(POD_UID_LABEL, "")),
            )
            ps.containers.append(
                pb.ContainerStats(
                    name=s.attributes.metadata.name,
                    container_id=s.attributes.id,
                    usage=usage,
                    writable_layer_bytes=_u64(s.writable_layer.used_bytes),
                )
            )
            total = ps.usage
            total.timestamp_nanos = max(total.timestamp_nanos, usage.timestamp_nanos)
            total.cpu_usage_core_nano_seconds += usage.cpu_usage_core_nano_seconds
            total.cpu_usage_nano_cores += usage.cpu_usage_nano_cores
            total.memory_working_set_bytes += usage.memory_working_set_bytes
            total.memory_usage_bytes += usage.memory_usage_bytes
            total.memory_rss_bytes += usage.memory_rss_bytes
        vm = psutil.virtual_memory()
        cpu = psutil.cpu_times()
        busy_ns = int((cpu.user + cpu.system + cpu.nice + cpu.irq + cpu.softirq + cpu.steal) * 1e9)
        node = pb.NodeStats(
            node_name=self.node_name,
            usage=pb.Usage(
                timestamp_nanos=time.time_ns(),
                cpu_usage_core_nano_seconds=busy_ns,
                memory_working_set_bytes=vm.total - vm.available,
                memory_usage_bytes=vm.used,
            ),
            memory_available_bytes=vm.available,
        )
        return pb.StatsResponse(node=node, pods=list(pods.values()))


def serve(servicer: AgentServicer, listen: str) -> tuple[grpc.Server, int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="agent-rpc"))
    pb_grpc.add_AgentServicer_to_server(servicer, server)
    port = server.add_insecure_port(listen)  # a unix socket behind the TLS front
    server.start()
    log.info("agent endpoint on %s (port %d)", listen, port)
    return server, port


__all__ = ["AgentServicer", "serve"]
