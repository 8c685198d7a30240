"""Write images to an OCI image layout directory (oci-layout, index.json, blobs/).

The layout's `index.json` names each image or index with the
`org.opencontainers.image.ref.name` annotation (what `skopeo copy oci:DIR:TAG`
and `umoci` look up). Blobs are hard-linked from the blob store when both are
on one filesystem, else copied. Writes only below `dest`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.harness.images.content import OCI_INDEX, Blob, split_digest
from tests.harness.images.manifest import Image, Index

REF_NAME = "org.opencontainers.image.ref.name"


def all_blobs(item: Image | Index) -> list[Blob]:
    """Every blob `item` needs, manifests included, children before parents."""
    if isinstance(item, Image):
        return [*item.blobs(), item.manifest]
    out: list[Blob] = []
    for image in item.images:
        out += all_blobs(image)
    return [*out, item.manifest]


def ref_name(item: Image | Index) -> str:
    """`<name>-<tag>`: a ref name umoci and skopeo both accept."""
    return f"{item.name}-{item.tag}"


def _place(blob: Blob, dest: Path) -> None:
    target = dest / "blobs" / "sha256" / split_digest(blob.digest)
    if target.exists():
        return
    tmp = target.with_name(target.name + ".tmp")
    try:
        os.link(blob.path, tmp)
    except OSError:
        shutil.copyfile(blob.path, tmp)
    os.replace(tmp, target)


def write_layout(dest: Path, items: Iterable[Image | Index] | Mapping[str, Image | Index]) -> Path:
    """Write `items` into the layout `dest` (created if missing, entries added
    to an existing index.json). A mapping gives each item's ref name; an
    iterable names each `ref_name(item)` ("busybox-latest")."""
    named = list(items.items()) if isinstance(items, Mapping) else [(ref_name(i), i) for i in items]
    (dest / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (dest / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    index_path = dest / "index.json"
    index: dict[str, Any] = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": []}
    if index_path.exists():
        index = json.loads(index_path.read_text())
    for ref, item in named:
        for blob in all_blobs(item):
            _place(blob, dest)
        index["manifests"] = [
            m for m in index["manifests"] if m.get("annotations", {}).get(REF_NAME) != ref
        ]
        desc = item.manifest.descriptor(annotations={REF_NAME: ref})
        if isinstance(item, Image):
            desc["platform"] = item.platform.to_json()
        index["manifests"].append(desc)
    tmp = index_path.with_name("index.json.tmp")
    tmp.write_text(json.dumps(index, indent=2))
    os.replace(tmp, index_path)
    return dest
