"""The ingress `Config` as HAProxy's configuration (pure text), and HAProxy itself.

`render(cfg, settings)` gives the files: `haproxy.cfg` (one frontend on the
HTTP and HTTPS ports; a `use_backend` per route in Kubernetes' precedence
order; a backend per Service port; a 404 backend when no default backend),
`certs.list` (HAProxy's crt-list: the default certificate first, then each
Secret's certificate with its hosts as SNI filters) and the certificate
files. Paths and hosts that HAProxy's parser could misread are left out
(the API server refuses them anyway).

`HAProxy` runs the Debian binary in master-worker mode (`-W`): `apply()`
checks a configuration (`haproxy -c`) before it is used, so a bad one never
replaces a good one; a reload is SIGUSR2 to the master, whose new worker
takes the listening sockets over (`expose-fd listeners`) while the old one
finishes the requests in flight; `stop(drain=...)` lets them finish too.
Reloads go strictly one after another: the next SIGUSR2 waits until the
master catches it and the previous reload's worker answers on the stats
socket (HAProxy's master drops a SIGUSR2 that
comes mid-reload, and one that comes while it re-executes kills it). A
master left by an earlier agent (its pid file) is adopted, not started twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from agent.ingress.model import Config, Route
from agent.proxy.iptables import find_binary

log = logging.getLogger("skiff.agent.ingress")

_SAFE_PATH = re.compile(r"^/[A-Za-z0-9\-._~/%:@+=,;!*$]*$")
_SAFE_HOST = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


@dataclass(frozen=True)
class IngressSettings:
    state_dir: Path
    http_port: int = 80
    https_port: int = 443
    bind_address: str = ""  # "" every address
    binary: str = "haproxy"

    @property
    def config_path(self) -> Path:
        return self.state_dir / "haproxy.cfg"

    @property
    def pid_path(self) -> Path:
        return self.state_dir / "haproxy.pid"

    @property
    def socket_path(self) -> Path:
        return self.state_dir / "haproxy.sock"

    @property
    def cert_dir(self) -> Path:
        return self.state_dir / "certs"


def _host_acl(host: str) -> str:
    if not host:
        return ""
    if host.startswith("*."):
        pattern = "^[^.]+" + re.escape(host[1:]).replace("\\-", "-")
        return f"{{ var(txn.host) -m reg {pattern}$ }}"
    return f"{{ var(txn.host) -m str {host} }}"


def _conditions(r: Route) -> list[str]:
    """ORed condition groups of one route ([""] matches everything)."""
    host = _host_acl(r.host)
    if r.path_type == "Exact":
        paths = [f"{{ path {r.path} }}"]
    elif r.path == "/":
        paths = [""]
    else:
        paths = [f"{{ path {r.path} }}", f"{{ path_beg {r.path}/ }}"]
    return [" ".join(x for x in (host, p) if x) for p in paths]


def render(cfg: Config, s: IngressSettings) -> tuple[str, str, dict[str, bytes]]:
    """(haproxy.cfg, certs.list, {file name: PEM}) — see the module docstring."""
    certs = {f"{c.name}.pem": c.pem for c in cfg.certificates}
    crt_list = [str(s.cert_dir / "default.pem")]
    for c in cfg.certificates:
        hosts = [h for h in c.hosts if _SAFE_HOST.match(h)]
        if hosts:
            crt_list.append(f"{s.cert_dir / (c.name + '.pem')} {' '.join(hosts)}")
    addr = s.bind_address
    lines = [
        "global",
        f"    stats socket {s.socket_path} mode 600 level admin expose-fd listeners",
        "    hard-stop-after 60s",
        "    ssl-default-bind-options ssl-min-ver TLSv1.2",
        "",
        "defaults",
        "    mode http",
        "    option http-keep-alive",
        "    option forwardfor",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout http-request 10s",
        "    timeout http-keep-alive 60s",
        "",
        "frontend ingress",
        f"    bind {addr}:{s.http_port}",
        f"    bind {addr}:{s.https_port} ssl crt-list {s.state_dir / 'certs.list'} alpn http/1.1",
        "    http-request set-var(txn.host) req.hdr(host),field(1,:),lower",
    ]
    for r in cfg.routes:
        if not _SAFE_PATH.match(r.path) or (r.host and not _SAFE_HOST.match(r.host)):
            log.warning(
                "ingress %s: route %s%s not served: unsafe characters", r.source, r.host, r.path
            )
            continue
        conds = _conditions(r)
        if conds == [""]:
            lines.append(f"    use_backend {r.backend}  # {r.source}")
        else:
            lines.append(f"    use_backend {r.backend} if {' or '.join(conds)}  # {r.source}")
    lines.append(f"    default_backend {cfg.default_backend or 'be_default_404'}")
    lines += [
        "",
        "backend be_default_404",
        '    http-request return status 404 content-type "text/plain" string "404 page not found"',
    ]
    for name in sorted(cfg.backends):
        b = cfg.backends[name]
        lines += ["", f"backend {name}", f"    # {b.service}", "    balance roundrobin"]
        lines += [f"    server s{i} {ip}:{port}" for i, (ip, port) in enumerate(b.servers)]
    return "\n".join(lines) + "\n", "\n".join(crt_list) + "\n", certs


class HAProxyError(RuntimeError):
    pass


def _catches_sigusr2(pid: int) -> bool:
    """The process has a SIGUSR2 handler and does not block the signal."""
    bit = 1 << (signal.SIGUSR2 - 1)
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        return bool(int(fields["SigCgt"], 16) & bit) and not int(fields["SigBlk"], 16) & bit
    except (OSError, KeyError, ValueError):
        return False


class HAProxy:
    def __init__(self, settings: IngressSettings) -> None:
        self.settings = settings
        self._proc: subprocess.Popen[bytes] | None = None

    def _binary(self) -> str:
        b = self.settings.binary
        return b if os.path.isabs(b) else find_binary(b)

    def check(self, path: Path) -> None:
        proc = subprocess.run(
            [self._binary(), "-c", "-q", "-f", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise HAProxyError(f"haproxy -c: {(proc.stdout + proc.stderr).strip()[:2000]}")

    def master_pid(self) -> int:
        """The running master's pid (ours or adopted), else 0."""
        if self._proc is not None and self._proc.poll() is None:
            return self._proc.pid
        try:
            pid = int(self.settings.pid_path.read_text().split()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            return 0
        if (
            cmdline
            and cmdline[0].endswith(b"haproxy")
            and str(self.settings.config_path).encode() in cmdline
        ):
            return pid
        return 0

    def worker_pid(self) -> int:
        """The pid of the worker answering on the stats socket, else 0."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(2)
                sock.connect(str(self.settings.socket_path))
                sock.sendall(b"show info\n")
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
        except OSError:
            return 0
        for line in data.decode(errors="replace").splitlines():
            if line.startswith("Pid:"):
                with contextlib.suppress(ValueError):
                    return int(line.split(":", 1)[1])
        return 0

    def _alive(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is None  # our child: a zombie is dead
        return Path(f"/proc/{pid}").exists()

    def _reload(self, pid: int, timeout: float = 15.0) -> None:
        """SIGUSR2 to the master, once it catches it, then wait for the new
        worker. HAProxy's master loses a SIGUSR2 that arrives while it
        reloads, and dies of one that arrives while it re-executes itself
        (the default action), so reloads are strictly one after another."""
        deadline = time.monotonic() + timeout
        before = self.worker_pid()
        while not before and time.monotonic() < deadline - timeout / 2:
            time.sleep(0.05)  # a worker still starting (an adopted master's)
            before = self.worker_pid()
        while not _catches_sigusr2(pid):
            if not self._alive(pid):
                raise HAProxyError(f"haproxy master {pid} exited")
            if time.monotonic() > deadline:
                raise HAProxyError(f"haproxy master {pid} does not take SIGUSR2")
            time.sleep(0.02)
        os.kill(pid, signal.SIGUSR2)
        while True:
            now = self.worker_pid()
            if now and now != before:
                return
            if not self._alive(pid):
                raise HAProxyError(f"haproxy master {pid} exited while reloading")
            if time.monotonic() > deadline:
                raise HAProxyError(f"haproxy did not start a new worker within {timeout:.0f} s")
            time.sleep(0.02)

    def apply(self) -> None:
        """Start HAProxy on the written configuration, or reload it and
        wait until the new worker serves."""
        pid = self.master_pid()
        if pid:
            self._reload(pid)
            return
        with contextlib.suppress(FileNotFoundError):
            self.settings.socket_path.unlink()
        log_path = self.settings.state_dir / "haproxy.log"
        with log_path.open("ab") as out:
            self._proc = subprocess.Popen(
                [self._binary(), "-W", "-f", str(self.settings.config_path),
                 "-p", str(self.settings.pid_path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 10
        while not self.settings.socket_path.exists():
            if self._proc.poll() is not None:
                err = log_path.read_text(errors="replace")[-2000:]
                self._proc = None
                raise HAProxyError(f"haproxy exited at start: {err.strip()[:2000]}")
            if time.monotonic() > deadline:
                raise HAProxyError("haproxy did not open its stats socket within 10 s")
            time.sleep(0.02)

    def _wait_exit(self, pid: int, timeout: float) -> bool:
        """Whether the master `pid` exited within `timeout` (ours is reaped)."""
        if self._proc is not None and self._proc.pid == pid:
            try:
                self._proc.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self, drain: float = 0.0) -> bool:
        """Stop HAProxy (False when none ran). With `drain`, softly first:
        SIGUSR1 makes the master's workers close their listeners at once and
        finish the requests in flight, and the master leaves with the last
        of them; after `drain` seconds, or without it, SIGTERM ends what is
        left (then SIGKILL after 10 s)."""
        pid = self.master_pid()
        if not pid:
            return False
        soft = False
        if drain > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
            soft = self._wait_exit(pid, drain)
        if not soft:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            if not self._wait_exit(pid, 10) and self._proc is not None:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        with contextlib.suppress(FileNotFoundError):
            self.settings.pid_path.unlink()
        return True
