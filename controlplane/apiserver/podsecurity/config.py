"""The PodSecurity plugin's configuration: defaults and exemptions.

kube-apiserver reads it from `--admission-control-config-file`, an
AdmissionConfiguration (apiserver.config.k8s.io/v1) whose `plugins` entry
named `PodSecurity` holds a PodSecurityConfiguration
(pod-security.admission.config.k8s.io/v1, v1beta1 or v1alpha1) inline under
`configuration`, or in the file its `path` names (relative to the
AdmissionConfiguration's directory):

    defaults:   {enforce: baseline, enforce-version: latest, audit: ..., warn: ...}
    exemptions: {usernames: [...], runtimeClasses: [...], namespaces: [...]}

Without a file (or without a PodSecurity entry in it) the defaults are k3s'
and Kubernetes': every mode `privileged:latest`; kube-system is exempt, as
k3s exempts it. A file that does not parse, or names a bad level, version or
exemption, stops the control plane at start with the field named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.api.dnsnames import is_dns_label, is_dns_subdomain
from controlplane.apiserver.podsecurity.levels import (
    LATEST,
    MODES,
    LevelError,
    LevelVersion,
    Policy,
    parse_level,
    parse_version,
)

PLUGIN = "PodSecurity"
ADMISSION_KINDS = {"apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1alpha1"}
CONFIG_VERSIONS = {f"pod-security.admission.config.k8s.io/{v}" for v in ("v1", "v1beta1",
                                                                           "v1alpha1")}  # fmt: skip
DEFAULT_EXEMPT_NAMESPACES = ("kube-system",)


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file and field."""


@dataclass(frozen=True)
class PodSecurityConfig:
    defaults: Policy
    exempt_usernames: frozenset[str] = field(default_factory=frozenset)
    exempt_runtime_classes: frozenset[str] = field(default_factory=frozenset)
    exempt_namespaces: frozenset[str] = field(default_factory=frozenset)


def default_config() -> PodSecurityConfig:
    return parse_configuration({"kind": "PodSecurityConfiguration",
                                "apiVersion": "pod-security.admission.config.k8s.io/v1",
                                "exemptions": {"namespaces": list(DEFAULT_EXEMPT_NAMESPACES)}},
                               "built-in defaults")  # fmt: skip


def parse_configuration(doc: Any, source: str) -> PodSecurityConfig:
    """A PodSecurityConfiguration document; ConfigError naming `source` and the field."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{source}: a PodSecurityConfiguration must be a mapping")
    if (
        doc.get("kind") != "PodSecurityConfiguration"
        or doc.get("apiVersion") not in CONFIG_VERSIONS
    ):
        raise ConfigError(
            f"{source}: expected kind PodSecurityConfiguration of "
            f"{', '.join(sorted(CONFIG_VERSIONS))}, got {doc.get('kind')!r} {doc.get('apiVersion')!r}"
        )
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{source}: defaults: must be a mapping")
    modes: dict[str, LevelVersion] = {}
    for mode in MODES:
        values = {mode: str(defaults.get(mode, "privileged")),
                  f"{mode}-version": str(defaults.get(f"{mode}-version", LATEST))}  # fmt: skip
        key = mode
        try:
            level = parse_level(values[key])
            key = f"{mode}-version"
            modes[mode] = LevelVersion(level, parse_version(values[key]))
        except LevelError as err:
            raise ConfigError(
                f'{source}: defaults.{key}: Invalid value: "{values[key]}": {err}'
            ) from None
    exemptions = doc.get("exemptions") or {}
    if not isinstance(exemptions, Mapping):
        raise ConfigError(f"{source}: exemptions: must be a mapping")
    lists: dict[str, frozenset[str]] = {}
    for key, valid in (("usernames", lambda s: bool(s)), ("namespaces", is_dns_label),
                       ("runtimeClasses", is_dns_subdomain)):  # fmt: skip
        items = exemptions.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(f"{source}: exemptions.{key}: must be a list")
        seen: set[str] = set()
        for i, value in enumerate(items):
            if not isinstance(value, str) or not valid(value):
                raise ConfigError(f'{source}: exemptions.{key}[{i}]: Invalid value: "{value}"')
            if value in seen:
                raise ConfigError(f'{source}: exemptions.{key}[{i}]: Duplicate value: "{value}"')
            seen.add(value)
        lists[key] = frozenset(seen)
    return PodSecurityConfig(Policy(modes["enforce"], modes["audit"], modes["warn"]),
                             lists["usernames"], lists["runtimeClasses"], lists["namespaces"])  # fmt: skip


def load(path: Path | None) -> PodSecurityConfig:
    """The configuration from an AdmissionConfiguration file, or the defaults (None)."""
    if path is None:
        return default_config()
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: {err}") from None
    if not isinstance(doc, Mapping) or doc.get("kind") != "AdmissionConfiguration":
        raise ConfigError(f"{path}: expected kind AdmissionConfiguration")
    if doc.get("apiVersion") not in ADMISSION_KINDS:
        raise ConfigError(f"{path}: apiVersion {doc.get('apiVersion')!r} is not one of "
                          f"{', '.join(sorted(ADMISSION_KINDS))}")  # fmt: skip
    plugins = doc.get("plugins") or []
    if not isinstance(plugins, list):
        raise ConfigError(f"{path}: plugins: must be a list")
    for i, plugin in enumerate(plugins):
        if not isinstance(plugin, Mapping) or plugin.get("name") != PLUGIN:
            continue
        where = f"{path}: plugins[{i}]"
        if plugin.get("configuration") is not None:
            return parse_configuration(plugin["configuration"], f"{where}.configuration")
        if plugin.get("path"):
            target = (path.parent / str(plugin["path"])).resolve()
            try:
                inner = yaml.safe_load(target.read_text())
            except (OSError, yaml.YAMLError) as err:
                raise ConfigError(f"{where}.path: {err}") from None
            return parse_configuration(inner, str(target))
        raise ConfigError(f"{where}: needs configuration or path")
    return default_config()
