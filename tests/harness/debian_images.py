"""Real software in test images: built from Debian's own packages, never
pulled from a public registry.

`debian_images()` returns an OCI image archive (for `skiff image import`
or a push to the tests' registry) holding one image per application of
`APPS` (nginx-light, redis-server, postgresql, python3 with
python3-kubernetes), all on one root filesystem layer: `mmdebstrap`
installs the packages from the Debian mirror (a package registry) into a
tarball, `umoci` turns it into an OCI layout (init, new, unpack, repack)
and writes each application's config (entrypoint, cmd, user, env,
working dir, stop signal, exposed ports) as its own tag, as the images'
Dockerfiles would.

Building takes minutes, so the result is cached across runs in
`$SKIFF_TEST_IMAGE_CACHE` (default /var/cache/skiff-test-images), keyed by
a hash of the suite, the package list and the image configs; one build at
a time per key (an flock beside it), so parallel sessions share it; a
build is made in a temporary dir and renamed into place, so a failed or
interrupted one leaves nothing a later run would take for done.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = (
    "nginx-light",
    "redis-server",
    "postgresql",
    "python3",
    "python3-kubernetes",
    "procps",
)
# Bump when the recipe below changes what an image holds.
RECIPE = 3
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
REPOSITORY = "docker.io/skiff-debian"
BUILD_TIMEOUT = 1800.0


@dataclass(frozen=True)
class App:
    """One application image's config (as its Dockerfile would say it)."""

    name: str
    cmd: tuple[str, ...]
    entrypoint: tuple[str, ...] = ()
    user: str = ""
    workdir: str = ""
    stop_signal: str = "SIGTERM"
    ports: tuple[str, ...] = ()
    env: tuple[str, ...] = (f"PATH={PATH}",)

    @property
    def ref(self) -> str:
        return f"{REPOSITORY}/{self.name}:{SUITE}"


PG_BIN = "/usr/lib/postgresql/15/bin"
APPS: tuple[App, ...] = (
    # nginx's master stays root (it binds :80), its workers are www-data.
    App("nginx", ("nginx", "-g", "daemon off;"), ports=("80/tcp",), stop_signal="SIGQUIT"),
    App(
        "redis",
        ("redis-server", "--protected-mode", "no", "--bind", "0.0.0.0", "--dir", "/tmp"),
        user="redis",
        ports=("6379/tcp",),
    ),
    # The cluster Debian's postinst made (pg_createcluster), run as postgres.
    App(
        "postgres",
        (
            f"{PG_BIN}/postgres",
            "-D",
            "/var/lib/postgresql/15/main",
            "-c",
            "config_file=/etc/postgresql/15/main/postgresql.conf",
            "-c",
            "listen_addresses=*",
            "-c",
            "ssl=off",  # Debian's config wants the snakeoil key, made at install on a host
        ),
        user="postgres",
        workdir="/var/lib/postgresql",
        ports=("5432/tcp",),
        env=(f"PATH={PG_BIN}:{PATH}", "PGDATA=/var/lib/postgresql/15/main"),
    ),
    App("python", ("python3",), user="nobody", workdir="/tmp"),
)


@dataclass(frozen=True)
class Built:
    archive: Path  # an OCI image layout as a tar, for `skiff image import`
    refs: dict[str, str] = field(default_factory=dict)  # app name -> image reference


def cache_root() -> Path:
    return Path(os.environ.get("SKIFF_TEST_IMAGE_CACHE", "/var/cache/skiff-test-images"))


def cache_key(packages: Sequence[str] = PACKAGES, apps: Sequence[App] = APPS) -> str:
    raw = json.dumps(
        {"suite": SUITE, "packages": sorted(packages), "recipe": RECIPE,
         "apps": [asdict(a) for a in apps]},
        sort_keys=True,
    )  # fmt: skip
    return hashlib.sha256(raw.encode()).hexdigest()[:20]


