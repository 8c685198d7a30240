"""An OCI image archive of a root filesystem (one uncompressed layer), for
`ctr images import`: how the CRI benchmark gives containerd the same image
skiff's runtime serves from its fake image store.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

IMAGE = "docker.io/library/skiffbench:latest"


def oci_archive(rootfs: Path, dest: Path) -> Path:
    """An OCI image archive of `rootfs` (one uncompressed layer) for ctr."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for path in sorted(rootfs.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(rootfs)), recursive=False)
    layer_bytes = layer.getvalue()
    layer_digest = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": ["sleep", "3600"], "Env": ["PATH=/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": len(layer_bytes),
                }
            ],
        }
    ).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": manifest_digest,
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": IMAGE,
                        "org.opencontainers.image.ref.name": "latest",
                    },
                }
            ],
        }
    ).encode()
    with tarfile.open(dest, "w") as tar:

        def add(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

        add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add("index.json", index)
        for digest, data in (
            (layer_digest, layer_bytes),
            (config_digest, config),
            (manifest_digest, manifest),
        ):
            add("blobs/sha256/" + digest.split(":")[1], data)
    return dest
