"""ServiceAccount tokens for pods' projected volumes (the kubelet's token manager).

`TokenManager.get(pod, audience, seconds)` returns a bound token of the
pod's ServiceAccount, asking the API server (TokenRequest, bound to the
pod) only when it has none or the one it has is past 80% of its life, as
the kubelet does. A failed request (the account does not exist yet, the
API server is away) is logged and answered with None: the volume is written
without the token and the next refresh tries again, so a pod is never held
back by it. Tokens of pods that are gone are forgotten.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.client import errors
from controlplane.client.interface import ApiClient

log = logging.getLogger(__name__)

REFRESH_AT = 0.8  # of a token's life


class TokenManager:
    def __init__(self, api: ApiClient, now: Callable[[], float]) -> None:
        self._api = api
        self._now = now
        self._lock = threading.Lock()
        # (pod uid, audience, seconds) -> (token, refresh after)
        self._tokens: dict[tuple[str, str, int], tuple[str, float]] = {}

    def get(self, pod: Mapping[str, Any], audience: str, seconds: int) -> str | None:
        meta = pod["metadata"]
        key = (str(meta["uid"]), audience, seconds)
        now = self._now()
        with self._lock:
            held = self._tokens.get(key)
        if held is not None and now < held[1]:
            return held[0]
        ns = str(meta.get("namespace") or "default")
        account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
        spec: dict[str, Any] = {
            "expirationSeconds": seconds,
            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": meta["name"],
                               "uid": meta["uid"]},
        }  # fmt: skip
        if audience:
            spec["audiences"] = [audience]
        try:
            answer = self._api.create("TokenRequest", {"metadata": {"name": account},
                                                       "spec": spec}, ns)  # fmt: skip
        except errors.ApiError as err:
            log.warning("pod=%s/%s serviceaccount=%s token request failed: %s",
                        ns, meta["name"], account, err)  # fmt: skip
            return held[0] if held is not None else None
        token = str((answer.get("status") or {}).get("token") or "")
        if not token:
            return None
        with self._lock:
            self._tokens[key] = (token, now + REFRESH_AT * seconds)
        return token

    def forget(self, keep: set[str]) -> None:
        """Drop the tokens of pods whose uid is not in `keep`."""
        with self._lock:
            for key in [k for k in self._tokens if k[0] not in keep]:
                del self._tokens[key]
