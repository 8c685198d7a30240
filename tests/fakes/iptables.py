"""An in-memory `agent.proxy.iptables.Iptables` for the service proxy's unit tests."""

from __future__ import annotations

from collections.abc import Sequence

from agent.proxy.iptables import IptablesError


class FakeIptables:
    """In-memory stand-in: `save()` answers from `tables`, `restore()` records
    the text (and fails `fail_restores` times when asked to)."""

    def __init__(self) -> None:
        self.tables: dict[str, str] = {"filter": "", "nat": ""}
        self.restores: list[str] = []
        self.sysctls: dict[str, str] = {}
        self.conntrack_deletes: list[tuple[str, ...]] = []
        self.saves = 0
        self.fail_restores = 0

    def save(self, table: str) -> str:
        self.saves += 1
        return self.tables.get(table, "")

    def restore(self, text: str) -> None:
        if self.fail_restores:
            self.fail_restores -= 1
            raise IptablesError("iptables-restore failed (injected)")
        self.restores.append(text)

    def sysctl(self, key: str, value: str) -> None:
        self.sysctls[key] = value

    def delete_conntrack(self, filters: Sequence[str]) -> None:
        self.conntrack_deletes.append(tuple(filters))
