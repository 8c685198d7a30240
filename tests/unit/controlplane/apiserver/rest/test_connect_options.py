"""The options a CONNECT of pods/portforward reads from its query
(PodPortForwardOptions, what admission webhooks see) and the agent URL it
becomes: `ports` repeated and comma-separated, as Kubernetes'
Convert_Slice_string_To_Slice_int32 reads them."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from multidict import MultiDict

from controlplane.apiserver.rest import queryparams, streams
from controlplane.apiserver.rest.status import BadRequest


def call(query: list[tuple[str, str]], subresource: str = "portforward") -> Any:
    target = SimpleNamespace(subresource=subresource, namespace="ns", name="web")
    return SimpleNamespace(target=target, request=SimpleNamespace(query=MultiDict(query)))


@pytest.mark.parametrize(
    ("query", "ports"),
    [
        ([("ports", "1234,1235")], [1234, 1235]),
        ([("ports", "80"), ("ports", "443,8080")], [80, 443, 8080]),
        ([("ports", "65535"), ("ports", "0080")], [65535, 80]),
        ([("port", "81"), ("ports", "80")], [80, 81]),  # skiffctl's `port` too
    ],
)
def test_repeated_and_comma_separated_ports(query: list[tuple[str, str]], ports: list[int]) -> None:
    options = streams._connect_options(call(query))
    assert options == {"kind": "PodPortForwardOptions", "apiVersion": "v1", "ports": ports}
    tail = "&".join(f"port={p}" for p in ports)
    assert streams._agent_path(call(query), {}) == f"/portforward/ns/web?{tail}"


def test_no_ports_is_no_field() -> None:
    assert streams._connect_options(call([])) == {
        "kind": "PodPortForwardOptions", "apiVersion": "v1",
    }  # fmt: skip
    assert streams._agent_path(call([]), {}) == "/portforward/ns/web"


@pytest.mark.parametrize(
    ("value", "text", "why"),
    [
        ("80,", "", "invalid syntax"),
        ("x", "x", "invalid syntax"),
        ("-1", "-1", "invalid syntax"),
        ("+80", "+80", "invalid syntax"),
        (" 80", " 80", "invalid syntax"),
        ("8_0", "8_0", "invalid syntax"),
        ("\u0661", "\u0661", "invalid syntax"),  # a digit, but not an ASCII one
        ("65536", "65536", "value out of range"),
        ("80,99999", "99999", "value out of range"),
    ],
)
def test_a_malformed_port_is_a_400_naming_the_field(value: str, text: str, why: str) -> None:
    expected = f'ports: cannot convert to []int32: strconv.ParseUint: parsing "{text}": {why}'
    with pytest.raises(BadRequest) as err:
        queryparams.ports([value])
    assert str(err.value) == expected
    with pytest.raises(BadRequest):
        streams._connect_options(call([("ports", "80"), ("ports", value)]))
