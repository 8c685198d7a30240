"""The images the client libraries' suites ask for, as stand-ins built from
busybox (tests.harness.images) and pushed to a local registry under the
names the suites use; skiff up reaches them through its registries.yaml
mirrors of the suites' registries, never a public one.

What each suite runs in them (found by grepping the suites at their tags):

- `nginx` (latest, stable, 1.14.2, 1.15.4, 1.21.4): busybox httpd on :80
  serving /usr/share/nginx/html, whose index.html has nginx's own heading
  (the Python client's port-forward test looks for it); kr8s `dd`s a file
  into that directory and reads it back through a port-forward.
- `busybox`, `ubuntu` (latest): busybox; the suites run `sh`, `date`,
  `cat`, `sleep` and `gzip` in them.
- `pause` (gcr.io/google_containers, k8s.gcr.io 2.0, registry.k8s.io
  3.10): busybox sleeping until stopped (its default command, as pause's).

- `python` (latest): busybox plus the host's Debian python3 (its binary,
  standard library and the shared libraries they load, as `ldd` names
  them); the Python client runs a TCP echo server in it. Not served where
  the host has no /usr/bin/python3.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.harness.images import Image, ImageConfig, TestImages, Tree
from tests.harness.nodeprocs import registries_yaml
from tests.harness.registry import Registry

# The registries whose names the suites use; each is mirrored to the local one.
MIRRORED = ("docker.io", "gcr.io", "k8s.gcr.io", "registry.k8s.io")
NGINX_HTML = "/usr/share/nginx/html"
NGINX_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n"
    "<body>\n<h1>Welcome to nginx!</h1>\n<p>busybox httpd standing in for nginx "
    "(tests/harness/clientlibs_images.py).</p>\n</body>\n</html>\n"
)
# repository in the registry (the mirror keeps the path) -> tags
NGINX_TAGS = ("latest", "stable", "1.14.2", "1.15.4", "1.21.4")
BUSYBOX_REPOS = ("library/busybox", "library/ubuntu")
PAUSE_REPOS = {"google_containers/pause": ("latest",), "pause": ("2.0", "3.10")}


def nginx(images: TestImages) -> Image:
    page = Tree().file(f"{NGINX_HTML.lstrip('/')}/index.html", NGINX_PAGE)
    config = ImageConfig(
        cmd=["httpd", "-f", "-p", "80", "-h", NGINX_HTML],
        exposed_ports=["80/tcp"],
        stop_signal="SIGQUIT",  # nginx's
    )
    return images.custom("nginx", [page], config)


def pause(images: TestImages) -> Image:
    return images.custom("pause", [], ImageConfig(cmd=["sleep", "infinity"]))


HOST_PYTHON = Path("/usr/bin/python3")
# Parts of the standard library no suite imports (tests, GUIs, installers).
STDLIB_LEFT_OUT = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                   "__pycache__", "site-packages", "dist-packages", "config-3"}  # fmt: skip
_LDD_PATH = re.compile(r"(/\S+) \(0x")


def shared_libraries(binaries: list[Path]) -> set[Path]:
    """The libraries (and loader) `ldd` says `binaries` load."""
    out = subprocess.run(["ldd", *map(str, binaries)], capture_output=True, text=True).stdout
    return {Path(m) for m in _LDD_PATH.findall(out)}


def python_tree(python: Path = HOST_PYTHON) -> Tree:
    binary = python.resolve()
    stdlib = binary.parent.parent / "lib" / binary.name  # /usr/lib/python3.X beside /usr/bin
    tree = Tree().file(str(binary).lstrip("/"), binary, mode=0o755)
    tree.symlink("usr/bin/python", binary.name).symlink("usr/bin/python3", binary.name)
    modules: list[Path] = []
    for path in sorted(stdlib.rglob("*")):
        rel = path.relative_to(stdlib)
        if any(part in STDLIB_LEFT_OUT or part.startswith("config-") for part in rel.parts):
            continue
        if path.is_symlink():
            tree.symlink(str(path).lstrip("/"), os.readlink(path))
        elif path.is_file():
            tree.file(str(path).lstrip("/"), path, mode=0o755 if path.suffix == ".so" else 0o644)
            if path.suffix == ".so":
                modules.append(path)
    for lib in shared_libraries([binary, *modules]):
        tree.file(str(lib).lstrip("/"), lib.resolve(), mode=0o755)
    return tree


def python(images: TestImages) -> Image | None:
    if not HOST_PYTHON.exists():
        return None
    return images.custom("python", [python_tree()], ImageConfig(cmd=["python3"]))


def push_all(registry: Registry, images: TestImages) -> None:
    """Every stand-in under every name and tag the suites use."""
    web = nginx(images)
    for tag in NGINX_TAGS:
        registry.push(web, "library/nginx", tag)
    for repo in BUSYBOX_REPOS:
        registry.push(images.busybox(), repo, "latest")
    if (py := python(images)) is not None:
        registry.push(py, "library/python", "latest")
    sleeper = pause(images)
    for repo, tags in PAUSE_REPOS.items():
        for tag in tags:
            registry.push(sleeper, repo, tag)


def mirrors(path: Path, registry: Registry) -> Path:
    """skiff up's --registry-config: the suites' registries mirrored to
    `registry`, no default endpoint."""
    return registries_yaml(path, registry.url, MIRRORED)
