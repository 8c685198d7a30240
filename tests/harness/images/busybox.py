"""The base rootfs of every test image: Debian's static busybox plus /etc.

`/bin/busybox` is copied in and every applet `busybox --list-full` names is a
*hard* link to it, as in the upstream busybox images (a runtime that masks
`/bin/ls` must not mask `sh` through a shared symlink target). /etc/passwd
and /etc/group carry root, www-data (33), nobody (65534) and default-user
(1000, also in group 50000 `group-defined-in-image`). Reads only the busybox
binary; the tree is written by `layers.build_layer`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.harness.images.tree import Tree

BUSYBOX = Path("/bin/busybox")

PASSWD = """\
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
default-user:x:1000:1000:Linux User,,,:/home/default-user:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
"""

GROUP = """\
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
mail:x:8:
wheel:x:10:root
www-data:x:33:
staff:x:50:
users:x:100:
default-user:x:1000:
group-defined-in-image:x:50000:default-user
nogroup:x:65534:
"""

DIRS = (
    "bin",
    "sbin",
    "usr/bin",
    "usr/sbin",
    "usr/local/bin",
    "usr/share",
    "etc",
    "home",
    "var/run",
    "var/log",
    "var/www",
    "var/spool/mail",
    "proc",
    "sys",
    "dev",
    "mnt",
)


def applets(busybox: Path = BUSYBOX) -> list[str]:
    """Install paths of every applet, relative (`bin/sh`, `usr/bin/[`), sorted;
    `/linuxrc` (an init, not a command) is left out."""
    out = subprocess.run(
        [str(busybox), "--list-full"], check=True, capture_output=True, text=True
    ).stdout
    paths = {p.strip().lstrip("/") for p in out.splitlines()}
    return sorted(p for p in paths if p and p not in ("linuxrc", "bin/busybox"))


def busybox_tree(busybox: Path = BUSYBOX) -> Tree:
    tree = Tree()
    for d in DIRS:
        tree.dir(d)
    tree.dir("root", 0o700)
    tree.dir("tmp", 0o1777)
    tree.dir("home/default-user", 0o755, uid=1000, gid=1000)
    tree.file("bin/busybox", busybox, 0o755)
    for path in applets(busybox):
        tree.hardlink(path, "bin/busybox")
    tree.file("etc/passwd", PASSWD)
    tree.file("etc/group", GROUP)
    tree.file("etc/hosts", "")
    tree.file("etc/resolv.conf", "")
    tree.file("etc/hostname", "busybox\n")
    return tree
