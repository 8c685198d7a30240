"""An insertion-ordered map bounded by the bytes its entries hold: the
codec's caches of encodings (stored.py) and decodings (reused.py).

A reader looks entries up in `items` without the lock (one dictionary
lookup); `put` takes it, and drops the oldest entries past the budget. One
entry over a quarter of the budget is not kept: it would push out
everything else.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

ENTRY_OVERHEAD = 200  # the tuple, the key, the ordered dict's links


class Fifo:
    """Entries are tuples whose last item is the size `put` counted."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.items: OrderedDict[Any, tuple[Any, ...]] = OrderedDict()
        self.size = 0
        self._lock = threading.Lock()

    def put(self, key: Any, value: tuple[Any, ...], size: int) -> None:
        size += ENTRY_OVERHEAD
        if size > self.budget // 4:
            return
        with self._lock:
            old = self.items.pop(key, None)
            if old is not None:
                self.size -= old[-1]
            self.items[key] = (*value, size)
            self.size += size
            while self.size > self.budget:
                _, dropped = self.items.popitem(last=False)
                self.size -= dropped[-1]

    def clear(self) -> None:
        with self._lock:
            self.items.clear()
            self.size = 0
