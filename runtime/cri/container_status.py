"""ContainerStatus, and the conversion of a container record into CRI
messages shared with ListContainers."""

from __future__ import annotations

import json

from proto.runtime.v1 import api_pb2
from runtime.cri.service import RuntimeService
from runtime.cri.stored_config import cached_decoder
from runtime.store.records import Container, ContainerState

STATES = {
    ContainerState.CREATED: api_pb2.CONTAINER_CREATED,
    ContainerState.RUNNING: api_pb2.CONTAINER_RUNNING,
    ContainerState.EXITED: api_pb2.CONTAINER_EXITED,
    ContainerState.UNKNOWN: api_pb2.CONTAINER_UNKNOWN,
}


_decode_config = cached_decoder(api_pb2.ContainerConfig, maxsize=8192)


def config_of(c: Container) -> api_pb2.ContainerConfig:
    """The container's config (decoded once per record; callers must not change it)."""
    return _decode_config(c.config_b64)


def to_list_item(c: Container) -> api_pb2.Container:
    cfg = config_of(c)
    return api_pb2.Container(
        id=c.id,
        pod_sandbox_id=c.sandbox_id,
        metadata=cfg.metadata,
        image=api_pb2.ImageSpec(image=c.image),
        image_ref=c.image_ref,
        image_id=c.image_id,
        state=STATES[c.state],
        created_at=c.created_at,
        labels=cfg.labels,
        annotations=cfg.annotations,
    )


def resources_of(c: Container) -> api_pb2.ContainerResources:
    r = c.resources
    return api_pb2.ContainerResources(
        linux=api_pb2.LinuxContainerResources(
            cpu_period=r.get("cpu_period", 0),
            cpu_quota=r.get("cpu_quota", 0),
            cpu_shares=r.get("cpu_shares", 0),
            memory_limit_in_bytes=r.get("memory_limit", 0),
            oom_score_adj=r.get("oom_score_adj", 0),
            cpuset_cpus=r.get("cpuset_cpus", ""),
            cpuset_mems=r.get("cpuset_mems", ""),
        )
    )


def run(
    svc: RuntimeService, req: api_pb2.ContainerStatusRequest
) -> api_pb2.ContainerStatusResponse:
    c = svc.refresh(svc.containers.get(req.container_id))
    cfg = config_of(c)
    status = api_pb2.ContainerStatus(
        id=c.id,
        metadata=cfg.metadata,
        state=STATES[c.state],
        created_at=c.created_at,
        started_at=c.started_at,
        finished_at=c.finished_at if c.state == ContainerState.EXITED else 0,
        exit_code=c.exit_code if c.state == ContainerState.EXITED else 0,
        image=api_pb2.ImageSpec(image=c.image),
        image_ref=c.image_ref,
        image_id=c.image_id,
        reason=c.reason if c.state == ContainerState.EXITED else "",
        message=c.message if c.state == ContainerState.EXITED else "",
        labels=cfg.labels,
        annotations=cfg.annotations,
        mounts=cfg.mounts,
        log_path=c.log_path,
        resources=resources_of(c),
    )
    if c.user:
        status.user.linux.uid = int(c.user.get("uid", 0))
        status.user.linux.gid = int(c.user.get("gid", 0))
        status.user.linux.supplemental_groups.extend(int(g) for g in c.user.get("groups", []))
    info: dict[str, str] = {}
    if req.verbose:
        spec_text = "{}"
        try:
            spec_text = (svc.container_root(c.id) / "spec.json").read_text()
        except OSError:
            pass
        info["info"] = json.dumps(
            {
                "pid": c.init_pid if c.state == ContainerState.RUNNING else 0,
                "monitorPid": c.monitor_pid,
                "sandboxID": c.sandbox_id,
                "cgroup": c.cgroup,
                "runtimeSpec": json.loads(spec_text),
            }
        )
    return api_pb2.ContainerStatusResponse(status=status, info=info)
