"""Building a container's root filesystem inside a fresh mount namespace:
an overlay of image layers plus a writable upper dir, /proc, /dev, /sys, the
pod's hosts/resolv.conf/hostname and /dev/shm, CRI bind mounts with
propagation, masked and read-only paths, then pivot_root.

Every destination inside the rootfs goes through `secure_join`, so a symlink
or `..` in an image or a mount path can never reach the host outside the
root. These functions must only run in a container child process that has
already called unshare(CLONE_NEWNS); calling them in the runtime would change
the host's mounts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Any

from machinery import libc
from runtime.linux import safepath

DEVICES = ["null", "zero", "full", "random", "urandom", "tty"]

# containerd's defaults (oci.WithMaskedPaths / WithReadonlyPaths).
DEFAULT_MASKED = [
    "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
    "/sys/firmware", "/sys/devices/virtual/powercap",
]  # fmt: skip
DEFAULT_READONLY = [
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
]  # fmt: skip

PROPAGATION = {
    "private": libc.MS_PRIVATE,
    "rprivate": libc.MS_PRIVATE | libc.MS_REC,
    "rslave": libc.MS_SLAVE | libc.MS_REC,
    "rshared": libc.MS_SHARED | libc.MS_REC,
}


class UnsafePath(ValueError):
    pass


def secure_join(root: str, unsafe: str) -> str:
    """`root`/`unsafe` with every symlink resolved as if `root` were `/`,
    so the result always lies under `root` (like Go's securejoin)."""
    queue = [c for c in unsafe.split("/") if c]
    resolved: list[str] = []
    links = 0
    while queue:
        c = queue.pop(0)
        if c == ".":
            continue
        if c == "..":
            if resolved:
                resolved.pop()
            continue
        cand = os.path.join(root, *resolved, c)
        if os.path.islink(cand):
            links += 1
            if links > 255:
                raise UnsafePath(f"too many symlinks in {unsafe!r}")
            target = os.readlink(cand)
            if target.startswith("/"):
                resolved = []
            queue = [t for t in target.split("/") if t] + queue
            continue
        resolved.append(c)
    return os.path.join(root, *resolved)


def ensure_target(root: str, path: str, is_dir: bool) -> str:
    """secure_join, then create the mount point (a dir, or an empty file)."""
    dest = secure_join(root, path)
    if is_dir:
        os.makedirs(dest, exist_ok=True)
    else:
        parent = os.path.dirname(dest)
        os.makedirs(parent, exist_ok=True)
        # re-check: creating parents may not have followed a new symlink
        dest = secure_join(root, path)
        if not os.path.exists(dest):
            fd = os.open(dest, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            os.close(fd)
    return dest


def bind_into(
    source: str,
    root: str,
    target: str,
    readonly: bool = False,
    recursive: bool = True,
    propagation: str = "",
) -> None:
    """Bind `source` (a host path) onto `target` inside `root`. The target
    (and any directory missing on the way) is resolved and made inside the
    root as file descriptors (runtime.linux.safepath) and mounted through
    /proc/self/fd/N, so neither `..`, a symlink, nor one swapped in meanwhile
    by another container sharing a volume can redirect it; the read-only
    remount and propagation change go to the new mount, checked to be it."""
    o_path = os.O_PATH | os.O_CLOEXEC
    src = os.open(source, o_path)
    root_fd = os.open(root, o_path | os.O_DIRECTORY)
    try:
        is_dir = stat.S_ISDIR(os.fstat(src).st_mode)
        ensure = safepath.ensure_dir_in_root if is_dir else safepath.ensure_file_in_root
        dst = ensure(root_fd, target)
        flags = libc.MS_BIND | (libc.MS_REC if recursive else 0)
        try:
            libc.mount(safepath.proc_path(src), safepath.proc_path(dst), None, flags)
        finally:
            os.close(dst)
        if not readonly and not propagation:
            return
        new = safepath.open_in_root(root_fd, target)
        try:
            a, b = os.fstat(new), os.fstat(src)
            if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
                raise OSError(errno.EXDEV, f"mount target {target!r} changed while mounting")
            if readonly:
                libc.mount(None, safepath.proc_path(new), None,
                           flags | libc.MS_REMOUNT | libc.MS_RDONLY)  # fmt: skip
            if propagation:
                libc.mount(None, safepath.proc_path(new), None, PROPAGATION[propagation])
        finally:
            os.close(new)
    finally:
        os.close(src)
        os.close(root_fd)


def bind(source: str, dest: str, readonly: bool = False, recursive: bool = True) -> None:
    flags = libc.MS_BIND | (libc.MS_REC if recursive else 0)
    libc.mount(source, dest, None, flags)
    if readonly:
        libc.mount(None, dest, None, flags | libc.MS_REMOUNT | libc.MS_RDONLY)


# mount(2) copies at most one page of options.
MAX_MOUNT_OPTIONS = 4095


def overlay_options(
    lower: list[str], upper: str, work: str
) -> tuple[str, str | None, dict[str, str]]:
    """The overlay mount options; when the absolute lower dirs would not fit
    in a page (images with dozens of layers), also the directory to chdir into
    and the short symlinks to make there (name -> layer dir), so the options
    name each layer by a number, as Docker's overlay2 does."""
    opts = f"lowerdir={':'.join(reversed(lower))},upperdir={upper},workdir={work}"
    if len(opts) <= MAX_MOUNT_OPTIONS:
        return opts, None, {}
    links = {str(i): path for i, path in enumerate(lower)}
    names = [str(i) for i in reversed(range(len(lower)))]
    opts = f"lowerdir={':'.join(names)},upperdir={upper},workdir={work}"
    if len(opts) > MAX_MOUNT_OPTIONS:
        raise OSError(errno.E2BIG, f"overlay options for {len(lower)} layers exceed a page")
    return opts, os.path.join(os.path.dirname(upper), "l"), links


def mount_overlay(lower: list[str], upper: str, work: str, target: str) -> None:
    """`lower` is bottom-first (as the image store gives it); overlayfs wants
    the topmost lower dir first. Changes the working directory when the
    options need short names: call it only in the container's child."""
    os.makedirs(target, exist_ok=True)
    if not lower:
        bind(upper, target)
        return
    opts, cwd, links = overlay_options(lower, upper, work)
    if cwd is not None:
        os.makedirs(cwd, exist_ok=True)
        for name, dest in links.items():
            link = os.path.join(cwd, name)
            if not (os.path.islink(link) and os.readlink(link) == dest):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(link)
                os.symlink(dest, link)
        os.chdir(cwd)
    libc.mount("overlay", target, "overlay", 0, opts)


def setup_dev(root: str, shm: str | None) -> None:
    dev = ensure_target(root, "/dev", True)
    libc.mount("tmpfs", dev, "tmpfs", libc.MS_NOSUID | libc.MS_STRICTATIME, "mode=755,size=65536k")
    for name in DEVICES:
        dest = os.path.join(dev, name)
        open(dest, "a").close()
        bind(f"/dev/{name}", dest, recursive=False)
    pts = os.path.join(dev, "pts")
    os.makedirs(pts, exist_ok=True)
    libc.mount(
        "devpts",
        pts,
        "devpts",
        libc.MS_NOSUID | libc.MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=0620,gid=5",
    )
    os.symlink("pts/ptmx", os.path.join(dev, "ptmx"))
    shm_dest = os.path.join(dev, "shm")
    os.makedirs(shm_dest, exist_ok=True)
    if shm:
        bind(shm, shm_dest)
    else:
        libc.mount(
            "shm",
            shm_dest,
            "tmpfs",
            libc.MS_NOSUID | libc.MS_NODEV | libc.MS_NOEXEC,
            "mode=1777,size=65536k",
        )
    mq = os.path.join(dev, "mqueue")
    os.makedirs(mq, exist_ok=True)
    with contextlib.suppress(OSError):
        libc.mount("mqueue", mq, "mqueue", libc.MS_NOSUID | libc.MS_NODEV | libc.MS_NOEXEC)
    for src, name in (("/proc/self/fd", "fd"), ("/proc/self/fd/0", "stdin"),
                      ("/proc/self/fd/1", "stdout"), ("/proc/self/fd/2", "stderr"),
                      ("/proc/kcore", "core")):  # fmt: skip
        os.symlink(src, os.path.join(dev, name))


def setup_proc_sys(root: str, readonly_sys: bool) -> None:
    proc = ensure_target(root, "/proc", True)
    libc.mount("proc", proc, "proc", libc.MS_NOSUID | libc.MS_NODEV | libc.MS_NOEXEC)
    sys_ = ensure_target(root, "/sys", True)
    flags = libc.MS_NOSUID | libc.MS_NODEV | libc.MS_NOEXEC
    try:
        # the superblock is shared by every sysfs mount of this network
        # namespace: mount it read-write, then make only our mount read-only
        libc.mount("sysfs", sys_, "sysfs", flags)
        if readonly_sys:
            libc.mount(None, sys_, None, flags | libc.MS_BIND | libc.MS_REMOUNT | libc.MS_RDONLY)
    except OSError:
        # a sysfs of a network namespace we do not own cannot be mounted:
        # fall back to a bind of the host's
        bind("/sys", sys_, readonly=readonly_sys)


def mask_paths(root: str, paths: list[str]) -> None:
    for p in paths:
        dest = secure_join(root, p)
        if not os.path.lexists(dest):
            continue
        if os.path.isdir(dest):
            libc.mount("tmpfs", dest, "tmpfs", libc.MS_RDONLY)
        else:
            bind("/dev/null", dest, recursive=False)


def readonly_paths(root: str, paths: list[str]) -> None:
    for p in paths:
        dest = secure_join(root, p)
        if not os.path.lexists(dest):
            continue
        libc.mount(dest, dest, None, libc.MS_BIND | libc.MS_REC)
        libc.mount(
            None,
            dest,
            None,
            libc.MS_BIND
            | libc.MS_REC
            | libc.MS_REMOUNT
            | libc.MS_RDONLY
            | libc.MS_NOSUID
            | libc.MS_NODEV
            | libc.MS_NOEXEC,
        )


def cri_mount(root: str, m: dict[str, Any]) -> None:
    """One CRI Mount: host_path -> container_path, bind, maybe read-only,
    with its propagation."""
    source = os.path.realpath(m["source"])
    if not os.path.exists(source):
        raise FileNotFoundError(errno.ENOENT, f"mount source {m['source']!r} does not exist")
    prop = m.get("propagation") or "rprivate"
    bind_into(source, root, m["target"], readonly=bool(m.get("readonly")), propagation=prop)


def pivot(root: str) -> None:
    """pivot_root into `root` without a put_old directory (runc's trick)."""
    old = os.open("/", os.O_DIRECTORY | os.O_RDONLY)
    new = os.open(root, os.O_DIRECTORY | os.O_RDONLY)
    try:
        os.fchdir(new)
        libc.pivot_root(".", ".")
        os.fchdir(old)
        libc.mount(None, ".", None, libc.MS_SLAVE | libc.MS_REC)
        libc.umount2(".", libc.MNT_DETACH)
        os.chdir("/")
    finally:
        os.close(old)
        os.close(new)


def build_rootfs(spec: dict[str, Any]) -> str:
    """Do every mount of a container's root (in the child's own mount
    namespace) and return the root path, ready for `pivot`."""
    rootprop = spec.get("rootfs_propagation") or "rslave"
    libc.mount(None, "/", None, PROPAGATION[rootprop] | libc.MS_REC)
    rf = spec["rootfs"]
    root: str = rf["target"]
    mount_overlay(rf["lower"], rf["upper"], rf["work"], root)
    # pivot_root refuses a new root, or a parent of it, that is shared (as
    # everything is with rshared propagation): the overlay and the root's own
    # bind mount are private; the CRI mounts below keep their propagation
    libc.mount(None, root, None, libc.MS_PRIVATE)
    libc.mount(root, root, None, libc.MS_BIND | libc.MS_REC)
    libc.mount(None, root, None, libc.MS_PRIVATE)
    setup_proc_sys(root, readonly_sys=not spec.get("privileged"))
    setup_dev(root, spec.get("shm"))
    for dev in spec.get("devices") or []:
        # a host device node, bound onto a file under the container's /dev
        bind_into(dev["host"], root, dev["container"], recursive=False)
    for dest, src in (spec.get("etc") or {}).items():
        if src and os.path.exists(src):
            bind_into(src, root, dest, recursive=False)
    for m in spec.get("mounts") or []:
        cri_mount(root, m)
    cwd = spec["process"].get("cwd") or "/"
    with contextlib.suppress(OSError):
        root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.close(safepath.ensure_dir_in_root(root_fd, cwd))
        finally:
            os.close(root_fd)
    if not spec.get("privileged"):
        mask_paths(root, spec.get("masked_paths", DEFAULT_MASKED))
        readonly_paths(root, spec.get("readonly_paths", DEFAULT_READONLY))
    return root


def remount_root_readonly() -> None:
    libc.mount(None, "/", None, libc.MS_BIND | libc.MS_REMOUNT | libc.MS_RDONLY | libc.MS_REC)


def exists_under(root: str, path: str) -> bool:
    return os.path.exists(secure_join(root, path))
