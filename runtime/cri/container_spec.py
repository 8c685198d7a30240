"""Turning a CRI ContainerConfig plus the image config and the sandbox into
the monitor's spec: command and args merged as the CRI defines, env,
working dir, user, capabilities, mounts with propagation, masked and
read-only paths, seccomp, resources.

Pure functions: no I/O except reading a localhost seccomp profile; refused
input raises `runtime.errors.InvalidArgument`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from proto.runtime.v1 import api_pb2
from runtime import errors
from runtime.linux import caps, cgroups, mounts

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PROPAGATION = {
    api_pb2.PROPAGATION_PRIVATE: "rprivate",
    api_pb2.PROPAGATION_HOST_TO_CONTAINER: "rslave",
    api_pb2.PROPAGATION_BIDIRECTIONAL: "rshared",
}


def command(config: api_pb2.ContainerConfig, image_config: dict[str, Any]) -> list[str]:
    """CRI: `command` replaces the image Entrypoint (and drops its Cmd);
    `args` replaces the image Cmd."""
    entrypoint = list(image_config.get("Entrypoint") or [])
    cmd = list(image_config.get("Cmd") or [])
    if config.command:
        argv = list(config.command) + list(config.args)
    else:
        argv = entrypoint + (list(config.args) if config.args else cmd)
    if not argv:
        raise errors.InvalidArgument(
            "no command specified: neither the config nor the image names one"
        )
    return argv


def environment(config: api_pb2.ContainerConfig, image_config: dict[str, Any]) -> list[str]:
    env: dict[str, str] = {}
    for kv in image_config.get("Env") or []:
        key, _, val = str(kv).partition("=")
        env[key] = val
    for item in config.envs:
        # our api.proto declares KeyValue.value as bytes (upstream: string);
        # the wire format is the same, so accept both
        value: str | bytes = item.value
        env[item.key] = value.decode(errors="replace") if isinstance(value, bytes) else value
    env.setdefault("PATH", DEFAULT_PATH)
    return [f"{k}={v}" for k, v in env.items()]


def user(sc: api_pb2.LinuxContainerSecurityContext, image_config: dict[str, Any]) -> dict[str, Any]:
    """The user to run as: the security context wins, else the image's
    `User` ("uid", "name", "uid:gid", "name:group")."""
    has_user = sc.HasField("run_as_user") or bool(sc.run_as_username)
    if sc.HasField("run_as_group") and not has_user:
        raise errors.InvalidArgument("run_as_group is set without run_as_user or run_as_username")
    out: dict[str, Any] = {"groups": list(sc.supplemental_groups)}
    if sc.HasField("run_as_user"):
        out["uid"] = sc.run_as_user.value
    elif sc.run_as_username:
        out["username"] = sc.run_as_username
    else:
        spec = str(image_config.get("User") or "")
        name, _, group = spec.partition(":")
        if name.isdigit():
            out["uid"] = int(name)
        elif name:
            out["username"] = name
        if group.isdigit():
            out["gid"] = int(group)
        elif group:
            out["groupname"] = group
    if sc.HasField("run_as_group"):
        out["gid"] = sc.run_as_group.value
        out.pop("groupname", None)
    return out


def mount_list(config: api_pb2.ContainerConfig) -> tuple[list[dict[str, Any]], str]:
    out: list[dict[str, Any]] = []
    root_prop = "rprivate"
    for m in config.mounts:
        if not m.container_path or not m.container_path.startswith("/"):
            raise errors.InvalidArgument(
                f"mount container_path {m.container_path!r} must be absolute"
            )
        if not m.host_path:
            raise errors.InvalidArgument(f"mount for {m.container_path!r} has no host_path")
        if not os.path.exists(m.host_path):
            raise errors.InvalidArgument(f"mount source {m.host_path!r} does not exist")
        prop = PROPAGATION.get(m.propagation, "rprivate")
        if prop == "rshared":
            root_prop = "rshared"
        elif prop == "rslave" and root_prop != "rshared":
            root_prop = "rslave"
        out.append(
            {
                "source": m.host_path,
                "target": m.container_path,
                "readonly": m.readonly,
                "propagation": prop,
            }
        )
    return out, root_prop


def resources(res: api_pb2.LinuxContainerResources, pids_limit: int) -> cgroups.Resources:
    if (
        res.memory_limit_in_bytes < 0
        or res.cpu_quota < -1
        or res.cpu_shares < 0
        or res.cpu_period < 0
    ):
        raise errors.InvalidArgument("negative resource value")
    return cgroups.Resources(
        cpu_shares=res.cpu_shares,
        cpu_quota=res.cpu_quota if res.cpu_quota > 0 else 0,
        cpu_period=res.cpu_period,
        cpuset_cpus=res.cpuset_cpus,
        cpuset_mems=res.cpuset_mems,
        memory_limit=res.memory_limit_in_bytes,
        pids_limit=pids_limit,
        hugepage_limits={h.page_size: h.limit for h in res.hugepage_limits},
    )


def resources_to_json(r: cgroups.Resources, oom_score_adj: int) -> dict[str, Any]:
    return {
        "cpu_shares": r.cpu_shares,
        "cpu_quota": r.cpu_quota,
        "cpu_period": r.cpu_period,
        "cpuset_cpus": r.cpuset_cpus,
        "cpuset_mems": r.cpuset_mems,
        "memory_limit": r.memory_limit,
        "oom_score_adj": oom_score_adj,
    }


def capabilities(sc: api_pb2.LinuxContainerSecurityContext) -> list[str]:
    try:
        return caps.compute(
            list(sc.capabilities.add_capabilities),
            list(sc.capabilities.drop_capabilities),
            sc.privileged,
        )
    except caps.UnknownCapability as exc:
        raise errors.InvalidArgument(str(exc)) from None


def masked_readonly(sc: api_pb2.LinuxContainerSecurityContext) -> tuple[list[str], list[str]]:
    if sc.privileged:
        return [], []
    masked = list(sc.masked_paths) or list(mounts.DEFAULT_MASKED)
    ro = list(sc.readonly_paths) or list(mounts.DEFAULT_READONLY)
    return masked, ro


def seccomp_profile(sc: api_pb2.LinuxContainerSecurityContext) -> str:
    """The profile name to apply: "" (unconfined), "runtime/default", or
    "localhost/<abs path>". The SecurityProfile message wins over the
    deprecated string field when set."""
    if sc.privileged:
        return ""
    if sc.HasField("seccomp"):
        p = sc.seccomp
        if p.profile_type == api_pb2.SecurityProfile.Unconfined:
            return ""
        if p.profile_type == api_pb2.SecurityProfile.Localhost:
            return "localhost/" + p.localhost_ref.removeprefix("localhost/")
        return "runtime/default"
    path = sc.seccomp_profile_path
    if path in ("", "unconfined"):
        return ""
    if path in ("runtime/default", "docker/default"):
        return "runtime/default"
    if path.startswith("localhost/"):
        return path
    raise errors.InvalidArgument(f"unsupported seccomp profile {path!r}")


APPARMOR_ENABLED = Path("/sys/module/apparmor/parameters/enabled")


def host_has_apparmor() -> bool:
    try:
        return APPARMOR_ENABLED.read_text().strip() == "Y"
    except OSError:
        return False


def apparmor_profile(sc: api_pb2.LinuxContainerSecurityContext, host_has: bool) -> str:
    """The AppArmor profile to run the process under ("" for none). A
    Localhost profile on a host without AppArmor is refused rather than
    ignored; RuntimeDefault there means none (as containerd does)."""
    name = ""
    if sc.HasField("apparmor"):
        if sc.apparmor.profile_type == api_pb2.SecurityProfile.Localhost:
            name = sc.apparmor.localhost_ref.removeprefix("localhost/")
            if not name:
                raise errors.InvalidArgument("apparmor: a Localhost profile needs localhost_ref")
    elif sc.apparmor_profile.startswith("localhost/"):
        name = sc.apparmor_profile.removeprefix("localhost/")
    elif sc.apparmor_profile not in ("", "unconfined", "runtime/default"):
        raise errors.InvalidArgument(f"apparmor_profile {sc.apparmor_profile!r} is not supported")
    if not name or sc.privileged:
        return ""
    if not name.isprintable() or len(name) > 255:
        raise errors.InvalidArgument(f"apparmor profile name {name!r} is not valid")
    if not host_has:
        raise errors.InvalidArgument(
            f"apparmor profile {name!r} requested, but AppArmor is not enabled on this host"
        )
    return name


def image_file(layers: list[Path], path: str) -> str:
    """Read `path` from the topmost image layer that has it (resolving
    symlinks inside that layer only); "" if none does. Reads, never writes."""
    for layer in reversed(layers):
        candidate = mounts.secure_join(str(layer), path)
        if os.path.isfile(candidate):
            try:
                return Path(candidate).read_text(errors="replace")
            except OSError:
                return ""
    return ""


def check_user(user_spec: dict[str, Any], layers: list[Path]) -> None:
    """Refuse at create time a user or group name the image does not know
    (the container child resolves them again, inside the rootfs)."""
    from runtime.linux import users

    name = user_spec.get("username")
    passwd = users.parse_passwd(image_file(layers, "/etc/passwd")) if name else []
    if name and not str(name).isdigit() and not any(p.name == name for p in passwd):
        raise errors.InvalidArgument(f"user {name!r} not found in the image's /etc/passwd")
    group = user_spec.get("groupname")
    if group and not any(
        g.name == group for g in users.parse_group(image_file(layers, "/etc/group"))
    ):
        raise errors.InvalidArgument(f"group {group!r} not found in the image's /etc/group")


def devices(config: api_pb2.ContainerConfig) -> list[dict[str, str]]:
    """CRI devices: host device nodes to bind into the container."""
    import stat

    out: list[dict[str, str]] = []
    for d in config.devices:
        if not d.host_path or not d.container_path.startswith("/"):
            raise errors.InvalidArgument(
                f"device {d.host_path!r} -> {d.container_path!r} is incomplete"
            )
        try:
            mode = os.stat(d.host_path).st_mode
        except OSError as exc:
            raise errors.InvalidArgument(f"device {d.host_path!r}: {exc.strerror}") from None
        if not (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
            raise errors.InvalidArgument(f"{d.host_path!r} is not a device")
        out.append(
            {"host": d.host_path, "container": d.container_path, "permissions": d.permissions}
        )
    return out


def device_rules(devs: list[dict[str, str]]) -> list[str]:
    """devices-cgroup rules for CRI devices: "c|b major:minor perms"."""
    import stat

    rules = []
    for d in devs:
        st = os.stat(d["host"])
        kind = "b" if stat.S_ISBLK(st.st_mode) else "c"
        perms = "".join(ch for ch in (d.get("permissions") or "rwm") if ch in "rwm") or "rwm"
        rules.append(f"{kind} {os.major(st.st_rdev)}:{os.minor(st.st_rdev)} {perms}")
    return rules
