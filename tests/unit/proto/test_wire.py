"""The CRI wire contract: what crictl and the kubelet put on the wire.

The tables below are written from the published Kubernetes cri-api
`runtime.v1` schema, not read from our own .proto, so that an edit of
proto/runtime/v1/api.proto that would break real CRI clients (a renamed RPC,
a renumbered or retyped field, a moved enum value) fails here. They cover every
RPC of both services and the messages and enums crictl uses most.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from proto.runtime.v1 import api_pb2, api_pb2_grpc

# (method, request type, response type, server-streaming), in schema order.
RUNTIME_SERVICE_METHODS = [
    ("Version", "VersionRequest", "VersionResponse", False),
    ("RunPodSandbox", "RunPodSandboxRequest", "RunPodSandboxResponse", False),
    ("StopPodSandbox", "StopPodSandboxRequest", "StopPodSandboxResponse", False),
    ("RemovePodSandbox", "RemovePodSandboxRequest", "RemovePodSandboxResponse", False),
    ("PodSandboxStatus", "PodSandboxStatusRequest", "PodSandboxStatusResponse", False),
    ("ListPodSandbox", "ListPodSandboxRequest", "ListPodSandboxResponse", False),
    ("StreamPodSandboxes", "StreamPodSandboxesRequest", "StreamPodSandboxesResponse", True),
    ("CreateContainer", "CreateContainerRequest", "CreateContainerResponse", False),
    ("StartContainer", "StartContainerRequest", "StartContainerResponse", False),
    ("StopContainer", "StopContainerRequest", "StopContainerResponse", False),
    ("RemoveContainer", "RemoveContainerRequest", "RemoveContainerResponse", False),
    ("ListContainers", "ListContainersRequest", "ListContainersResponse", False),
    ("StreamContainers", "StreamContainersRequest", "StreamContainersResponse", True),
    ("ContainerStatus", "ContainerStatusRequest", "ContainerStatusResponse", False),
    (
        "UpdateContainerResources",
        "UpdateContainerResourcesRequest",
        "UpdateContainerResourcesResponse",
        False,
    ),
    ("ReopenContainerLog", "ReopenContainerLogRequest", "ReopenContainerLogResponse", False),
    ("ExecSync", "ExecSyncRequest", "ExecSyncResponse", False),
    ("Exec", "ExecRequest", "ExecResponse", False),
    ("Attach", "AttachRequest", "AttachResponse", False),
    ("PortForward", "PortForwardRequest", "PortForwardResponse", False),
    ("ContainerStats", "ContainerStatsRequest", "ContainerStatsResponse", False),
    ("ListContainerStats", "ListContainerStatsRequest", "ListContainerStatsResponse", False),
    ("StreamContainerStats", "StreamContainerStatsRequest", "StreamContainerStatsResponse", True),
    ("PodSandboxStats", "PodSandboxStatsRequest", "PodSandboxStatsResponse", False),
    ("ListPodSandboxStats", "ListPodSandboxStatsRequest", "ListPodSandboxStatsResponse", False),
    (
        "StreamPodSandboxStats",
        "StreamPodSandboxStatsRequest",
        "StreamPodSandboxStatsResponse",
        True,
    ),
    ("UpdateRuntimeConfig", "UpdateRuntimeConfigRequest", "UpdateRuntimeConfigResponse", False),
    ("Status", "StatusRequest", "StatusResponse", False),
    ("CheckpointContainer", "CheckpointContainerRequest", "CheckpointContainerResponse", False),
    ("CheckpointPod", "CheckpointPodRequest", "CheckpointPodResponse", False),
    ("RestorePod", "RestorePodRequest", "RestorePodResponse", False),
    ("GetContainerEvents", "GetEventsRequest", "ContainerEventResponse", True),
    (
        "ListMetricDescriptors",
        "ListMetricDescriptorsRequest",
        "ListMetricDescriptorsResponse",
        False,
    ),
    (
        "ListPodSandboxMetrics",
        "ListPodSandboxMetricsRequest",
        "ListPodSandboxMetricsResponse",
        False,
    ),
    (
        "StreamPodSandboxMetrics",
        "StreamPodSandboxMetricsRequest",
        "StreamPodSandboxMetricsResponse",
        True,
    ),
    ("RuntimeConfig", "RuntimeConfigRequest", "RuntimeConfigResponse", False),
    (
        "UpdatePodSandboxResources",
        "UpdatePodSandboxResourcesRequest",
        "UpdatePodSandboxResourcesResponse",
        False,
    ),
]

IMAGE_SERVICE_METHODS = [
    ("ListImages", "ListImagesRequest", "ListImagesResponse", False),
    ("StreamImages", "StreamImagesRequest", "StreamImagesResponse", True),
    ("ImageStatus", "ImageStatusRequest", "ImageStatusResponse", False),
    ("PullImage", "PullImageRequest", "PullImageResponse", False),
    ("RemoveImage", "RemoveImageRequest", "RemoveImageResponse", False),
    ("ImageFsInfo", "ImageFsInfoRequest", "ImageFsInfoResponse", False),
]

# message -> field name -> (number, type as written in the .proto).
MESSAGE_FIELDS: dict[str, dict[str, tuple[int, str]]] = {
    "PodSandboxConfig": {
        "metadata": (1, "PodSandboxMetadata"),
        "hostname": (2, "string"),
        "log_directory": (3, "string"),
        "dns_config": (4, "DNSConfig"),
        "port_mappings": (5, "repeated PortMapping"),
        "labels": (6, "map<string, string>"),
        "annotations": (7, "map<string, string>"),
        "linux": (8, "LinuxPodSandboxConfig"),
        "windows": (9, "WindowsPodSandboxConfig"),
    },
    "PodSandboxMetadata": {
        "name": (1, "string"),
        "uid": (2, "string"),
        "namespace": (3, "string"),
        "attempt": (4, "uint32"),
    },
    "ContainerConfig": {
        "metadata": (1, "ContainerMetadata"),
        "image": (2, "ImageSpec"),
        "command": (3, "repeated string"),
        "args": (4, "repeated string"),
        "working_dir": (5, "string"),
        "envs": (6, "repeated KeyValue"),
        "mounts": (7, "repeated Mount"),
        "devices": (8, "repeated Device"),
        "labels": (9, "map<string, string>"),
        "annotations": (10, "map<string, string>"),
        "log_path": (11, "string"),
        "stdin": (12, "bool"),
        "stdin_once": (13, "bool"),
        "tty": (14, "bool"),
        "linux": (15, "LinuxContainerConfig"),
        "windows": (16, "WindowsContainerConfig"),
        "CDI_devices": (17, "repeated CDIDevice"),
        "stop_signal": (18, "Signal"),
    },
    "ContainerMetadata": {
        "name": (1, "string"),
        "attempt": (2, "uint32"),
    },
    "LinuxContainerResources": {
        "cpu_period": (1, "int64"),
        "cpu_quota": (2, "int64"),
        "cpu_shares": (3, "int64"),
        "memory_limit_in_bytes": (4, "int64"),
        "oom_score_adj": (5, "int64"),
        "cpuset_cpus": (6, "string"),
        "cpuset_mems": (7, "string"),
        "hugepage_limits": (8, "repeated HugepageLimit"),
        "unified": (9, "map<string, string>"),
        "memory_swap_limit_in_bytes": (10, "int64"),
    },
    "LinuxContainerConfig": {
        "resources": (1, "LinuxContainerResources"),
        "security_context": (2, "LinuxContainerSecurityContext"),
    },
    "LinuxContainerSecurityContext": {
        "capabilities": (1, "Capability"),
        "privileged": (2, "bool"),
        "namespace_options": (3, "NamespaceOption"),
        "selinux_options": (4, "SELinuxOption"),
        "run_as_user": (5, "Int64Value"),
        "run_as_group": (12, "Int64Value"),
        "run_as_username": (6, "string"),
        "readonly_rootfs": (7, "bool"),
        "supplemental_groups": (8, "repeated int64"),
        "supplemental_groups_policy": (17, "SupplementalGroupsPolicy"),
        "no_new_privs": (11, "bool"),
        "masked_paths": (13, "repeated string"),
        "readonly_paths": (14, "repeated string"),
        "seccomp": (15, "SecurityProfile"),
        "apparmor": (16, "SecurityProfile"),
        "apparmor_profile": (9, "string"),
        "seccomp_profile_path": (10, "string"),
    },
    "ContainerStatus": {
        "id": (1, "string"),
        "metadata": (2, "ContainerMetadata"),
        "state": (3, "ContainerState"),
        "created_at": (4, "int64"),
        "started_at": (5, "int64"),
        "finished_at": (6, "int64"),
        "exit_code": (7, "int32"),
        "image": (8, "ImageSpec"),
        "image_ref": (9, "string"),
        "reason": (10, "string"),
        "message": (11, "string"),
        "labels": (12, "map<string, string>"),
        "annotations": (13, "map<string, string>"),
        "mounts": (14, "repeated Mount"),
        "log_path": (15, "string"),
        "resources": (16, "ContainerResources"),
        "image_id": (17, "string"),
        "user": (18, "ContainerUser"),
        "stop_signal": (19, "Signal"),
    },
    "PodSandboxStatus": {
        "id": (1, "string"),
        "metadata": (2, "PodSandboxMetadata"),
        "state": (3, "PodSandboxState"),
        "created_at": (4, "int64"),
        "network": (5, "PodSandboxNetworkStatus"),
        "linux": (6, "LinuxPodSandboxStatus"),
        "labels": (7, "map<string, string>"),
        "annotations": (8, "map<string, string>"),
        "runtime_handler": (9, "string"),
    },
    "PodSandboxNetworkStatus": {
        "ip": (1, "string"),
        "additional_ips": (2, "repeated PodIP"),
    },
    "ImageSpec": {
        "image": (1, "string"),
        "annotations": (2, "map<string, string>"),
        "user_specified_image": (18, "string"),
        "runtime_handler": (19, "string"),
        "image_ref": (20, "string"),
    },
    "Image": {
        "id": (1, "string"),
        "repo_tags": (2, "repeated string"),
        "repo_digests": (3, "repeated string"),
        "size": (4, "uint64"),
        "uid": (5, "Int64Value"),
        "username": (6, "string"),
        "spec": (7, "ImageSpec"),
        "pinned": (8, "bool"),
    },
    "PullImageRequest": {
        "image": (1, "ImageSpec"),
        "auth": (2, "AuthConfig"),
        "sandbox_config": (3, "PodSandboxConfig"),
    },
    "ExecSyncRequest": {
        "container_id": (1, "string"),
        "cmd": (2, "repeated string"),
        "timeout": (3, "int64"),
    },
    "ExecSyncResponse": {
        "stdout": (1, "bytes"),
        "stderr": (2, "bytes"),
        "exit_code": (3, "int32"),
    },
    "Mount": {
        "container_path": (1, "string"),
        "host_path": (2, "string"),
        "readonly": (3, "bool"),
        "selinux_relabel": (4, "bool"),
        "propagation": (5, "MountPropagation"),
        "uidMappings": (6, "repeated IDMapping"),
        "gidMappings": (7, "repeated IDMapping"),
        "recursive_read_only": (8, "bool"),
        "image": (9, "ImageSpec"),
        "image_sub_path": (10, "string"),
        "mount_options": (11, "repeated string"),
    },
    "ContainerStats": {
        "attributes": (1, "ContainerAttributes"),
        "cpu": (2, "CpuUsage"),
        "memory": (3, "MemoryUsage"),
        "writable_layer": (4, "FilesystemUsage"),
        "swap": (5, "SwapUsage"),
        "io": (6, "IoUsage"),
    },
    "Container": {
        "id": (1, "string"),
        "pod_sandbox_id": (2, "string"),
        "metadata": (3, "ContainerMetadata"),
        "image": (4, "ImageSpec"),
        "image_ref": (5, "string"),
        "state": (6, "ContainerState"),
        "created_at": (7, "int64"),
        "labels": (8, "map<string, string>"),
        "annotations": (9, "map<string, string>"),
        "image_id": (10, "string"),
    },
    "PodSandbox": {
        "id": (1, "string"),
        "metadata": (2, "PodSandboxMetadata"),
        "state": (3, "PodSandboxState"),
        "created_at": (4, "int64"),
        "labels": (5, "map<string, string>"),
        "annotations": (6, "map<string, string>"),
        "runtime_handler": (7, "string"),
    },
    "VersionResponse": {
        "version": (1, "string"),
        "runtime_name": (2, "string"),
        "runtime_version": (3, "string"),
        "runtime_api_version": (4, "string"),
    },
}

ENUM_VALUES: dict[str, dict[str, int]] = {
    "ContainerState": {
        "CONTAINER_CREATED": 0,
        "CONTAINER_RUNNING": 1,
        "CONTAINER_EXITED": 2,
        "CONTAINER_UNKNOWN": 3,
    },
    "PodSandboxState": {
        "SANDBOX_READY": 0,
        "SANDBOX_NOTREADY": 1,
    },
    "NamespaceMode": {
        "POD": 0,
        "CONTAINER": 1,
        "NODE": 2,
        "TARGET": 3,
    },
    "MountPropagation": {
        "PROPAGATION_PRIVATE": 0,
        "PROPAGATION_HOST_TO_CONTAINER": 1,
        "PROPAGATION_BIDIRECTIONAL": 2,
    },
}

_SCALARS = {
    FieldDescriptor.TYPE_DOUBLE: "double",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
}


def _type_name(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        return field.message_type.name
    if field.enum_type is not None:
        return field.enum_type.name
    return _SCALARS[field.type]


def _spelled(field: FieldDescriptor) -> str:
    """A field's type as the .proto spells it: `repeated T`, `map<K, V>` or `T`."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, value = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return f"map<{_type_name(key)}, {_type_name(value)}>"
    return ("repeated " if field.is_repeated else "") + _type_name(field)


