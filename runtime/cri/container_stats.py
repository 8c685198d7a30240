"""ContainerStats and ListContainerStats from the container's cgroup (CPU
core-nanoseconds and nano-cores from two samples, memory working set, RSS,
usage) and the writable layer's disk usage."""

from __future__ import annotations

import os

from proto.runtime.v1 import api_pb2
from runtime.cri import container_status, list_filter
from runtime.cri.service import RuntimeService
from runtime.store.records import Container


def layer_usage(path: str) -> tuple[int, int]:
    used = inodes = 0
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            inodes += 1
            try:
                used += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return used, inodes


def stats_of(svc: RuntimeService, c: Container) -> api_pb2.ContainerStats:
    st = svc.cgroup(c.cgroup).stats()
    prev = svc.cpu_samples.get(c.id)
    nano_cores = 0
    if prev is not None and st.timestamp_ns > prev[0]:
        nano_cores = max(
            0, (st.cpu_usage_ns - prev[1]) * 1_000_000_000 // (st.timestamp_ns - prev[0])
        )
    svc.cpu_samples[c.id] = (st.timestamp_ns, st.cpu_usage_ns)
    used, inodes = layer_usage(str(svc.container_root(c.id) / "upper"))
    cfg = container_status.config_of(c)
    ts = st.timestamp_ns
    return api_pb2.ContainerStats(
        attributes=api_pb2.ContainerAttributes(
            id=c.id, metadata=cfg.metadata, labels=cfg.labels, annotations=cfg.annotations
        ),
        cpu=api_pb2.CpuUsage(
            timestamp=ts,
            usage_core_nano_seconds=api_pb2.UInt64Value(value=st.cpu_usage_ns),
            usage_nano_cores=api_pb2.UInt64Value(value=nano_cores),
        ),
        memory=api_pb2.MemoryUsage(
            timestamp=ts,
            working_set_bytes=api_pb2.UInt64Value(value=st.memory_working_set),
            usage_bytes=api_pb2.UInt64Value(value=st.memory_usage),
            rss_bytes=api_pb2.UInt64Value(value=st.memory_rss),
            page_faults=api_pb2.UInt64Value(value=st.page_faults),
            major_page_faults=api_pb2.UInt64Value(value=st.major_page_faults),
        ),
        writable_layer=api_pb2.FilesystemUsage(
            timestamp=ts,
            fs_id=api_pb2.FilesystemIdentifier(mountpoint=str(svc.cfg.root)),
            used_bytes=api_pb2.UInt64Value(value=used),
            inodes_used=api_pb2.UInt64Value(value=inodes),
        ),
    )


def run(svc: RuntimeService, req: api_pb2.ContainerStatsRequest) -> api_pb2.ContainerStatsResponse:
    return api_pb2.ContainerStatsResponse(stats=stats_of(svc, svc.containers.get(req.container_id)))


def run_list(
    svc: RuntimeService, req: api_pb2.ListContainerStatsRequest
) -> api_pb2.ListContainerStatsResponse:
    stats = [stats_of(svc, c) for c in list_filter.containers(svc, req.filter)]
    return api_pb2.ListContainerStatsResponse(stats=stats)
