"""The CNI skeleton: read `CNI_*` from the environment and the network
configuration from stdin, check both, call the plugin's handler for the
command, and print the result or the spec's error JSON.

Plugins (`main.py`, `ipam_main.py`) hand a `Plugin` to `run()` and never
parse the environment themselves. Errors are `CNIError(code, msg, details)`
with the spec's well-known codes; anything else a handler raises becomes
code 999 with the exception text. The skeleton never touches the network.
"""

from __future__ import annotations

import sys

from runtime.cni import fastjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Plugin(Protocol):
        def add(self, args: Args) -> dict[str, Any]: ...
        def delete(self, args: Args) -> None: ...
        def check(self, args: Args) -> None: ...
        def gc(self, args: Args) -> None: ...
        def status(self, args: Args) -> None: ...


# Well-known error codes (CNI spec, "Error" section).
INCOMPATIBLE_VERSION = 1
UNSUPPORTED_FIELD = 2
UNKNOWN_CONTAINER = 3
INVALID_ENV = 4
IO_FAILURE = 5
DECODE_FAILURE = 6
INVALID_CONFIG = 7
TRY_AGAIN_LATER = 11
PLUGIN_NOT_AVAILABLE = 50
LIMITED_CONNECTIVITY = 51
GENERIC = 999

SUPPORTED_VERSIONS = ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
LATEST = "1.1.0"

_REQUIRED = {
    "ADD": ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"),
    "CHECK": ("CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH"),
    "DEL": ("CNI_CONTAINERID", "CNI_IFNAME", "CNI_PATH"),
    "GC": ("CNI_PATH",),
    "STATUS": ("CNI_PATH",),
    "VERSION": (),
}
_MIN_VERSION = {"CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}


class CNIError(Exception):
    """An error the plugin reports as spec error JSON."""

    def __init__(self, code: int, msg: str, details: str = "") -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.details = details

    def to_json(self, cni_version: str) -> dict[str, Any]:
        out: dict[str, Any] = {"cniVersion": cni_version, "code": self.code, "msg": self.msg}
        if self.details:
            out["details"] = self.details
        return out


def version_tuple(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return (0,)


class Args:
    """One invocation: the CNI_* variables and the parsed configuration."""

    __slots__ = ("args", "command", "conf", "container_id", "ifname", "netns", "path", "raw")

    def __init__(
        self,
        command: str,
        container_id: str,
        netns: str,
        ifname: str,
        args: dict[str, str],
        path: list[str],
        conf: dict[str, Any],
        raw: bytes,
    ) -> None:
        self.command = command
        self.container_id = container_id
        self.netns = netns
        self.ifname = ifname
        self.args = args
        self.path = path
        self.conf = conf
        self.raw = raw

    @property
    def version(self) -> str:
        return str(self.conf.get("cniVersion", ""))

    @property
    def name(self) -> str:
        return str(self.conf.get("name", ""))


def parse_cni_args(value: str) -> dict[str, str]:
    """`K1=V1;K2=V2` into a dict; malformed pairs are an INVALID_ENV error."""
    out: dict[str, str] = {}
    for pair in value.split(";"):
        if not pair:
            continue
        key, sep, val = pair.partition("=")
        if not sep or not key or not pair.isprintable():
            raise CNIError(INVALID_ENV, f"CNI_ARGS: invalid pair {pair!r}")
        out[key] = val
    return out


def parse(env: dict[str, str], stdin: bytes) -> Args:
    command = env.get("CNI_COMMAND", "")
    if not command:
        raise CNIError(INVALID_ENV, "required env variable CNI_COMMAND is missing")
    if command not in _REQUIRED:
        raise CNIError(INVALID_ENV, f"unknown CNI_COMMAND: {command}")
    for key in _REQUIRED[command]:
        if not env.get(key):
            raise CNIError(INVALID_ENV, f"required env variable {key} is missing")
    ifname = env.get("CNI_IFNAME", "")
    if ifname and (len(ifname) > 15 or "/" in ifname or ifname in (".", "..") or " " in ifname):
        raise CNIError(INVALID_ENV, f"CNI_IFNAME {ifname!r} is not a valid interface name")
    try:
        conf = fastjson.loads(stdin) if stdin.strip() or command != "VERSION" else {}
    except ValueError as exc:
        raise CNIError(DECODE_FAILURE, f"failed to decode network configuration: {exc}") from None
    if not isinstance(conf, dict):
        raise CNIError(DECODE_FAILURE, "network configuration is not a JSON object")
    version = conf.get("cniVersion")
    if command != "VERSION":
        if not isinstance(version, str) or version not in SUPPORTED_VERSIONS:
            raise CNIError(
                INCOMPATIBLE_VERSION,
                "incompatible CNI versions",
                f"config is {version!r}, plugin supports {SUPPORTED_VERSIONS}",
            )
        need = _MIN_VERSION.get(command)
        if need and version_tuple(version) < version_tuple(need):
            raise CNIError(
                INCOMPATIBLE_VERSION,
                f"config version {version} does not allow {command}",
                f"{command} needs cniVersion >= {need}",
            )
        if command != "STATUS" and not isinstance(conf.get("name"), str):
            raise CNIError(INVALID_CONFIG, 'network configuration has no "name"')
    return Args(
        command,
        env.get("CNI_CONTAINERID", ""),
        env.get("CNI_NETNS", ""),
        env.get("CNI_IFNAME", ""),
        parse_cni_args(env.get("CNI_ARGS", "")),
        [p for p in env.get("CNI_PATH", "").split(":") if p],
        conf,
        stdin,
    )


def convert_result(result: dict[str, Any], version: str) -> dict[str, Any]:
    """A 1.x-shaped result in the shape of `version` (0.3.x/0.4.0 add
    `ips[].version`; 1.x drops it)."""
    out = dict(result)
    out["cniVersion"] = version
    old = version_tuple(version) < (1, 0, 0)
    ips = []
    for ip in result.get("ips", []):
        ip = dict(ip)
        if old:
            ip["version"] = "6" if ":" in str(ip.get("address", "")) else "4"
        else:
            ip.pop("version", None)
        ips.append(ip)
    if "ips" in result:
        out["ips"] = ips
    return out


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(fastjson.dumps(obj) + "\n")
    sys.stdout.flush()


def run(plugin: Plugin, env: dict[str, str] | None = None) -> int:
    """Handle one invocation; return the exit status."""
    if env is None:
        from runtime.cni.oslib import environ

        env = environ()
    version = LATEST
    try:
        stdin = sys.stdin.buffer.read()
        args = parse(env, stdin)
        version = args.version or LATEST
        if args.command == "VERSION":
            want = args.conf.get("cniVersion") or LATEST
            _emit({"cniVersion": want, "supportedVersions": SUPPORTED_VERSIONS})
            return 0
        if args.command == "ADD":
            _emit(convert_result(plugin.add(args), version))
        elif args.command == "DEL":
            plugin.delete(args)
        elif args.command == "CHECK":
            plugin.check(args)
        elif args.command == "GC":
            plugin.gc(args)
        elif args.command == "STATUS":
            plugin.status(args)
        return 0
    except CNIError as exc:
        _emit(exc.to_json(version if version in SUPPORTED_VERSIONS else LATEST))
        return 1
    except Exception as exc:
        err = CNIError(GENERIC, str(exc) or exc.__class__.__name__, exc.__class__.__name__)
        _emit(err.to_json(version if version in SUPPORTED_VERSIONS else LATEST))
        return 1
