"""impersonation.requested: which headers ask to impersonate (every request asks)."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from controlplane.apiserver.rest.impersonation import requested

PLAIN = [("Host", "h"), ("Authorization", "Bearer t"), ("Content-Type", "application/json"),
         ("User-Agent", "kubectl/v1.33.0")]  # fmt: skip


def _headers(*extra: tuple[str, str]) -> CIMultiDictProxy[str]:
    return CIMultiDictProxy(CIMultiDict([*PLAIN, *extra]))


@pytest.mark.parametrize(
    "header",
    ["Impersonate-User", "impersonate-group", "IMPERSONATE-UID", "Impersonate-Extra-scopes",
     "impersonate-extra-a%2Fb"],
)  # fmt: skip
def test_each_impersonation_header_asks(header: str) -> None:
    assert requested(_headers((header, "x")))


@pytest.mark.parametrize("header", ["X-Impersonate-Extra-scopes", "X-Impersonate-User",
                                    "Impersonate", "Impersonate-Extra"])  # fmt: skip
def test_other_headers_do_not(header: str) -> None:
    assert not requested(_headers((header, "x")))
    assert not requested(_headers())
