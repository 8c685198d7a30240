"""PodSandboxStats and ListPodSandboxStats: the sandbox's own cgroup plus
its containers' stats."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri import container_stats, list_filter, sandbox_status
from runtime.cri.service import RuntimeService
from runtime.store.records import Sandbox


def stats_of(svc: RuntimeService, s: Sandbox) -> api_pb2.PodSandboxStats:
    cfg = sandbox_status.config_of(s)
    cs = [container_stats.stats_of(svc, c) for c in svc.containers.list() if c.sandbox_id == s.id]
    own = svc.cgroup(s.cgroup).stats()
    cpu = own.cpu_usage_ns + sum(x.cpu.usage_core_nano_seconds.value for x in cs)
    ws = own.memory_working_set + sum(x.memory.working_set_bytes.value for x in cs)
    usage = own.memory_usage + sum(x.memory.usage_bytes.value for x in cs)
    rss = own.memory_rss + sum(x.memory.rss_bytes.value for x in cs)
    nano = sum(x.cpu.usage_nano_cores.value for x in cs)
    ts = own.timestamp_ns
    return api_pb2.PodSandboxStats(
        attributes=api_pb2.PodSandboxAttributes(
            id=s.id, metadata=cfg.metadata, labels=cfg.labels, annotations=cfg.annotations
        ),
        linux=api_pb2.LinuxPodSandboxStats(
            cpu=api_pb2.CpuUsage(
                timestamp=ts,
                usage_core_nano_seconds=api_pb2.UInt64Value(value=cpu),
                usage_nano_cores=api_pb2.UInt64Value(value=nano),
            ),
            memory=api_pb2.MemoryUsage(
                timestamp=ts,
                working_set_bytes=api_pb2.UInt64Value(value=ws),
                usage_bytes=api_pb2.UInt64Value(value=usage),
                rss_bytes=api_pb2.UInt64Value(value=rss),
            ),
            containers=cs,
        ),
    )


def run(
    svc: RuntimeService, req: api_pb2.PodSandboxStatsRequest
) -> api_pb2.PodSandboxStatsResponse:
    return api_pb2.PodSandboxStatsResponse(
        stats=stats_of(svc, svc.sandboxes.get(req.pod_sandbox_id))
    )


def run_list(
    svc: RuntimeService, req: api_pb2.ListPodSandboxStatsRequest
) -> api_pb2.ListPodSandboxStatsResponse:
    stats = [stats_of(svc, s) for s in list_filter.sandboxes(svc, req.filter)]
    return api_pb2.ListPodSandboxStatsResponse(stats=stats)
