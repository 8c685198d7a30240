"""The runtime's CNI client: libcni's job, for any CNI plugin.

It reads the lexically first `.conflist`/`.conf`/`.json` file in the config
directory (a single-plugin `.conf` is treated as a list of one), finds each
plugin's executable by `type` in the bin directories, and runs the chain the
way libcni does: ADD in order with each result passed as the next plugin's
`prevResult`; DEL in reverse with the cached result as `prevResult`; CHECK
in order with the cached result; capabilities the plugin declares
(`portMappings`) passed as `runtimeConfig`; `CNI_ARGS` carrying
`IgnoreUnknown=1;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;
K8S_POD_INFRA_CONTAINER_ID=..;K8S_POD_UID=..` as the kubelet and containerd
do. The result of a successful ADD is cached (with the config it was made
with) under `<cache_dir>/results/`, so DEL and CHECK use what ADD used even
after the config directory changed, and DEL of something never set up, or
already torn down, succeeds.

Plugins always run as subprocesses: this module is imported by the
multi-threaded CRI server and must never fork by hand or switch namespaces.
A loopback plugin (`loopback` in a bin directory), when present, brings up
`lo` in the pod namespace before the network's chain runs.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from machinery.atomicfile import write_atomic

CACHE_KIND = "cniCacheV1"
CONF_EXTENSIONS = (".conf", ".conflist", ".json")
CRI_PROTOCOLS = {0: "tcp", 1: "udp", 2: "sctp"}  # runtime.v1 Protocol enum


class CNIError(Exception):
    """A plugin failed (its spec error JSON) or the configuration is unusable."""

    def __init__(self, msg: str, code: int = 999, details: str = "", plugin: str = "") -> None:
        super().__init__(f"{plugin + ': ' if plugin else ''}{msg}")
        self.code = code
        self.msg = msg
        self.details = details
        self.plugin = plugin


class NoNetworkConfig(CNIError):
    """The config directory holds no usable network configuration."""


@dataclass(frozen=True)
class NetworkConfigList:
    name: str
    cni_version: str
    plugins: list[dict[str, Any]]
    raw: bytes
    path: Path | None = None
    disable_check: bool = False


@dataclass(frozen=True)
class CNIResult:
    """What setup made: pod IPs (no prefix length), the raw CNI result."""

    ips: list[str]
    raw: dict[str, Any]
    cidrs: list[str] = field(default_factory=list)
    interfaces: list[dict[str, Any]] = field(default_factory=list)


def parse_config(data: bytes, path: Path | None = None) -> NetworkConfigList:
    """A `.conflist`, or a `.conf` as a list of one plugin."""
    try:
        conf = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise NoNetworkConfig(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(conf, dict):
        raise NoNetworkConfig(f"{path}: not a JSON object")
    name = conf.get("name")
    if not isinstance(name, str) or not name:
        raise NoNetworkConfig(f"{path}: no network name")
    version = str(conf.get("cniVersion", ""))
    if "plugins" in conf:
        plugins = conf["plugins"]
        if not isinstance(plugins, list) or not plugins:
            raise NoNetworkConfig(f"{path}: no plugins in the list")
        for p in plugins:
            if not isinstance(p, dict) or not p.get("type"):
                raise NoNetworkConfig(f"{path}: a plugin without a type")
        return NetworkConfigList(
            name, version, plugins, data, path, bool(conf.get("disableCheck", False))
        )
    if not conf.get("type"):
        raise NoNetworkConfig(f"{path}: no plugin type")
    return NetworkConfigList(name, version, [conf], data, path)


def load_config_dir(conf_dir: Path) -> NetworkConfigList:
    """The lexically first usable config file, as libcni's ConfFiles order."""
    try:
        names = sorted(
            n for n in os.listdir(conf_dir) if n.endswith(CONF_EXTENSIONS) and not n.startswith(".")
        )
    except FileNotFoundError:
        raise NoNetworkConfig(f"no network config directory {conf_dir}") from None
    if not names:
        raise NoNetworkConfig(f"no network config found in {conf_dir}")
    errors = []
    for n in names:
        path = conf_dir / n
        try:
            return parse_config(path.read_bytes(), path)
        except (NoNetworkConfig, OSError) as exc:
            errors.append(str(exc))
    raise NoNetworkConfig("; ".join(errors))


