"""How a sandbox or container record keeps its CRI config: serialized and
base64-encoded (so that the records need no protobuf), and decoded once per
distinct config when read back."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)


def encode(cfg: Message) -> str:
    return base64.b64encode(cfg.SerializeToString()).decode()


def cached_decoder(message: type[M], maxsize: int) -> Callable[[str], M]:
    """A decoder of what `encode` kept; each config is decoded once and the
    message shared, so callers must not change it."""

    @functools.lru_cache(maxsize=maxsize)
    def decode(config_b64: str) -> M:
        cfg = message()
        cfg.ParseFromString(base64.b64decode(config_b64))
        return cfg

    return decode
