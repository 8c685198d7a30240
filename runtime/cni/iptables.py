"""NAT rules for one container: IP masquerade (`ipMasq`) and host ports
(`portMappings`), written with one `iptables-restore --noflush` call each.

Every rule belongs to one container attachment: its chains are named
`SKIFF-<kind>-<hash of network, container id, ifname>` and are reached by
jumps from the built-in chains (POSTROUTING for masquerade and the SNAT of
loopback/hairpin sources; PREROUTING and OUTPUT, for local destinations, for
the DNAT of host ports). Teardown reads `iptables-save -t nat` once, deletes
every jump to those chains and the chains themselves, and so leaves nothing
behind and succeeds when nothing is there. This module never touches rules
it did not name.
"""

from __future__ import annotations

from runtime.cni import oslib
from runtime.cni.skel import GENERIC, CNIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SEARCH = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


def _binary(name: str) -> str:
    for d in oslib.environ().get("PATH", "").split(":") + list(_SEARCH):
        if d and oslib.is_executable_file(oslib.join(d, name)):
            return oslib.join(d, name)
    raise CNIError(GENERIC, f"{name} not found in PATH or {', '.join(_SEARCH)}")


def chain_id(network: str, container_id: str, ifname: str) -> str:
    """16 hex characters naming one attachment's chains (names stay < 29)."""
    return oslib.digest(f"{network}\0{container_id}\0{ifname}", 16)


def comment(network: str, container_id: str) -> str:
    # iptables-restore splits on spaces but honours double quotes.
    safe = "".join(c for c in f"{network} {container_id}" if c.isalnum() or c in "-_.: ")
    return f'"skiff {safe[:200]}"'


def start_restore(lines: list[str], v6: bool = False) -> oslib.Proc:
    """Start one `iptables-restore --noflush` transaction; `finish()` it."""
    text = "*nat\n" + "\n".join(lines) + "\nCOMMIT\n"
    binary = _binary("ip6tables-restore" if v6 else "iptables-restore")
    return oslib.start([binary, "--noflush", "--wait"], text.encode())


def finish(proc: oslib.Proc) -> None:
    rc, _out, err = proc.wait()
    if rc != 0:
        raise CNIError(GENERIC, f"iptables-restore failed: {err.decode(errors='replace').strip()}")


def restore(lines: list[str], v6: bool = False) -> None:
    finish(start_restore(lines, v6))


def save(v6: bool = False) -> list[str]:
    binary = _binary("ip6tables-save" if v6 else "iptables-save")
    rc, out, err = oslib.run([binary, "-t", "nat"])
    if rc != 0:
        raise CNIError(GENERIC, f"{binary} failed: {err.decode(errors='replace').strip()}")
    return out.decode(errors="replace").splitlines()


def masquerade_lines(cid: str, note: str, ip: str, no_masq: list[str]) -> list[str]:
    chain = f"SKIFF-MQ-{cid}"
    plen = 128 if ":" in ip else 32
    lines = [f":{chain} - [0:0]"]
    for dst in no_masq:
        # RETURN, not ACCEPT: ACCEPT would end the nat POSTROUTING walk and
        # skip the host-port SNAT that hairpin and loopback traffic needs.
        lines.append(f"-A {chain} -d {dst} -m comment --comment {note} -j RETURN")
    multicast = "ff00::/8" if ":" in ip else "224.0.0.0/4"
    lines.append(f"-A {chain} ! -d {multicast} -m comment --comment {note} -j MASQUERADE")
    lines.append(f"-A POSTROUTING -s {ip}/{plen} -m comment --comment {note} -j {chain}")
    return lines


_HEX = frozenset("0123456789abcdefABCDEF")


def is_ip(s: str) -> bool:
    """An IPv4 or IPv6 address (the plugin does not import ipaddress: see
    runtime/cni/__init__). Anything else, a newline included, is refused."""
    if ":" not in s:
        parts = s.split(".")
        return len(parts) == 4 and all(
            p.isdigit() and p.isascii() and len(p) <= 3 and int(p) <= 255 for p in parts
        )
    head, sep, tail = s.rpartition(":")
    if "." in tail:  # an embedded IPv4 tail (::ffff:1.2.3.4)
        if not is_ip(tail):
            return False
        s = head + sep + "0:0"
    if s.count("::") > 1 or len(s) > 39:
        return False
    groups = s.split(":")
    if "::" not in s and len(groups) != 8:
        return False
    return len(groups) <= 8 and all(len(g) <= 4 and set(g) <= _HEX for g in groups)