def _version(v: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return (0,)


class CNIClient:
    """Runs the configured network's plugin chain for pod sandboxes."""

    def __init__(
        self,
        conf_dir: Path,
        bin_dirs: list[Path],
        cache_dir: Path,
        timeout: float = 120.0,
        loopback: bool = True,
    ) -> None:
        self.conf_dir = Path(conf_dir)
        self.bin_dirs = [Path(d) for d in bin_dirs]
        self.cache_dir = Path(cache_dir)
        self.timeout = timeout
        self.loopback = loopback
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # -- public API --------------------------------------------------------

    def status(self) -> str | None:
        """None when the network is ready; otherwise why NetworkReady is false."""
        try:
            conf = load_config_dir(self.conf_dir)
        except NoNetworkConfig as exc:
            return f"cni config uninitialized: {exc.msg}"
        for p in conf.plugins:
            if self.find_plugin(str(p["type"])) is None:
                dirs = ", ".join(str(d) for d in self.bin_dirs)
                return f"cni plugin {p['type']!r} not found in {dirs}"
        return None

    def setup(
        self,
        sandbox_id: str,
        netns_path: str,
        ifname: str = "eth0",
        pod_name: str = "",
        pod_namespace: str = "",
        pod_uid: str = "",
        port_mappings: list[dict[str, Any]] | None = None,
    ) -> CNIResult:
        """ADD the sandbox to the network; on failure, undo what was done."""
        conf = load_config_dir(self.conf_dir)
        cni_args = self._cni_args(sandbox_id, pod_name, pod_namespace, pod_uid)
        caps = self._capability_args(port_mappings)
        with self._lock(sandbox_id):
            if self.loopback:
                self._loopback(conf, sandbox_id, netns_path, cni_args)
            prev: dict[str, Any] | None = None
            try:
                for plugin in conf.plugins:
                    prev = self._exec(
                        "ADD", conf, plugin, sandbox_id, netns_path, ifname, cni_args, caps, prev
                    )
            except BaseException:
                try:
                    self._del_chain(conf, sandbox_id, netns_path, ifname, cni_args, caps, prev)
                except CNIError:
                    pass  # the ADD error is the one to report
                raise
            result = prev or {}
            self._write_cache(conf, sandbox_id, ifname, cni_args, caps, result)
        return self._to_result(result)

    def teardown(
        self,
        sandbox_id: str,
        netns_path: str,
        ifname: str = "eth0",
        pod_name: str = "",
        pod_namespace: str = "",
        pod_uid: str = "",
        port_mappings: list[dict[str, Any]] | None = None,
    ) -> None:
        """DEL the sandbox from the network; succeeds if it is not attached."""
        with self._lock(sandbox_id):
            cached = self._read_cache(sandbox_id, ifname)
            if cached is not None:
                conf, cni_args, caps, result = cached
            else:
                try:
                    conf = load_config_dir(self.conf_dir)
                except NoNetworkConfig:
                    return  # nothing was set up through a config we can see
                cni_args = self._cni_args(sandbox_id, pod_name, pod_namespace, pod_uid)
                caps = self._capability_args(port_mappings)
                result = None
            if netns_path and not os.path.exists(netns_path):
                netns_path = ""  # plugins must clean up what they can without it
            self._del_chain(conf, sandbox_id, netns_path, ifname, cni_args, caps, result)
            self._remove_cache(conf.name, sandbox_id, ifname)

    def check(
        self,
        sandbox_id: str,
        netns_path: str,
        ifname: str = "eth0",
        pod_name: str = "",
        pod_namespace: str = "",
        pod_uid: str = "",
        port_mappings: list[dict[str, Any]] | None = None,
    ) -> None:
        """CHECK the attachment against the cached ADD result."""
        cached = self._read_cache(sandbox_id, ifname)
        if cached is None:
            raise CNIError(f"no cached result for sandbox {sandbox_id} {ifname}")
        conf, cni_args, caps, result = cached
        if _version(conf.cni_version) < (0, 4, 0) or conf.disable_check:
            return
        for plugin in conf.plugins:
            self._exec(
                "CHECK", conf, plugin, sandbox_id, netns_path, ifname, cni_args, caps, result
            )

    def gc(self, valid: list[tuple[str, str]]) -> None:
        """GC (CNI 1.1): drop every attachment but `valid` (sandbox id, ifname)."""
        conf = load_config_dir(self.conf_dir)
        keep = {(s, i) for s, i in valid}
        for path in self._cache_files(conf.name):
            try:
                entry = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if (entry.get("containerId"), entry.get("ifName")) not in keep:
                path.unlink(missing_ok=True)
        if _version(conf.cni_version) < (1, 1, 0):
            return
        attachments = [{"containerID": s, "ifname": i} for s, i in valid]
        for plugin in conf.plugins:
            extra = {"cni.dev/valid-attachments": attachments}
            self._exec("GC", conf, plugin, "", "", "", [], {}, None, extra)

    def find_plugin(self, kind: str) -> Path | None:
        if not kind or "/" in kind:
            return None
        for d in self.bin_dirs:
            path = d / kind
            if path.is_file() and os.access(path, os.X_OK):
                return path
        return None

    # -- chain -------------------------------------------------------------

    def _del_chain(
        self,
        conf: NetworkConfigList,
        sandbox_id: str,
        netns_path: str,
        ifname: str,
        cni_args: list[tuple[str, str]],
        caps: dict[str, Any],
        result: dict[str, Any] | None,
    ) -> None:
        errors: list[CNIError] = []
        for plugin in reversed(conf.plugins):
            try:
                self._exec(
                    "DEL", conf, plugin, sandbox_id, netns_path, ifname, cni_args, caps, result
                )
            except CNIError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _exec(
        self,
        command: str,
        conf: NetworkConfigList,
        plugin: dict[str, Any],
        sandbox_id: str,
        netns_path: str,
        ifname: str,
        cni_args: list[tuple[str, str]],
        caps: dict[str, Any],
        prev: dict[str, Any] | None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        kind = str(plugin["type"])
        binary = self.find_plugin(kind)
        if binary is None:
            dirs = ", ".join(str(d) for d in self.bin_dirs)
            raise CNIError(f"failed to find plugin {kind!r} in {dirs}", plugin=kind)
        stdin = self._plugin_config(conf, plugin, caps, prev, command, extra)
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("CNI_"):
                del env[key]
        env.update(
            CNI_COMMAND=command,
            CNI_CONTAINERID=sandbox_id,
            CNI_NETNS=netns_path,
            CNI_IFNAME=ifname,
            CNI_ARGS=";".join(f"{k}={v}" for k, v in cni_args),
            CNI_PATH=os.pathsep.join(str(d) for d in self.bin_dirs),
        )
        try:
            proc = subprocess.run(
                [str(binary)],
                input=json.dumps(stdin).encode(),
                env=env,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CNIError(f"{command} timed out after {self.timeout}s", plugin=kind) from None
        out = proc.stdout.strip()
        if proc.returncode != 0:
            try:
                err = json.loads(out)
                raise CNIError(
                    str(err.get("msg", "")) or f"{command} failed",
                    int(err.get("code", 999)),
                    str(err.get("details", "")),
                    plugin=kind,
                )
            except (ValueError, AttributeError, TypeError):
                text = (proc.stderr or proc.stdout).decode(errors="replace").strip()
                raise CNIError(
                    f"{command} failed (exit {proc.returncode}): {text}", plugin=kind
                ) from None
        if command != "ADD":
            return None
        try:
            result = json.loads(out) if out else {}
        except ValueError:
            raise CNIError(f"ADD printed an invalid result: {out[:200]!r}", plugin=kind) from None
        if not isinstance(result, dict):
            raise CNIError("ADD printed a result that is not an object", plugin=kind)
        return result

    def _plugin_config(
        self,
        conf: NetworkConfigList,
        plugin: dict[str, Any],
        caps: dict[str, Any],
        prev: dict[str, Any] | None,
        command: str,
        extra: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The plugin's own config with name, cniVersion, runtimeConfig and
        prevResult injected, as libcni's buildOneConfig does."""
        out = dict(plugin)
        out["name"] = conf.name
        out["cniVersion"] = conf.cni_version
        declared = plugin.get("capabilities") or {}
        runtime_config = {k: v for k, v in caps.items() if declared.get(k)}
        if runtime_config:
            out["runtimeConfig"] = {**(plugin.get("runtimeConfig") or {}), **runtime_config}
        if prev is not None and (command == "ADD" or _version(conf.cni_version) >= (0, 4, 0)):
            out["prevResult"] = prev
        if extra:
            out.update(extra)
        return out

    def _loopback(
        self,
        conf: NetworkConfigList,
        sandbox_id: str,
        netns_path: str,
        cni_args: list[tuple[str, str]],
    ) -> None:
        if self.find_plugin("loopback") is None:
            return
        version = conf.cni_version if _version(conf.cni_version) <= (1, 0, 0) else "1.0.0"
        lo = NetworkConfigList("cni-loopback", version, [{"type": "loopback"}], b"")
        self._exec("ADD", lo, lo.plugins[0], sandbox_id, netns_path, "lo", cni_args, {}, None)

    @staticmethod
    def _cni_args(
        sandbox_id: str, pod_name: str, pod_namespace: str, pod_uid: str
    ) -> list[tuple[str, str]]:
        args = [("IgnoreUnknown", "1")]
        if pod_namespace:
            args.append(("K8S_POD_NAMESPACE", pod_namespace))
        if pod_name:
            args.append(("K8S_POD_NAME", pod_name))
        args.append(("K8S_POD_INFRA_CONTAINER_ID", sandbox_id))
        if pod_uid:
            args.append(("K8S_POD_UID", pod_uid))
        for key, value in args:
            # `;` or `=` in a value would add pairs of the caller's choosing
            if not value.isprintable() or any(c in value for c in ";= "):
                raise ValueError(f"CNI_ARGS: {key} {value!r} may not hold ';', '=' or spaces")
        return args

    @staticmethod
    def _capability_args(port_mappings: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The portMappings capability: CNI keys (hostPort, containerPort,
        protocol, hostIP) or the CRI PortMapping's (host_port, container_port,
        protocol as name or enum number, host_ip); mappings without a host
        port are not port mappings."""
        caps: dict[str, Any] = {}
        out = []
        for m in port_mappings or []:
            host_port = int(m.get("hostPort", m.get("host_port")) or 0)
            if host_port <= 0:
                continue
            proto = m.get("protocol", "tcp")
            if isinstance(proto, int):
                proto = CRI_PROTOCOLS.get(proto, "tcp")
            entry: dict[str, Any] = {
                "hostPort": host_port,
                "containerPort": int(m.get("containerPort", m.get("container_port")) or 0),
                "protocol": str(proto or "tcp").lower(),
            }
            host_ip = m.get("hostIP", m.get("host_ip"))
            if host_ip:
                entry["hostIP"] = str(host_ip)
            out.append(entry)
        if out:
            caps["portMappings"] = out
        return caps

    @staticmethod
    def _to_result(result: dict[str, Any]) -> CNIResult:
        cidrs = [
            str(ip["address"])
            for ip in result.get("ips") or []
            if isinstance(ip, dict) and ip.get("address")
        ]
        return CNIResult(
            ips=[c.partition("/")[0] for c in cidrs],
            raw=result,
            cidrs=cidrs,
            interfaces=list(result.get("interfaces") or []),
        )

    # -- cache -------------------------------------------------------------

    def _lock(self, sandbox_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(sandbox_id, threading.Lock())

    def _cache_path(self, network: str, sandbox_id: str, ifname: str) -> Path:
        return self.cache_dir / "results" / f"{network}-{sandbox_id}-{ifname}"

    def _cache_files(self, network: str) -> list[Path]:
        d = self.cache_dir / "results"
        if not d.is_dir():
            return []
        return [p for p in d.iterdir() if p.name.startswith(network + "-")]

    def _write_cache(
        self,
        conf: NetworkConfigList,
        sandbox_id: str,
        ifname: str,
        cni_args: list[tuple[str, str]],
        caps: dict[str, Any],
        result: dict[str, Any],
    ) -> None:
        path = self._cache_path(conf.name, sandbox_id, ifname)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "kind": CACHE_KIND,
            "containerId": sandbox_id,
            "config": base64.b64encode(conf.raw).decode(),
            "ifName": ifname,
            "networkName": conf.name,
            "cniArgs": [list(a) for a in cni_args],
            "capabilityArgs": caps,
            "result": result,
        }
        write_atomic(path, json.dumps(entry), durable=True)

    def _read_cache(
        self, sandbox_id: str, ifname: str
    ) -> tuple[NetworkConfigList, list[tuple[str, str]], dict[str, Any], dict[str, Any]] | None:
        d = self.cache_dir / "results"
        if not d.is_dir():
            return None
        suffix = f"-{sandbox_id}-{ifname}"
        for path in sorted(d.iterdir()):
            if not path.name.endswith(suffix):
                continue
            try:
                entry = json.loads(path.read_text())
                if entry.get("containerId") != sandbox_id or entry.get("ifName") != ifname:
                    continue
                conf = parse_config(base64.b64decode(entry["config"]))
            except (OSError, ValueError, KeyError, CNIError):
                continue
            args = [(str(k), str(v)) for k, v in entry.get("cniArgs") or []]
            return conf, args, dict(entry.get("capabilityArgs") or {}), entry.get("result") or {}
        return None

    def _remove_cache(self, network: str, sandbox_id: str, ifname: str) -> None:
        self._cache_path(network, sandbox_id, ifname).unlink(missing_ok=True)