def _fields(message: Descriptor) -> dict[str, tuple[int, str]]:
    return {f.name: (f.number, _spelled(f)) for f in message.fields}


def test_file_identity() -> None:
    assert api_pb2.DESCRIPTOR.package == "runtime.v1"
    assert api_pb2.DESCRIPTOR.name == "proto/runtime/v1/api.proto"


@pytest.mark.parametrize(
    ("service", "table"),
    [("RuntimeService", RUNTIME_SERVICE_METHODS), ("ImageService", IMAGE_SERVICE_METHODS)],
)
def test_service_methods_match_the_schema(
    service: str, table: list[tuple[str, str, str, bool]]
) -> None:
    descriptor = api_pb2.DESCRIPTOR.services_by_name[service]
    actual = [
        (
            f"/{descriptor.full_name}/{m.name}",
            m.input_type.full_name,
            m.output_type.full_name,
            m.client_streaming,
            m.server_streaming,
        )
        for m in descriptor.methods
    ]
    expected = [
        (f"/runtime.v1.{service}/{name}", f"runtime.v1.{req}", f"runtime.v1.{resp}", False, stream)
        for name, req, resp, stream in table
    ]
    assert actual == expected


def test_service_sizes() -> None:
    services = api_pb2.DESCRIPTOR.services_by_name
    assert sorted(services) == ["ImageService", "RuntimeService"]
    assert len(services["RuntimeService"].methods) == len(RUNTIME_SERVICE_METHODS) == 37
    assert len(services["ImageService"].methods) == len(IMAGE_SERVICE_METHODS) == 6


