"""The CRI ImageService: a thin servicer that hands each RPC to its module.

Every method goes through `rpc_boundary` (one log line, domain error -> gRPC
code). Nothing here holds logic of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import grpc

from proto.runtime.v1 import api_pb2, api_pb2_grpc
from runtime.cri import (
    image_fs_info,
    image_list,
    image_pull,
    image_remove,
    image_status,
    image_stream,
)
from runtime.cri.errors import abort, rpc_boundary
from runtime.errors import RuntimeError_
from runtime.image.store import ImageStore

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runtime.image.pull import Puller


class ImageServicer(api_pb2_grpc.ImageServiceServicer):
    def __init__(self, store: ImageStore, make_puller: Callable[[], Puller]) -> None:
        """`make_puller` is called at the first PullImage: a runtime at rest
        holds no registry client (http.client, the pull pipeline)."""
        self.store = store
        self._make_puller = make_puller
        self._puller: Puller | None = None
        self._puller_lock = threading.Lock()

    @property
    def puller(self) -> Puller:
        with self._puller_lock:
            if self._puller is None:
                self._puller = self._make_puller()
            return self._puller

    @rpc_boundary("ListImages")
    def ListImages(
        self, request: api_pb2.ListImagesRequest, context: grpc.ServicerContext
    ) -> api_pb2.ListImagesResponse:
        return image_list.list_images(self.store, request)

    def StreamImages(
        self, request: api_pb2.StreamImagesRequest, context: grpc.ServicerContext
    ) -> Iterator[api_pb2.StreamImagesResponse]:
        try:
            yield from image_stream.stream_images(self.store, request)
        except RuntimeError_ as exc:
            abort(context, exc)

    @rpc_boundary("ImageStatus")
    def ImageStatus(
        self, request: api_pb2.ImageStatusRequest, context: grpc.ServicerContext
    ) -> api_pb2.ImageStatusResponse:
        return image_status.image_status(self.store, request)

    @rpc_boundary("PullImage")
    def PullImage(
        self, request: api_pb2.PullImageRequest, context: grpc.ServicerContext
    ) -> api_pb2.PullImageResponse:
        return image_pull.pull_image(self.puller, request)

    @rpc_boundary("RemoveImage")
    def RemoveImage(
        self, request: api_pb2.RemoveImageRequest, context: grpc.ServicerContext
    ) -> api_pb2.RemoveImageResponse:
        return image_remove.remove_image(self.store, request)

    @rpc_boundary("ImageFsInfo")
    def ImageFsInfo(
        self, request: api_pb2.ImageFsInfoRequest, context: grpc.ServicerContext
    ) -> api_pb2.ImageFsInfoResponse:
        return image_fs_info.image_fs_info(self.store, request)
