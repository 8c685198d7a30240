"""Pulling from the local registry: names, mirrors, auth, platforms, layers,
garbage collection and every way a pull must fail without storing anything."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from runtime.errors import InvalidArgument, NotFound, Unavailable
from runtime.image.config import Credentials
from runtime.image.errors import BadContent, Unauthorized, UnsafeEntry
from runtime.image.pull import Puller
from runtime.image.store import ImageStore
from tests.harness.images import Layer, TestImages, Tree
from tests.harness.images.content import OCI_LAYER_GZIP, sha256_digest
from tests.harness.images.manifest import ImageConfig
from tests.harness.ports import free_port
from tests.harness.registry import Registry
from tests.linux.image.conftest import Proxy, make_puller, overlay, store_files

pytestmark = pytest.mark.root


def test_pull_by_tag(
    registry: Registry, images: TestImages, registry_repo: str, puller: Puller
) -> None:
    pushed = registry.push(images.busybox(), registry_repo, "v1")
    rec = puller.pull(pushed.reference)
    assert rec.id == pushed.config_digest
    assert rec.repo_tags == (pushed.reference,)
    assert rec.repo_digests == (pushed.digest_reference,)
    assert rec.config["config"]["Cmd"] == ["sh"]
    assert rec.size > images.busybox().layers[0].size
    store = puller.store
    for ref in (
        rec.id,
        rec.id.removeprefix("sha256:"),
        rec.id[7:19],
        pushed.reference,
        pushed.digest_reference,
    ):
        assert store.resolve(ref) == rec
    dirs = store.layer_dirs(rec)
    assert len(dirs) == 1 and (dirs[0] / "bin/busybox").is_file()


def test_pull_by_digest_and_without_tag(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, puller: Puller
) -> None:
    pushed = registry.push(images.busybox(), registry_repo, "latest")
    rec = puller.pull(pushed.digest_reference)
    assert rec.repo_tags == ()
    assert rec.repo_digests == (pushed.digest_reference,)
    rec = puller.pull(pushed.name)  # no tag: latest
    assert rec.repo_tags == (f"{pushed.name}:latest",)
    assert len(store.images()) == 1


def test_pull_through_mirror_never_contacts_the_registry(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore
) -> None:
    pushed = registry.push(images.busybox(), registry_repo, "1.29-2")
    registries = {
        "mirrors": {
            "registry.k8s.io": {"endpoint": [f"http://127.0.0.1:{free_port()}", registry.url]},
            "docker.io": {"endpoint": [registry.url]},
        },
        "disable_default_endpoint": True,
    }
    puller = make_puller(store, registries)
    rec = puller.pull(f"registry.k8s.io/{registry_repo}:1.29-2")
    assert rec.id == pushed.config_digest
    assert rec.repo_tags == (f"registry.k8s.io/{registry_repo}:1.29-2",)
    assert rec.repo_digests == (f"registry.k8s.io/{registry_repo}@{pushed.digest}",)
    # A miss on every mirror is NOT_FOUND (the registry itself is never asked).
    with pytest.raises(NotFound) as exc:
        puller.pull(f"docker.io/{registry_repo}:nope")
    assert "MANIFEST_UNKNOWN" in str(exc.value)


def test_bearer_token_auth(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, proxy: Proxy
) -> None:
    registry.push(images.busybox(), registry_repo, "v1")
    proxy.mode = "bearer"
    puller = make_puller(store)
    ref = f"{proxy.host}/{registry_repo}:v1"
    with pytest.raises(Unauthorized):
        puller.pull(ref)
    rec = puller.pull(ref, Credentials("alice", "s3cret"))
    assert rec.repo_tags == (ref,)
    assert proxy.counts["/token"] >= 2
    # basic auth from registries.yaml configs
    proxy.mode, proxy.counts["/token"] = "basic", 0
    store.remove(rec.id)
    configured = make_puller(
        store, {"configs": {proxy.host: {"auth": {"username": "alice", "password": "s3cret"}}}}
    )
    assert configured.pull(ref).id == rec.id


def test_multiarch_index_selects_linux_amd64(
    registry: Registry, images: TestImages, registry_repo: str, puller: Puller
) -> None:
    index = images.multiarch()
    pushed = registry.push(index, registry_repo, "multi")
    rec = puller.pull(pushed.reference)
    assert rec.id == index.image_for("linux/amd64").config_digest
    assert rec.config["architecture"] == "amd64"
    assert rec.repo_digests == (f"{pushed.name}@{index.digest}",)
    docker = images.multiarch(fmt="docker")
    pushed = registry.push(docker, registry_repo, "multi-docker")
    assert puller.pull(pushed.reference).id == docker.image_for("linux/amd64").config_digest


@pytest.mark.parametrize(
    ("fmt", "compression"), [("docker", "none"), ("oci", "zstd"), ("docker", "gzip")]
)
def test_formats_and_compressions(
    registry: Registry,
    images: TestImages,
    registry_repo: str,
    puller: Puller,
    fmt: str,
    compression: str,
) -> None:
    image = images.busybox(fmt=fmt, compression=compression)  # type: ignore[arg-type]
    pushed = registry.push(image, registry_repo, f"{fmt}-{compression}")
    rec = puller.pull(pushed.reference)
    assert rec.layers[0].diff_id == image.diff_ids[0]
    assert (puller.store.layer_dirs(rec)[0] / "bin/busybox").is_file()


def test_whiteouts_give_the_right_rootfs(
    registry: Registry, images: TestImages, registry_repo: str, puller: Puller, state_dir: Path
) -> None:
    pushed = registry.push(images.multilayer(), registry_repo, "v1")
    rec = puller.pull(pushed.reference)
    with overlay(puller.store.layer_dirs(rec), state_dir / "rootfs") as root:
        assert (root / "data/keep.txt").read_text() == "kept from layer 2\n"
        assert not (root / "data/remove-me.txt").exists()
        assert sorted(os.listdir(root / "data/dir")) == ["c.txt"]
        assert (root / "data/overwrite.txt").read_text() == "version 3\n"
        assert not (root / "bin/vi").exists()
        assert (root / "bin/sh").exists()


def test_shared_layers_are_stored_once(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, puller: Puller
) -> None:
    a = registry.push(images.busybox(), registry_repo, "a")
    b = registry.push(images.web(), registry_repo, "b")
    ra, rb = puller.pull(a.reference), puller.pull(b.reference)
    assert ra.layers[0].chain_id == rb.layers[0].chain_id
    assert store.layer_dirs(ra)[0] == store.layer_dirs(rb)[0]
    assert len(store_files(store)["layers"]) == 2
    assert store.usage()[0] > 0


def test_remove_image_collects_unused_layers_and_blobs(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, puller: Puller
) -> None:
    a = registry.push(images.busybox(), registry_repo, "a")
    b = registry.push(images.web(), registry_repo, "b")
    ra, rb = puller.pull(a.reference), puller.pull(b.reference)
    web_top = store.layers.path(rb.layers[1].chain_id)
    store.remove(b.reference)
    assert not web_top.exists() and not store.content.has(rb.id)
    assert store.layer_dirs(ra)[0].is_dir()
    # In use: kept (nameless) until released.
    store.hold(ra.id, "ctr-1")
    store.remove(ra.id)
    kept = store.resolve(ra.id)
    assert kept.repo_tags == () and store.layer_dirs(kept)[0].is_dir()
    store.release(ra.id, "ctr-1")
    assert store.find(ra.id) is None
    assert store_files(store) == {"blobs": [], "layers": [], "ingest": []}
    assert store.remove(ra.id) is None  # already gone: fine


def test_hold_survives_reopen(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, puller: Puller
) -> None:
    rec = puller.pull(registry.push(images.busybox(), registry_repo, "a").reference)
    store.hold(rec.id, "ctr-9")
    again = ImageStore(store.root)
    assert again.holders(rec.id) == ["ctr-9"]
    again.remove(rec.id)
    assert store.resolve(rec.id).repo_tags == ()  # the first instance sees the change


def _random_layer(images: TestImages, name: str) -> Tree:
    return Tree().file(f"{name}.bin", os.urandom(300_000))


@pytest.mark.parametrize("cpus", [1, 64], ids=["one-thread-per-layer", "pipelined"])
def test_corrupted_blob_is_rejected_and_nothing_stored(
    registry: Registry,
    images: TestImages,
    registry_repo: str,
    store: ImageStore,
    proxy: Proxy,
    cpus: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fewer layers to fetch than CPUs: each layer's stages run in threads.
    monkeypatch.setattr("runtime.image.pull.os.cpu_count", lambda: cpus)
    image = images.custom("corrupt", [_random_layer(images, "x")])
    pushed = registry.push(image, registry_repo, "v1")
    bad = image.layers[-1].digest

    def flip(path: str, body: bytes) -> bytes:
        if path.endswith(bad):
            return body[:1000] + bytes([body[1000] ^ 0xFF]) + body[1001:]
        return body

    proxy.mutate = flip
    puller = make_puller(store)
    with pytest.raises(BadContent) as exc:
        puller.pull(f"{proxy.host}/{registry_repo}:v1")
    assert bad in str(exc.value)
    assert store.images() == []
    files = store_files(store)
    assert files["ingest"] == [] and not [n for n in files["layers"] if n.startswith("tmp-")]
    assert not store.content.has(bad) and not store.content.has(pushed.config_digest)
    # The blob truncated in transit: also refused.
    proxy.mutate = lambda path, body: body[: len(body) // 2] if path.endswith(bad) else body
    with pytest.raises(BadContent):
        puller.pull(f"{proxy.host}/{registry_repo}:v1")
    assert store.images() == [] and not store.content.has(bad)
    # Longer than its descriptor says: refused without storing the excess.
    proxy.mutate = lambda path, body: body + bytes(1 << 20) if path.endswith(bad) else body
    with pytest.raises(BadContent) as exc:
        puller.pull(f"{proxy.host}/{registry_repo}:v1")
    assert "larger" in str(exc.value) and store.images() == []
    # Fixed upstream: the next pull succeeds and reuses the intact base layer.
    proxy.mutate = None
    assert puller.pull(f"{proxy.host}/{registry_repo}:v1").id == pushed.config_digest


def _raw_layer(images: TestImages, build: list[tarfile.TarInfo]) -> Layer:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for info in build:
            tf.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    raw = buf.getvalue()
    blob = images.store.add_bytes(gzip.compress(raw), OCI_LAYER_GZIP)

    return Layer(blob.digest, blob.size, sha256_digest(raw), "gzip", blob)


def test_escaping_layer_is_rejected(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, puller: Puller
) -> None:
    link = tarfile.TarInfo("evil")
    link.type, link.linkname = tarfile.SYMTYPE, "/"
    through = tarfile.TarInfo("evil/tmp/skiff-escaped")
    through.size = 1
    layer = _raw_layer(images, [link, through])
    image = images.build("evil", [images.busybox_layer(), layer], ImageConfig(cmd=["sh"]))
    pushed = registry.push(image, registry_repo, "v1")
    with pytest.raises(UnsafeEntry):
        puller.pull(pushed.reference)
    assert not Path("/tmp/skiff-escaped").exists()
    assert store.images() == []
    assert not [n for n in store_files(store)["layers"] if n.startswith("tmp-")]


def test_missing_unreachable_and_invalid(
    registry: Registry, images: TestImages, registry_repo: str, puller: Puller
) -> None:
    with pytest.raises(NotFound) as exc:
        puller.pull(f"{registry.host}/{registry_repo}:missing")
    assert "MANIFEST_UNKNOWN" in str(exc.value) or "NAME_UNKNOWN" in str(exc.value)
    start = time.monotonic()
    with pytest.raises(Unavailable):
        puller.pull(f"127.0.0.1:{free_port()}/nothing/here:v1")
    assert time.monotonic() - start < 10
    with pytest.raises(InvalidArgument) as bad:
        puller.pull("Not/A/Valid:Ref:")
    assert "Not/A/Valid:Ref:" in str(bad.value)


def test_unresponsive_registry_times_out(store: ImageStore) -> None:
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        puller = make_puller(store, timeout=0.5)
        start = time.monotonic()
        with pytest.raises(Unavailable):
            puller.pull(f"127.0.0.1:{silent.getsockname()[1]}/quiet:v1")
        assert time.monotonic() - start < 5


def test_concurrent_pulls_share_one_download(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, proxy: Proxy
) -> None:
    image = images.web()
    registry.push(image, registry_repo, "v1")
    puller = make_puller(store)
    ref = f"{proxy.host}/{registry_repo}:v1"
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda: results.append(puller.pull(ref).id)) for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [image.config_digest] * 6
    for digest in image.layer_digests:
        assert proxy.counts[f"/v2/{registry_repo}/blobs/{digest}"] == 1


def test_leftovers_of_a_killed_pull_are_cleaned(store: ImageStore) -> None:
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    (store.content.ingest_dir / f"{dead.pid}-abc-1").write_bytes(b"x")
    (store.content.ingest_dir / "garbage").write_bytes(b"x")
    tmp = store.layers.new_tmp()
    (tmp / "fs" / "f").write_bytes(b"x")
    stale = tmp.rename(store.layers.dir / f"tmp-{dead.pid}-0")
    live = store.layers.new_tmp()  # this process is alive: its work is kept
    live_ingest = store.content.ingest_dir / f"{os.getpid()}-def-2"
    live_ingest.write_bytes(b"y")
    again = ImageStore(store.root)
    assert not stale.exists() and live.exists() and live_ingest.exists()
    assert store_files(again)["ingest"] == [live_ingest.name]


def test_https_with_configured_ca(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, tmp_path: Path
) -> None:
    import ssl

    from tests.linux.image.conftest import make_ca_and_cert, run_proxy

    registry.push(images.busybox(), registry_repo, "v1")
    ca, cert, key = make_ca_and_cert(tmp_path / "pki")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    with run_proxy(registry.host, tls=ctx) as proxy:
        ref = f"{proxy.host}/{registry_repo}:v1"
        # Unknown CA: refused (UNAVAILABLE), nothing stored.
        untrusted = make_puller(
            store, {"mirrors": {"mirror.test": {"endpoint": [f"https://{proxy.host}"]}}}
        )
        with pytest.raises(Unavailable) as exc:
            untrusted.pull(f"mirror.test/{registry_repo}:v1")
        assert "CERTIFICATE_VERIFY_FAILED" in str(exc.value)
        trusted = make_puller(store, {"configs": {proxy.host: {"tls": {"ca_file": str(ca)}}}})
        assert trusted.pull(ref).repo_tags == (ref,)
        store.remove(ref)
        skip = make_puller(
            store, {"configs": {proxy.host: {"tls": {"insecure_skip_verify": True}}}}
        )
        assert skip.pull(ref).repo_tags == (ref,)


def test_blob_redirects_are_followed(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, proxy: Proxy
) -> None:
    image = images.web()
    registry.push(image, registry_repo, "v1")
    proxy.redirect_blobs, proxy.mode = True, "bearer"
    rec = make_puller(store).pull(
        f"{proxy.host}/{registry_repo}:v1", Credentials("alice", "s3cret")
    )
    assert rec.id == image.config_digest
    assert proxy.counts[f"/direct/v2/{registry_repo}/blobs/{image.layer_digests[1]}"] == 1


def test_killed_pull_leaves_no_half_image(
    registry: Registry, images: TestImages, registry_repo: str, store: ImageStore, proxy: Proxy
) -> None:
    import signal
    import subprocess
    import sys

    from tests.harness.wait import wait_for

    image = images.custom("killed", [_random_layer(images, "big")])
    registry.push(image, registry_repo, "v1")
    proxy.stall = image.layers[-1].digest
    ref = f"{proxy.host}/{registry_repo}:v1"
    script = (
        "import sys; from pathlib import Path\n"
        "from runtime.image.store import ImageStore\n"
        "from runtime.image.pull import Puller\n"
        "from runtime.image.config import RegistryConfig\n"
        "Puller(ImageStore(Path(sys.argv[1])), RegistryConfig()).pull(sys.argv[2])\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(store.root), ref],
        cwd=Path(__file__).resolve().parents[3],
        stderr=subprocess.DEVNULL,
    )
    try:

        def half_written() -> bool:
            return any(p.stat().st_size > 0 for p in store.content.ingest_dir.iterdir())

        wait_for(half_written, timeout=30, message="the child to be half-way through a layer")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        proxy.release.set()
    assert store.images() == []
    assert not store.content.has(image.layers[-1].digest)
    again = ImageStore(store.root)
    files = store_files(again)
    assert files["ingest"] == [] and not [n for n in files["layers"] if n.startswith("tmp-")]
    proxy.stall = None
    assert make_puller(again).pull(ref).id == image.config_digest


def test_gc_honours_leases_of_other_processes(store: ImageStore) -> None:
    import json
    import subprocess

    chain = "sha256:" + "c" * 64
    tmp = store.layers.new_tmp()
    from runtime.image.unpack import LayerStats

    store.layers.commit(tmp, chain, chain, LayerStats())
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        lease = store.root / "leases" / f"{sleeper.pid}-1.json"
        lease.write_text(json.dumps({"blobs": [], "chains": [chain]}))
        assert store.gc() == (0, 0) and store.layers.has(chain)
    finally:
        sleeper.kill()
        sleeper.wait(10)
    assert store.gc() == (0, 1) and not store.layers.has(chain)
    assert not lease.exists()
