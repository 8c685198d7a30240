"""crictl tests reuse the runtime tests' busybox rootfs fixture."""

from tests.linux.runtime.conftest import busybox_rootfs

__all__ = ["busybox_rootfs"]
