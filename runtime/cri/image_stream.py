"""StreamImages: ListImages in batches, for clients with very many images."""

from __future__ import annotations

from collections.abc import Iterator

from proto.runtime.v1 import api_pb2
from runtime.cri.image_list import matching
from runtime.cri.image_status import to_cri_image
from runtime.image.store import ImageStore

BATCH = 100


def stream_images(
    store: ImageStore, request: api_pb2.StreamImagesRequest
) -> Iterator[api_pb2.StreamImagesResponse]:
    flt = request.filter if request.HasField("filter") else None
    images = [to_cri_image(r) for r in matching(store, flt)]
    for start in range(0, len(images), BATCH):
        yield api_pb2.StreamImagesResponse(images=images[start : start + BATCH])