def available() -> str | None:
    """Why these images cannot be built here, or None."""
    for tool in ("mmdebstrap", "umoci"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {tool})"
    return None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def debian_images(packages: Sequence[str] = PACKAGES, apps: Sequence[App] = APPS) -> Built:
    """The images of `apps` on one rootfs of `packages`, built once per key."""
    key = cache_key(packages, apps)
    done = cache_root() / key
    refs = {a.name: a.ref for a in apps}
    with _locked(cache_root() / f"{key}.lock"):
        if not (done / "images.tar").is_file():
            work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache_root()))
            try:
                _build(work, packages, apps)
                shutil.rmtree(done, ignore_errors=True)
                os.replace(work, done)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return Built(done / "images.tar", refs)


def _run(*argv: str, timeout: float = 600.0) -> None:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if res.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv[:3])}... failed ({res.returncode}): {res.stderr[-3000:]}"
        )


def _build(work: Path, packages: Sequence[str], apps: Sequence[App]) -> None:
    rootfs = work / "rootfs.tar"
    _run(
        "mmdebstrap", "--variant=apt", "--include=" + ",".join(packages),
        "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--customize-hook=rm -f $1/etc/machine-id $1/var/cache/apt/*.bin",
        # /run is the image's (no tmpfs over it): emptied here (mmdebstrap's own
        # cleanup of it is skipped), with postgres' socket and pid dir in it,
        # as the package's tmpfiles.d makes it at boot.
        "--skip=cleanup/run",
        '--customize-hook=find "$1/run" -mindepth 1 -maxdepth 1 ! -name lock -exec rm -rf {} +',
        '--customize-hook=chroot "$1" install -d -o postgres -g postgres -m 2775 /run/postgresql',
        SUITE, str(rootfs), MIRROR,
        timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    layout, bundle = work / "layout", work / "bundle"
    _run("umoci", "init", "--layout", str(layout))
    _run("umoci", "new", "--image", f"{layout}:base")
    _run("umoci", "unpack", "--image", f"{layout}:base", str(bundle))
    _run("tar", "-xpf", str(rootfs), "--numeric-owner", "-C", str(bundle / "rootfs"))
    _run("umoci", "repack", "--image", f"{layout}:base", str(bundle), timeout=BUILD_TIMEOUT)
    for app in apps:
        argv = ["umoci", "config", "--image", f"{layout}:base", "--tag", app.name,
                "--config.user", app.user or "root", "--config.workingdir", app.workdir or "/",
                "--config.stopsignal", app.stop_signal,
                "--history.created_by", f"skiff test image {app.name} (Debian {SUITE})"]  # fmt: skip
        for e in app.env:
            argv += ["--config.env", e]
        for p in app.ports:
            argv += ["--config.exposedports", p]
        for part in app.entrypoint:
            argv += ["--config.entrypoint", part]
        for part in app.cmd:
            argv += ["--config.cmd", part]
        _run(*argv)
    _name_images(layout, apps)
    with tarfile.open(work / "images.tar", "w") as tf:
        for entry in sorted(layout.rglob("*")):
            tf.add(entry, arcname=str(entry.relative_to(layout)), recursive=False)
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.rmtree(layout, ignore_errors=True)
    rootfs.unlink()


def _name_images(layout: Path, apps: Sequence[App]) -> None:
    """Name each tag with its full reference (as `ctr export` does), and
    drop the base tag."""
    by_tag = {a.name: a.ref for a in apps}
    index = json.loads((layout / "index.json").read_text())
    kept = []
    for desc in index.get("manifests", []):
        ann = desc.setdefault("annotations", {})
        tag = ann.get("org.opencontainers.image.ref.name")
        if tag in by_tag:
            ann["io.containerd.image.name"] = by_tag[tag]
            kept.append(desc)
    index["manifests"] = kept
    (layout / "index.json").write_text(json.dumps(index))
