"""The agent endpoint's request targets: parsed once, origin-form only."""

from __future__ import annotations

import pytest

from agent.request_target import BadTarget, parse
from agent.stream_targets import parse_target
from agent.webhook_auth import request_attributes


@pytest.mark.parametrize(
    "raw",
    [
        "//stats/exec/ns/pod/c?command=id&stdout=1",  # the attack: host "stats" to urlsplit
        "/stats//exec/ns/pod/c",
        "/stats/../exec/ns/pod/c",
        "/stats/%2e%2e/exec/ns/pod/c",
        "/stats/./summary",
        "/stats%2F..%2Fexec/ns/pod/c",
        "/stats%2fsummary",
        "/stats%5C..%5Cexec",
        "/stats/%00",
        "/stats/%zz",
        "/stats/%C0%AF",  # not UTF-8
        "http://stats/exec/ns/pod/c",
        "*",
        "stats/summary",
        "/stats/summary#frag",
        "/exec/ns/pod/c?command=%zz",
    ],
)
def test_anything_but_an_origin_form_absolute_path_is_400(raw: str) -> None:
    with pytest.raises(BadTarget) as err:
        parse(raw)
    assert err.value.code == 400


def test_the_authorizer_and_the_router_read_the_same_value() -> None:
    target = parse("/exec/ns1/p%201/c?command=sh&stdout=1")
    assert target.path == "/exec/ns1/p 1/c"
    assert request_attributes("POST", target) == ("create", "proxy")
    stream = parse_target(target)
    assert (stream.kind, stream.namespace, stream.pod, stream.container) == ("exec", "ns1", "p 1",
                                                                             "c")  # fmt: skip
    stats = parse("/stats/summary")
    assert request_attributes("GET", stats) == ("get", "stats") and stats.path == "/stats/summary"
    assert (
        parse("/logs/").path == "/logs/" and request_attributes("GET", parse("/logs/"))[1] == "log"
    )
    assert parse("/").segments == ()
