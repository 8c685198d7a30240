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

Not served: `python` (the Python client's TCP port-forward test runs a
Python server in it; busybox has no Python).
"""

from __future__ import annotations

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


def push_all(registry: Registry, images: TestImages) -> None:
    """Every stand-in under every name and tag the suites use."""
    web = nginx(images)
    for tag in NGINX_TAGS:
        registry.push(web, "library/nginx", tag)
    for repo in BUSYBOX_REPOS:
        registry.push(images.busybox(), repo, "latest")
    sleeper = pause(images)
    for repo, tags in PAUSE_REPOS.items():
        for tag in tags:
            registry.push(sleeper, repo, tag)


def mirrors(path: Path, registry: Registry) -> Path:
    """skiff up's --registry-config: the suites' registries mirrored to
    `registry`, no default endpoint."""
    return registries_yaml(path, registry.url, MIRRORED)
