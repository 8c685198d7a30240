"""Volcano's pod webhook (validatepod.volcano.sh): a pod the batch scheduler
places may carry one job disruption budget annotation, a positive integer
or a percentage between 1% and 99%, in the webhook's words. Pods of other
schedulers are not looked at."""

from __future__ import annotations

import re
from typing import Any

from controlplane.client.errors import Invalid

MIN_AVAILABLE = "volcano.sh/jdb-min-available"
MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
KEYS = (MIN_AVAILABLE, MAX_UNAVAILABLE)
INT = re.compile(r"^[+-]?[0-9]+$")


def _check(key: str, value: str) -> None:
    """validateIntPercentageStr, with intstr.Parse's reading of the value."""
    if INT.match(value):
        if int(value) <= 0:
            raise Invalid(f'metadata.annotations: invalid value <"{value}"> for {key}, it must '
                          "be a positive integer")  # fmt: skip
        return
    digits = value.replace("%", "")
    if not INT.match(digits):
        raise Invalid(f'metadata.annotations: invalid value strconv.Atoi: parsing "{digits}": '
                      f"invalid syntax for {key}")  # fmt: skip
    if not 0 < int(digits) < 100:
        raise Invalid(f'metadata.annotations: invalid value <"{value}"> for {key}, it must be a '
                      "valid percentage which between 1% ~ 99%")  # fmt: skip


def admit(pod: dict[str, Any], scheduler_names: tuple[str, ...]) -> None:
    """On create: raises Invalid for a bad budget on a pod of `scheduler_names`."""
    spec = pod.get("spec") or {}
    if spec.get("schedulerName") not in scheduler_names:
        return
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    found = 0
    for key in KEYS:
        if key in annotations:
            found += 1
            _check(key, str(annotations[key]))
    if found > 1:
        raise Invalid(f"metadata.annotations: not allow configure multiple annotations "
                      f"<[{' '.join(KEYS)}]> at same time")  # fmt: skip
