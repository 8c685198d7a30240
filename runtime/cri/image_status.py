"""ImageStatus: one image by id, tag or digest, the same object whichever
way it is named; an unknown image is an empty response (not an error), as
the CRI asks. Also the record -> CRI `Image` conversion the listing RPCs share."""

from __future__ import annotations

import json
from typing import Any

from proto.runtime.v1 import api_pb2
from runtime.image.store import ImageRecord, ImageStore


def user_of(config: dict[str, Any]) -> tuple[int | None, str]:
    """(uid, username) from the config's User: `1002` -> uid, `www-data` ->
    name; a `:group` part is ignored. Empty User gives (None, "")."""
    user = str((config.get("config") or {}).get("User") or "")
    name = user.split(":", 1)[0]
    if not name:
        return None, ""
    if name.isdigit():
        return int(name), ""
    return None, name


def to_cri_image(rec: ImageRecord) -> api_pb2.Image:
    image = api_pb2.Image(
        id=rec.id,
        repo_tags=list(rec.repo_tags),
        repo_digests=list(rec.repo_digests),
        size=rec.size,
        pinned=rec.pinned,
    )
    uid, username = user_of(rec.config)
    if uid is not None:
        image.uid.value = uid
    image.username = username
    return image


def verbose_info(rec: ImageRecord) -> dict[str, str]:
    """containerd's shape: `info` is JSON with the image config as imageSpec."""
    info = {
        "imageSpec": rec.config,
        "chainID": rec.layers[-1].chain_id if rec.layers else "",
        "manifestDigest": rec.manifest_digest,
        "manifestMediaType": rec.manifest_media_type,
        "layers": [
            {"digest": lr.digest, "diffID": lr.diff_id, "chainID": lr.chain_id, "size": lr.size}
            for lr in rec.layers
        ],
    }
    return {"info": json.dumps(info)}


def image_status(
    store: ImageStore, request: api_pb2.ImageStatusRequest
) -> api_pb2.ImageStatusResponse:
    rec = store.find(request.image.image)
    if rec is None:
        return api_pb2.ImageStatusResponse()
    return api_pb2.ImageStatusResponse(
        image=to_cri_image(rec), info=verbose_info(rec) if request.verbose else {}
    )
