"""Pod Security levels, policy versions and a namespace's policy from its labels.

As k8s.io/pod-security-admission/api: a level is `privileged`, `baseline`
or `restricted`; a version `latest` or `v1.N`; a namespace's policy is its
enforce, audit and warn (level, version) pairs from the labels
`pod-security.kubernetes.io/<mode>[-version]`, each falling back to the
configured default. A label that does not parse is an error naming the
label (a Namespace with one is refused on create, 422), and the policy to
evaluate meanwhile fails closed for enforce (`restricted`, `latest`) and
open for audit and warn (`privileged`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
LATEST = "latest"

LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")

_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class Version:
    """A policy version: v1.minor, or latest (newer than every v1.N)."""

    minor: int = 0
    latest: bool = False

    def __str__(self) -> str:
        return LATEST if self.latest else f"v1.{self.minor}"

    def older(self, other: Version) -> bool:
        if self.latest:
            return False
        return other.latest or self.minor < other.minor


LATEST_VERSION = Version(latest=True)


def v1(minor: int) -> Version:
    return Version(minor)


@dataclass(frozen=True)
class LevelVersion:
    level: str
    version: Version

    def __str__(self) -> str:
        return f"{self.level}:{self.version}"


@dataclass(frozen=True)
class Policy:
    enforce: LevelVersion
    audit: LevelVersion
    warn: LevelVersion

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level

    def equivalent(self, other: Policy) -> bool:
        """Same decisions: levels equal, versions equal where the level is not privileged."""
        return all(
            a.level == b.level and (a.level == PRIVILEGED or a.version == b.version)
            for a, b in ((self.enforce, other.enforce), (self.audit, other.audit),
                         (self.warn, other.warn))
        )  # fmt: skip


PRIVILEGED_LATEST = LevelVersion(PRIVILEGED, LATEST_VERSION)
DEFAULT_POLICY = Policy(PRIVILEGED_LATEST, PRIVILEGED_LATEST, PRIVILEGED_LATEST)


class LevelError(ValueError):
    pass


def parse_level(value: str) -> str:
    if value in LEVELS:
        return value
    raise LevelError(f"must be one of {', '.join(LEVELS)}")


def parse_version(value: str) -> Version:
    if value == LATEST:
        return LATEST_VERSION
    matched = _VERSION.match(value)
    if matched is None:
        raise LevelError('must be "latest" or "v1.x"')
    return Version(int(matched.group(1)))


def compare_levels(a: str, b: str) -> int:
    """-1, 0 or 1 as `a` is less, as or more strict than `b`."""
    return (LEVELS.index(a) > LEVELS.index(b)) - (LEVELS.index(a) < LEVELS.index(b))


@dataclass(frozen=True)
class LabelError:
    """One label that does not parse: Kubernetes' field error."""

    label: str
    value: str
    detail: str

    @property
    def field(self) -> str:
        return f"metadata.labels[{self.label}]"

    def __str__(self) -> str:
        return f'{self.field}: Invalid value: "{self.value}": {self.detail}'


def policy_to_evaluate(
    labels: Mapping[str, str] | None, defaults: Policy
) -> tuple[Policy, list[LabelError]]:
    """The namespace's policy and the labels that did not parse (see the module docstring)."""
    if not labels:
        return defaults, []
    errors: list[LabelError] = []
    modes = {"enforce": defaults.enforce, "audit": defaults.audit, "warn": defaults.warn}
    for mode in MODES:
        level, version = modes[mode].level, modes[mode].version
        key = LABEL_PREFIX + mode
        if key in labels:
            value = str(labels[key])
            try:
                level = parse_level(value)
            except LevelError as err:
                errors.append(LabelError(key, value, str(err)))
                level = RESTRICTED if mode == "enforce" else PRIVILEGED
        key = LABEL_PREFIX + mode + "-version"
        if key in labels:
            value = str(labels[key])
            try:
                version = parse_version(value)
            except LevelError as err:
                errors.append(LabelError(key, value, str(err)))
                version = LATEST_VERSION
        modes[mode] = LevelVersion(level, version)
    return Policy(modes["enforce"], modes["audit"], modes["warn"]), errors
