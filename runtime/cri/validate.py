"""Validation of CRI request fields at the RPC boundary, before anything
reaches a file, a command line, a CNI plugin or a rule script.

Each check raises `runtime.errors.InvalidArgument` naming the field and the
problem. The rules accept everything Kubernetes admits (DNS-1123 names, IP
addresses, relative log paths), so a pod the API server admits always
passes. Pure functions: no I/O.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from proto.runtime.v1 import api_pb2
from runtime import errors

# A name that goes into CNI_ARGS, a path and a log directory: what
# Kubernetes admits (DNS-1123 labels and subdomains) plus the upper case and
# '_' that CRI clients such as critest use; never ';', '=', '/' or spaces.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
# a pod UID: Kubernetes makes UUIDs, static pods a hash; any safe token
_UID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def no_control(field: str, value: str) -> None:
    if _CONTROL.search(value):
        raise errors.InvalidArgument(f"{field} {value!r} contains control characters")


def name(field: str, value: str) -> None:
    if not value or len(value) > 253 or not _NAME.fullmatch(value):
        raise errors.InvalidArgument(
            f"{field} {value!r} is not a valid name (letters, digits, '-', '.' and '_', "
            "starting and ending with a letter or digit, at most 253 characters)"
        )


def relative_path(field: str, value: str) -> None:
    """A path that must stay under the directory it is joined to."""
    no_control(field, value)
    if value.startswith("/") or ".." in value.split("/"):
        raise errors.InvalidArgument(f"{field} {value!r} must be relative, without '..'")


_ZONE = re.compile(r"[A-Za-z0-9_.\-]{1,15}")  # an IPv6 zone: an interface name or index


def ip_address(field: str, value: str) -> None:
    """An IP address; an IPv6 scope zone (`fe80::1%eth0`) must be an interface
    name (Python's parser takes any text there, a newline included, which
    would end the resolv.conf or hosts line it is written into)."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        raise errors.InvalidArgument(f"{field} {value!r} is not an IP address") from None
    _, percent, zone = value.partition("%")
    if percent and not _ZONE.fullmatch(zone):
        raise errors.InvalidArgument(
            f"{field} {value!r}: the zone of an IPv6 address must be an interface name"
        )


def hostname(field: str, value: str) -> None:
    """Written into /etc/hosts and set with sethostname(2) (64 bytes)."""
    if len(value) > 64 or not _NAME.fullmatch(value):
        raise errors.InvalidArgument(
            f"{field} {value!r} is not a valid hostname "
            "(letters, digits, '-', '.' and '_', at most 64 characters)"
        )


def cgroup_parent(field: str, value: str) -> None:
    no_control(field, value)
    parts = value.split("/")
    if ".." in parts or "." in parts:
        raise errors.InvalidArgument(f"{field} {value!r} must not contain '.' or '..'")


def _all_no_control(field: str, values: Iterable[str]) -> None:
    for v in values:
        no_control(field, v)


def sandbox_config(cfg: api_pb2.PodSandboxConfig) -> None:
    """Every field of a RunPodSandbox config that reaches a file, CNI_ARGS, a
    path or a rule script."""
    md = cfg.metadata
    name("metadata.name", md.name)
    name("metadata.namespace", md.namespace)
    if not _UID.fullmatch(md.uid):
        raise errors.InvalidArgument(
            f"metadata.uid {md.uid!r} may hold only letters, digits, '.', '_' and '-'"
        )
    if cfg.hostname:
        hostname("hostname", cfg.hostname)
    if cfg.log_directory:
        no_control("log_directory", cfg.log_directory)
        if not cfg.log_directory.startswith("/") or ".." in cfg.log_directory.split("/"):
            raise errors.InvalidArgument(
                f"log_directory {cfg.log_directory!r} must be absolute, without '..'"
            )
    for server in cfg.dns_config.servers:
        ip_address("dns_config.servers", server)
    _all_no_control("dns_config.searches", cfg.dns_config.searches)
    for s in cfg.dns_config.searches:
        if " " in s:
            raise errors.InvalidArgument(f"dns_config.searches {s!r} contains a space")
    _all_no_control("dns_config.options", cfg.dns_config.options)
    for i, p in enumerate(cfg.port_mappings):
        field = f"port_mappings[{i}]"
        if p.host_ip:
            ip_address(f"{field}.host_ip", p.host_ip)
        if not 0 <= p.host_port <= 65535 or not 0 <= p.container_port <= 65535:
            raise errors.InvalidArgument(f"{field}: ports must be in 0..65535")
    if cfg.linux.cgroup_parent:
        cgroup_parent("linux.cgroup_parent", cfg.linux.cgroup_parent)
    for k, v in cfg.linux.sysctls.items():
        no_control("linux.sysctls", k)
        no_control(f"linux.sysctls[{k}]", v)
    no_control(
        "linux.security_context.seccomp.localhost_ref",
        cfg.linux.security_context.seccomp.localhost_ref,
    )


def container_config(cfg: api_pb2.ContainerConfig) -> None:
    """Every field of a CreateContainer config that reaches a file, a path or
    a command line."""
    name("metadata.name", cfg.metadata.name)
    no_control("image.image", cfg.image.image)
    if cfg.log_path:
        relative_path("log_path", cfg.log_path)
    no_control("working_dir", cfg.working_dir)
    for e in cfg.envs:
        if not e.key or "=" in e.key or "\0" in e.key:
            raise errors.InvalidArgument(f"envs: invalid variable name {e.key!r}")
    for i, m in enumerate(cfg.mounts):
        no_control(f"mounts[{i}].container_path", m.container_path)
        no_control(f"mounts[{i}].host_path", m.host_path)
    sc = cfg.linux.security_context
    # (a localhost profile's path is confined to the profile root where it
    # is read: runtime.cri.seccomp_profiles)
    no_control("linux.security_context.seccomp.localhost_ref", sc.seccomp.localhost_ref)
    no_control("linux.security_context.seccomp_profile_path", sc.seccomp_profile_path)
    if sc.run_as_username:
        no_control("linux.security_context.run_as_username", sc.run_as_username)
