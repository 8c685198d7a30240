"""Run a delegated plugin (the IPAM named in `ipam.type`) as the CNI spec
says: found in CNI_PATH, same environment and stdin, result or error JSON
on stdout. `skiff-ipam` itself is called in-process (same code, same
semantics) to save an interpreter start per ADD/DEL."""

from __future__ import annotations

from runtime.cni import fastjson, ipam, oslib
from runtime.cni.skel import GENERIC, INVALID_CONFIG, Args, CNIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OWN_IPAM = "skiff-ipam"


def find(plugin: str, path: list[str]) -> str:
    if not plugin or "/" in plugin:
        raise CNIError(INVALID_CONFIG, f"invalid plugin type {plugin!r}")
    for d in path:
        candidate = oslib.join(d, plugin)
        if oslib.is_executable_file(candidate):
            return candidate
    raise CNIError(GENERIC, f"failed to find plugin {plugin!r} in path {path}")


def _exec(args: Args, command: str) -> dict[str, Any] | None:
    kind = str((args.conf.get("ipam") or {}).get("type", ""))
    binary = find(kind, args.path)
    env = oslib.environ()
    env["CNI_COMMAND"] = command
    rc, out, _err = oslib.run([binary], args.raw, env)
    text = out.strip()
    if rc != 0:
        try:
            data = fastjson.loads(text)
            raise CNIError(
                int(data.get("code", GENERIC)),
                str(data.get("msg", "")),
                str(data.get("details", "")),
            )
        except ValueError:
            raise CNIError(
                GENERIC, f"{kind} {command} failed (exit {rc})", _err.decode(errors="replace")
            ) from None
    if not text:
        return None
    result = fastjson.loads(text)
    return result if isinstance(result, dict) else None


def ipam_type(args: Args) -> str:
    ipam_conf = args.conf.get("ipam")
    if not isinstance(ipam_conf, dict) or not ipam_conf.get("type"):
        raise CNIError(INVALID_CONFIG, "network configuration has no ipam.type")
    return str(ipam_conf["type"])


def ipam_add(args: Args) -> dict[str, Any]:
    if ipam_type(args) == OWN_IPAM:
        return ipam.allocate(args.conf, args.container_id, args.ifname, args.args)
    result = _exec(args, "ADD")
    if not result or not result.get("ips"):
        raise CNIError(GENERIC, "IPAM plugin returned no IP configuration")
    return result


def ipam_del(args: Args) -> None:
    if ipam_type(args) == OWN_IPAM:
        ipam.release(args.conf, args.container_id, args.ifname)
    else:
        _exec(args, "DEL")


def ipam_check(args: Args) -> None:
    if ipam_type(args) == OWN_IPAM:
        ipam.check(args.conf, args.container_id, args.ifname)
    else:
        _exec(args, "CHECK")


def ipam_gc(args: Args) -> None:
    if ipam_type(args) == OWN_IPAM:
        ipam.gc(args.conf)
    else:
        _exec(args, "GC")


def ipam_status(args: Args) -> None:
    if ipam_type(args) == OWN_IPAM:
        ipam.parse_range_sets(args.conf.get("ipam") or {})
    else:
        _exec(args, "STATUS")
