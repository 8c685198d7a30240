"""Resolving a container user from the container's own /etc/passwd and
/etc/group, the way runc and containerd do: a name or uid, an optional
group, the user's primary gid, and the supplementary groups that list the
user by name in /etc/group.

Pure functions over file contents; the caller reads the files from inside the
container root (after pivot_root), so a hostile image cannot point us at host
files.
"""

from __future__ import annotations

# NamedTuple, not dataclass: the monitor and its zygote import this module,
# and dataclasses brings inspect, ast and dis (1.4 MB in every zygote).
from typing import NamedTuple


class Passwd(NamedTuple):
    name: str
    uid: int
    gid: int
    home: str


class Group(NamedTuple):
    name: str
    gid: int
    members: tuple[str, ...]


def parse_passwd(text: str) -> list[Passwd]:
    out: list[Passwd] = []
    for line in text.splitlines():
        f = line.split(":")
        if len(f) < 6 or line.startswith("#"):
            continue
        try:
            out.append(Passwd(f[0], int(f[2]), int(f[3]), f[5]))
        except ValueError:
            continue
    return out


def parse_group(text: str) -> list[Group]:
    out: list[Group] = []
    for line in text.splitlines():
        f = line.split(":")
        if len(f) < 3 or line.startswith("#"):
            continue
        try:
            members = tuple(m for m in (f[3].split(",") if len(f) > 3 else []) if m)
            out.append(Group(f[0], int(f[2]), members))
        except ValueError:
            continue
    return out


class Creds(NamedTuple):
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str


class UnknownUser(LookupError):
    pass


def resolve(
    passwd: list[Passwd],
    groups: list[Group],
    uid: int | None,
    username: str,
    gid: int | None,
    extra_groups: list[int],
    groupname: str = "",
) -> Creds:
    """uid wins over username; gid defaults to the passwd entry's primary
    group (0 if the uid has no entry); supplementary groups are those that
    list the user by name, plus `extra_groups`, in that order, deduplicated."""
    entry: Passwd | None = None
    if uid is not None:
        entry = next((p for p in passwd if p.uid == uid), None)
        the_uid = uid
    elif username:
        entry = next((p for p in passwd if p.name == username), None)
        if entry is None:
            if username.isdigit():
                the_uid = int(username)
            else:
                raise UnknownUser(f"no user {username!r} in the container's /etc/passwd")
        else:
            the_uid = entry.uid
    else:
        the_uid = 0
        entry = next((p for p in passwd if p.uid == 0), None)
    if groupname:
        named = next((g for g in groups if g.name == groupname), None)
        if named is None:
            raise UnknownUser(f"no group {groupname!r} in the container's /etc/group")
        gid = named.gid
    the_gid = gid if gid is not None else (entry.gid if entry else 0)
    sup: list[int] = []
    if entry is not None:
        for g in groups:
            if entry.name in g.members and g.gid not in sup:
                sup.append(g.gid)
    for g_id in extra_groups:
        if g_id not in sup:
            sup.append(g_id)
    home = entry.home if entry else "/"
    return Creds(the_uid, the_gid, tuple(sup), home)
