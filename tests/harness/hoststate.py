"""A snapshot of the host's global state, to show a daemon leaves none behind.

`take()` records links (with kind and master), routes of every table,
addresses, iptables rules and chains of every table (v4 and v6), the
nftables ruleset, the directories of every cgroup hierarchy, mounts and
named network namespaces, each as a set of text lines. Other tests run on
this machine at the same time and change the host too, so `left_behind()`
keeps only the lines added between two snapshots that name something of
the instance under test (its tokens: names, paths, addresses), widened by
what a snapshot taken while it ran shows it owned (chains that mention its
tokens, links enslaved to its bridge).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from agent.pod_cgroups import cgroup_mounts

_COUNTERS = re.compile(r"(\[\d+:\d+\])|(counter packets \d+ bytes \d+)")


def _run(*argv: str) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return res.stdout if res.returncode == 0 else ""


def _links() -> frozenset[str]:
    out = set()
    for link in json.loads(_run("ip", "-j", "-d", "link", "show") or "[]"):
        kind = (link.get("linkinfo") or {}).get("info_kind", "")
        out.add(f"link {link['ifname']} {kind} master={link.get('master', '')}")
    return frozenset(out)


def _lines(prefix: str, text: str) -> frozenset[str]:
    return frozenset(
        f"{prefix} {_COUNTERS.sub('', ln).strip()}" for ln in text.splitlines() if ln.strip()
    )


def _iptables() -> frozenset[str]:
    out: set[str] = set()
    for cmd in ("iptables-save", "ip6tables-save"):
        table = ""
        for ln in _run(cmd).splitlines():
            if ln.startswith("*"):
                table = ln[1:]
            elif ln.startswith((":", "-A")):
                out.add(f"{cmd} {table} {_COUNTERS.sub('', ln).strip()}")
    return frozenset(out)


def _cgroups() -> frozenset[str]:
    out = set()
    for mount in cgroup_mounts():
        for dirpath, _dirs, _files in os.walk(mount):
            out.add(f"cgroup {dirpath}")
    return frozenset(out)


def _mounts() -> frozenset[str]:
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split(" - ")
            fs = parts[1].split()[0] if len(parts) > 1 else ""
            out.add(f"mount {line.split()[4]} {fs}")
    return frozenset(out)


@dataclass(frozen=True)
class HostSnapshot:
    links: frozenset[str]
    routes: frozenset[str]
    addresses: frozenset[str]
    iptables: frozenset[str]
    nftables: frozenset[str]
    cgroups: frozenset[str]
    mounts: frozenset[str]
    netns: frozenset[str]

    def lines(self) -> dict[str, frozenset[str]]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def take() -> HostSnapshot:
    return HostSnapshot(
        links=_links(),
        routes=_lines("route", _run("ip", "route", "show", "table", "all"))
        | _lines("route6", _run("ip", "-6", "route", "show", "table", "all")),
        addresses=_lines("addr", _run("ip", "-o", "addr", "show")),
        iptables=_iptables(),
        nftables=_lines("nft", _run("nft", "list", "ruleset")),
        cgroups=_cgroups(),
        mounts=_mounts(),
        netns=_lines("netns", _run("ip", "netns", "list")),
    )


def owned_tokens(during: HostSnapshot, tokens: Iterable[str], bridge: str) -> set[str]:
    """`tokens` plus what `during` shows the instance owned: the chains named
    in iptables rules that mention a token, the links enslaved to `bridge`."""
    out = {t for t in tokens if t}
    for ln in during.iptables:
        if any(t in ln for t in out):
            out.update(re.findall(r"\b(SKIFF[A-Za-z0-9]*-[A-Z]+-[0-9a-f]+)\b", ln))
    for ln in during.links:
        if ln.endswith(f"master={bridge}"):
            out.add(ln.split()[1])
    return out


def left_behind(
    before: HostSnapshot, after: HostSnapshot, tokens: set[str]
) -> dict[str, list[str]]:
    """Lines added since `before` that name one of `tokens`, per category."""
    out = {}
    for name, lines in after.lines().items():
        added = sorted(ln for ln in lines - before.lines()[name] if any(t in ln for t in tokens))
        if added:
            out[name] = added
    return out


def path_tokens(*paths: Path) -> set[str]:
    return {str(p) for p in paths}
