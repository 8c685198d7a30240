"""RemoveImage: remove an image named by id, tag or digest, with all its names,
then collect unused layers and blobs. An unknown image is success; an image a
container holds is kept (nameless) until the container is removed."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.errors import InvalidArgument
from runtime.image.store import ImageStore


def remove_image(
    store: ImageStore, request: api_pb2.RemoveImageRequest
) -> api_pb2.RemoveImageResponse:
    ref = request.image.image
    if not ref:
        raise InvalidArgument("RemoveImage: image.image is empty")
    store.remove(ref)
    return api_pb2.RemoveImageResponse()
