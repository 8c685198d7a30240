"""ListImages (and StreamImages' batches): every image, or the one a filter names."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.cri.image_status import to_cri_image
from runtime.image.store import ImageRecord, ImageStore


def matching(store: ImageStore, flt: api_pb2.ImageFilter | None) -> list[ImageRecord]:
    ref = flt.image.image if flt is not None and flt.HasField("image") else ""
    if not ref:
        return store.images()
    rec = store.find(ref)
    return [] if rec is None else [rec]


def list_images(
    store: ImageStore, request: api_pb2.ListImagesRequest
) -> api_pb2.ListImagesResponse:
    flt = request.filter if request.HasField("filter") else None
    return api_pb2.ListImagesResponse(images=[to_cri_image(r) for r in matching(store, flt)])