class _RecordingChannel:
    """Stands in for grpc.Channel: records the method paths a stub binds."""

    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def _bind(self, kind: str, path: str) -> None:
        self.bound.append((path, kind))

    def unary_unary(self, path: str, **_: Any) -> None:
        self._bind("unary_unary", path)

    def unary_stream(self, path: str, **_: Any) -> None:
        self._bind("unary_stream", path)

    def stream_unary(self, path: str, **_: Any) -> None:
        self._bind("stream_unary", path)

    def stream_stream(self, path: str, **_: Any) -> None:
        self._bind("stream_stream", path)


@pytest.mark.parametrize(
    ("stub", "service", "table"),
    [
        ("RuntimeServiceStub", "RuntimeService", RUNTIME_SERVICE_METHODS),
        ("ImageServiceStub", "ImageService", IMAGE_SERVICE_METHODS),
    ],
)
def test_client_stubs_call_the_schema_paths(
    stub: str, service: str, table: list[tuple[str, str, str, bool]]
) -> None:
    channel = _RecordingChannel()
    getattr(api_pb2_grpc, stub)(channel)
    expected = [
        (f"/runtime.v1.{service}/{name}", "unary_stream" if stream else "unary_unary")
        for name, _, _, stream in table
    ]
    assert channel.bound == expected


@pytest.mark.parametrize("message", sorted(MESSAGE_FIELDS))
def test_message_fields_match_the_schema(message: str) -> None:
    assert _fields(api_pb2.DESCRIPTOR.message_types_by_name[message]) == MESSAGE_FIELDS[message]


@pytest.mark.parametrize("enum", sorted(ENUM_VALUES))
def test_enum_values_match_the_schema(enum: str) -> None:
    descriptor = api_pb2.DESCRIPTOR.enum_types_by_name[enum]
    assert {v.name: v.number for v in descriptor.values} == ENUM_VALUES[enum]


def test_a_container_config_survives_the_wire() -> None:
    config = api_pb2.ContainerConfig(
        metadata=api_pb2.ContainerMetadata(name="web", attempt=2),
        image=api_pb2.ImageSpec(image="busybox:latest"),
        command=["/bin/sh"],
        labels={"app": "web"},
        mounts=[api_pb2.Mount(container_path="/data", propagation=api_pb2.PROPAGATION_PRIVATE)],
    )
    decoded = api_pb2.ContainerConfig.FromString(config.SerializeToString())
    assert decoded == config
    # Field 1 (metadata) is a length-delimited submessage: tag byte 0x0a.
    assert config.SerializeToString()[0] == 0x0A
