"""Image garbage collection, as the kubelet's image GC manager does it.

When the image filesystem is used at or above `--image-gc-high-threshold`
percent (85), images are removed, least recently used first, until usage
is down to `--image-gc-low-threshold` (80). An image is never removed while
a container (in any state) uses it, nor before it has been known for
`--image-minimum-gc-age` (2m), nor if the runtime pins it. "Used" means a
container of it existed at an observation; an image first seen counts as
used then. The policy is pure (`images_to_free`); `ImageTracker` keeps the
first-seen and last-used times between observations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageGCPolicy:
    high_threshold: int = 85
    low_threshold: int = 80
    minimum_age: float = 120.0

    def __post_init__(self) -> None:
        if not 0 <= self.low_threshold <= 100:
            raise ValueError(f"--image-gc-low-threshold {self.low_threshold}: must be in [0, 100]")
        if not 0 <= self.high_threshold <= 100:
            raise ValueError(
                f"--image-gc-high-threshold {self.high_threshold}: must be in [0, 100]"
            )
        if self.low_threshold > self.high_threshold:
            raise ValueError(
                f"--image-gc-low-threshold {self.low_threshold} must not exceed"
                f" --image-gc-high-threshold {self.high_threshold}"
            )


@dataclass(frozen=True)
class ImageRecord:
    id: str
    size: int
    first_seen: float
    last_used: float
    pinned: bool = False


@dataclass(frozen=True)
class FsUsage:
    capacity: int
    available: int

    @property
    def percent_used(self) -> float:
        return 100.0 * (self.capacity - self.available) / self.capacity if self.capacity else 0.0


def bytes_to_free(fs: FsUsage, policy: ImageGCPolicy) -> int:
    """0 below the high threshold; else what brings usage to the low one."""
    if fs.capacity <= 0 or fs.percent_used < policy.high_threshold:
        return 0
    target_available = fs.capacity * (100 - policy.low_threshold) // 100
    return max(0, target_available - fs.available)


def images_to_free(
    images: Sequence[ImageRecord], in_use: set[str], amount: int, now: float, policy: ImageGCPolicy
) -> list[ImageRecord]:
    """Images to remove, least recently used first, until `amount` bytes."""
    if amount <= 0:
        return []
    candidates = sorted(
        (
            i
            for i in images
            if i.id not in in_use and not i.pinned and now - i.first_seen >= policy.minimum_age
        ),
        key=lambda i: (i.last_used, i.first_seen, i.id),
    )
    out, freed = [], 0
    for image in candidates:
        if freed >= amount:
            break
        out.append(image)
        freed += image.size
    return out


class ImageTracker:
    """First-seen and last-used times of the runtime's images."""

    def __init__(self) -> None:
        self._first: dict[str, float] = {}
        self._used: dict[str, float] = {}

    def observe(
        self, images: Iterable[tuple[str, int, bool]], in_use: set[str], now: float
    ) -> list[ImageRecord]:
        """(id, size, pinned) of every image now, the ids containers use."""
        out = []
        seen = set()
        for image_id, size, pinned in images:
            seen.add(image_id)
            first = self._first.setdefault(image_id, now)
            if image_id in in_use or image_id not in self._used:
                self._used[image_id] = now
            out.append(ImageRecord(image_id, size, first, self._used[image_id], pinned))
        for gone in set(self._first) - seen:
            self._first.pop(gone, None)
            self._used.pop(gone, None)
        return out
