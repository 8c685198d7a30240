"""ImageFsInfo: bytes and inodes the image store uses, on its root."""

from __future__ import annotations

import time

from proto.runtime.v1 import api_pb2
from runtime.image.store import ImageStore


def image_fs_info(
    store: ImageStore, request: api_pb2.ImageFsInfoRequest
) -> api_pb2.ImageFsInfoResponse:
    used, inodes = store.usage()
    usage = api_pb2.FilesystemUsage(
        timestamp=time.time_ns(),
        fs_id=api_pb2.FilesystemIdentifier(mountpoint=str(store.root)),
        used_bytes=api_pb2.UInt64Value(value=used),
        inodes_used=api_pb2.UInt64Value(value=inodes),
    )
    return api_pb2.ImageFsInfoResponse(image_filesystems=[usage])
