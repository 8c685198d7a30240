"""An in-memory `agent.netpol.nft.Nft` for the NetworkPolicy enforcer's unit tests."""

from __future__ import annotations

from agent.netpol.nft import NftError


class FakeNft:
    """Records every applied transaction; `fail_applies` makes the next ones fail."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.tables: set[tuple[str, str]] = set()
        self.fail_applies = 0

    def apply(self, text: str) -> None:
        if self.fail_applies:
            self.fail_applies -= 1
            raise NftError("nft -f failed (injected)")
        self.applied.append(text)
        for line in text.splitlines():
            words = line.split()
            if len(words) >= 4 and words[0] == "table":
                self.tables.add((words[1], words[2]))

    def has_table(self, family: str, name: str) -> bool:
        return (family, name) in self.tables

    def delete_table(self, family: str, name: str) -> bool:
        found = (family, name) in self.tables
        self.tables.discard((family, name))
        return found