def hostport_lines(cid: str, note: str, ip: str, mappings: list[dict[str, Any]]) -> list[str]:
    """DNAT host ports to the pod (also for locally generated traffic) and
    masquerade loopback and hairpin sources so that replies come back."""
    dn, sn = f"SKIFF-DN-{cid}", f"SKIFF-SN-{cid}"
    v6 = ":" in ip
    target = f"[{ip}]" if v6 else ip
    plen = 128 if v6 else 32
    lines = [f":{dn} - [0:0]", f":{sn} - [0:0]"]
    for m in mappings:
        try:
            host_port = int(m["hostPort"])
            port = int(m["containerPort"])
        except (KeyError, TypeError, ValueError):
            raise CNIError(GENERIC, f"invalid port mapping {m!r}") from None
        proto = str(m.get("protocol") or "tcp").lower()
        if proto not in ("tcp", "udp", "sctp"):
            raise CNIError(GENERIC, f"invalid protocol {proto!r} in port mapping")
        host_ip = str(m.get("hostIP") or "")
        # spliced into an iptables-restore script: only a parsed address
        if host_ip and not is_ip(host_ip):
            raise CNIError(GENERIC, f"portMappings: hostIP {host_ip!r} is not an IP address")
        if host_ip and (":" in host_ip) != v6:
            continue
        dst = f" -d {host_ip}/{plen}" if host_ip and host_ip not in ("0.0.0.0", "::") else ""
        lines.append(
            f"-A {dn}{dst} -p {proto} -m {proto} --dport {host_port} -m comment --comment {note}"
            f" -j DNAT --to-destination {target}:{port}"
        )
        if not v6:
            lines.append(
                f"-A {sn} -s 127.0.0.0/8 -d {ip}/{plen} -p {proto} -m {proto} --dport {port}"
                f" -m comment --comment {note} -j MASQUERADE"
            )
        lines.append(
            f"-A {sn} -s {ip}/{plen} -d {ip}/{plen} -p {proto} -m {proto} --dport {port}"
            f" -m comment --comment {note} -j MASQUERADE"
        )
    local = "-m addrtype --dst-type LOCAL"
    lines.append(f"-A PREROUTING {local} -m comment --comment {note} -j {dn}")
    lines.append(f"-A OUTPUT {local} -m comment --comment {note} -j {dn}")
    lines.append(f"-A POSTROUTING -m comment --comment {note} -j {sn}")
    return lines


def delete_lines(cid: str, note: str, ip: str | None, masq: bool, ports: bool) -> list[str]:
    """The exact inverse of what ADD wrote (jumps need the same spec), as
    one transaction; it fails as a whole if anything is missing, and then
    `teardown()` does the search-and-delete."""
    lines = []
    if masq and ip:
        plen = 128 if ":" in ip else 32
        chain = f"SKIFF-MQ-{cid}"
        lines += [
            f"-D POSTROUTING -s {ip}/{plen} -m comment --comment {note} -j {chain}",
            f"-F {chain}",
            f"-X {chain}",
        ]
    if ports:
        dn, sn = f"SKIFF-DN-{cid}", f"SKIFF-SN-{cid}"
        local = "-m addrtype --dst-type LOCAL"
        lines += [
            f"-D PREROUTING {local} -m comment --comment {note} -j {dn}",
            f"-D OUTPUT {local} -m comment --comment {note} -j {dn}",
            f"-D POSTROUTING -m comment --comment {note} -j {sn}",
            f"-F {dn}",
            f"-X {dn}",
            f"-F {sn}",
            f"-X {sn}",
        ]
    return lines


def teardown(cid: str, v6: bool = False) -> bool:
    """Remove every jump to this attachment's chains and the chains; True if
    anything was there."""
    suffix = f"-{cid}"
    deletes: list[str] = []
    chains: list[str] = []
    for line in save(v6):
        if line.startswith(":") and line.split(" ", 1)[0].endswith(suffix):
            chains.append(line[1:].split(" ", 1)[0])
        elif line.startswith("-A ") and suffix in line:
            parts = line.split(" ")
            if parts[1].endswith(suffix):
                continue  # a rule inside our chain goes with the chain
            deletes.append("-D " + line[3:])
    if not deletes and not chains:
        return False
    restore(deletes + [f"-F {c}" for c in chains] + [f"-X {c}" for c in chains], v6)
    return True
