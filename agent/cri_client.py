"""A typed CRI client with deadlines: the agent's only way to reach a runtime.

It speaks runtime.v1 over a unix socket to any CRI runtime (skiff's own or
containerd). Every call has a deadline; gRPC failures become `CRIError` with
the status code kept, so callers can tell NOT_FOUND from a broken runtime.
It holds no state besides the channel and never interprets pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import grpc

from machinery.rpc_errors import rpc_status
from proto.runtime.v1 import api_pb2 as cri
from proto.runtime.v1 import api_pb2_grpc as cri_grpc

DEFAULT_TIMEOUT = 30.0
# Pulls and sandbox creation can take a while (image download, CNI).
LONG_TIMEOUT = 300.0

R = TypeVar("R")


class CRIError(Exception):
    def __init__(self, method: str, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{method}: {code.name}: {message}")
        self.method = method
        self.code = code
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.code == grpc.StatusCode.NOT_FOUND


def channel_target(endpoint: str) -> str:
    """`unix:///run/skiff/cri.sock` or a bare path -> a gRPC target."""
    if endpoint.startswith("unix://"):
        return endpoint
    if endpoint.startswith("/"):
        return "unix://" + endpoint
    raise ValueError(f"runtime endpoint {endpoint!r}: expected unix:///path/to/socket")


class CRIClient:
    def __init__(self, endpoint: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.endpoint = endpoint
        self._timeout = timeout
        self._channel = grpc.insecure_channel(
            channel_target(endpoint),
            options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)],
        )
        self.runtime = cri_grpc.RuntimeServiceStub(self._channel)
        self.images = cri_grpc.ImageServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def _call(
        self, method: str, fn: Callable[..., R], request: Any, timeout: float | None = None
    ) -> R:
        try:
            return fn(request, timeout=timeout or self._timeout)
        except grpc.RpcError as err:
            code, details = rpc_status(err)
            raise CRIError(method, code, details) from None

    # Runtime info
    def version(self) -> cri.VersionResponse:
        return self._call("Version", self.runtime.Version, cri.VersionRequest(version="v1"))

    def status(self, verbose: bool = False, timeout: float | None = None) -> cri.StatusResponse:
        req = cri.StatusRequest(verbose=verbose)
        return self._call("Status", self.runtime.Status, req, timeout)

    def update_runtime_config(self, pod_cidr: str) -> None:
        req = cri.UpdateRuntimeConfigRequest(
            runtime_config=cri.RuntimeConfig(network_config=cri.NetworkConfig(pod_cidr=pod_cidr))
        )
        self._call("UpdateRuntimeConfig", self.runtime.UpdateRuntimeConfig, req)

    # Sandboxes
    def run_pod_sandbox(self, config: cri.PodSandboxConfig, runtime_handler: str = "") -> str:
        req = cri.RunPodSandboxRequest(config=config, runtime_handler=runtime_handler)
        return self._call(
            "RunPodSandbox", self.runtime.RunPodSandbox, req, LONG_TIMEOUT
        ).pod_sandbox_id

    def stop_pod_sandbox(self, sandbox_id: str) -> None:
        req = cri.StopPodSandboxRequest(pod_sandbox_id=sandbox_id)
        self._call("StopPodSandbox", self.runtime.StopPodSandbox, req, LONG_TIMEOUT)

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        req = cri.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id)
        self._call("RemovePodSandbox", self.runtime.RemovePodSandbox, req, LONG_TIMEOUT)

    def pod_sandbox_status(
        self, sandbox_id: str, verbose: bool = False
    ) -> cri.PodSandboxStatusResponse:
        req = cri.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id, verbose=verbose)
        return self._call("PodSandboxStatus", self.runtime.PodSandboxStatus, req)

    def list_pod_sandboxes(
        self, labels: dict[str, str] | None = None, state: int | None = None
    ) -> list[cri.PodSandbox]:
        flt = cri.PodSandboxFilter(label_selector=labels or {})
        if state is not None:
            flt.state.state = state  # type: ignore[assignment]
        req = cri.ListPodSandboxRequest(filter=flt)
        return list(self._call("ListPodSandbox", self.runtime.ListPodSandbox, req).items)

    # Containers
    def create_container(
        self, sandbox_id: str, config: cri.ContainerConfig, sandbox_config: cri.PodSandboxConfig
    ) -> str:
        req = cri.CreateContainerRequest(
            pod_sandbox_id=sandbox_id, config=config, sandbox_config=sandbox_config
        )
        return self._call(
            "CreateContainer", self.runtime.CreateContainer, req, LONG_TIMEOUT
        ).container_id

    def start_container(self, container_id: str) -> None:
        req = cri.StartContainerRequest(container_id=container_id)
        self._call("StartContainer", self.runtime.StartContainer, req, LONG_TIMEOUT)

    def stop_container(self, container_id: str, timeout_s: int) -> None:
        req = cri.StopContainerRequest(container_id=container_id, timeout=timeout_s)
        self._call("StopContainer", self.runtime.StopContainer, req, timeout_s + DEFAULT_TIMEOUT)

    def remove_container(self, container_id: str) -> None:
        req = cri.RemoveContainerRequest(container_id=container_id)
        self._call("RemoveContainer", self.runtime.RemoveContainer, req)

    def list_containers(
        self, labels: dict[str, str] | None = None, sandbox_id: str = ""
    ) -> list[cri.Container]:
        flt = cri.ContainerFilter(label_selector=labels or {}, pod_sandbox_id=sandbox_id)
        req = cri.ListContainersRequest(filter=flt)
        return list(self._call("ListContainers", self.runtime.ListContainers, req).containers)

    def container_status(self, container_id: str, verbose: bool = False) -> cri.ContainerStatus:
        req = cri.ContainerStatusRequest(container_id=container_id, verbose=verbose)
        return self._call("ContainerStatus", self.runtime.ContainerStatus, req).status

    def exec_sync(
        self, container_id: str, cmd: Iterable[str], timeout_s: int
    ) -> cri.ExecSyncResponse:
        req = cri.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=timeout_s)
        return self._call("ExecSync", self.runtime.ExecSync, req, timeout_s + DEFAULT_TIMEOUT)

    def update_container_resources(
        self, container_id: str, resources: cri.LinuxContainerResources
    ) -> None:
        req = cri.UpdateContainerResourcesRequest(container_id=container_id, linux=resources)
        self._call("UpdateContainerResources", self.runtime.UpdateContainerResources, req)

    def list_container_stats(self) -> list[cri.ContainerStats]:
        req = cri.ListContainerStatsRequest(filter=cri.ContainerStatsFilter())
        return list(self._call("ListContainerStats", self.runtime.ListContainerStats, req).stats)

    def list_pod_sandbox_stats(self) -> list[cri.PodSandboxStats]:
        req = cri.ListPodSandboxStatsRequest(filter=cri.PodSandboxStatsFilter())
        return list(self._call("ListPodSandboxStats", self.runtime.ListPodSandboxStats, req).stats)

    # Images
    def pull_image(
        self,
        image: str,
        auth: cri.AuthConfig | None = None,
        sandbox_config: cri.PodSandboxConfig | None = None,
    ) -> str:
        req = cri.PullImageRequest(
            image=cri.ImageSpec(image=image), auth=auth, sandbox_config=sandbox_config
        )
        return self._call("PullImage", self.images.PullImage, req, LONG_TIMEOUT).image_ref

    def image_status(self, image: str) -> cri.Image | None:
        req = cri.ImageStatusRequest(image=cri.ImageSpec(image=image))
        resp = self._call("ImageStatus", self.images.ImageStatus, req)
        return resp.image if resp.HasField("image") else None

    def list_images(self, timeout: float | None = None) -> list[cri.Image]:
        req = cri.ListImagesRequest()
        return list(self._call("ListImages", self.images.ListImages, req, timeout).images)

    def remove_image(self, image: str) -> None:
        req = cri.RemoveImageRequest(image=cri.ImageSpec(image=image))
        self._call("RemoveImage", self.images.RemoveImage, req)

    def image_fs_info(self) -> list[cri.FilesystemUsage]:
        """The filesystems holding images (mount point, bytes and inodes used)."""
        resp = self._call("ImageFsInfo", self.images.ImageFsInfo, cri.ImageFsInfoRequest())
        return list(resp.image_filesystems)
