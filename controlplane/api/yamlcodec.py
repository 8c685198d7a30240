"""YAML request bodies decoded as Kubernetes decodes them, with its bounds.

A few hundred bytes of nested aliases (`&a [x, x, ...]`, `&b [*a, *a, ...]`,
...) expand to billions of nodes: the "billion laughs" of CVE-2019-11253.
PyYAML shares an alias's object instead of copying it, which only moves the
cost to whatever walks the result (depth checks, JSON encoding, storage).
`loads` builds plain JSON values (a copy per alias, as JSON has no sharing)
and counts the work as go-yaml does since that CVE (Kubernetes'
decoder): every node decoded counts, those reached through an alias count
as alias work, and once more than 100 of 1,000 or more decodes came through
aliases at a ratio above `allowed_alias_ratio` (99% up to 400,000 decodes,
falling to 10% at 4,000,000) the document is refused with go-yaml's message
`yaml: document contains excessive aliasing`. An alias inside its own
anchor is refused (`yaml: an anchor's value contains itself`), and so is
nesting deeper than `max_depth` (the API's limit, not go-yaml's 10,000).
The node count alone does not bound the result: one alias of a 2 MiB
scalar is one node, so 20,000 of them (60 KB of `*a,`) decode to 40 GB of
JSON. The decoded size is counted too (each scalar's text, each key, a few
bytes per node, aliases at the full size of what they copy) and a document
past `max_size` (four request bodies) is refused with DecodedTooLarge.
So the work and the size of the result are bounded by the size of the body.

A repeated mapping key keeps its last value and is noted with its line
(`loads_noting_duplicates`), as go-yaml's strict decoding reports it.
As sigs.k8s.io/yaml converts YAML to JSON: timestamps and `!!binary`
stay the strings they were written as, mapping keys become strings
(`1:` is "1", `true:` "true"), merge keys (`<<`) are merged. Scalars
otherwise resolve as YAML 1.1 (PyYAML's safe resolver), as before.
This module never touches the network; a caller on an event loop runs it
on an executor.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from controlplane.api import jsoncodec
from controlplane.api.limits import MAX_BODY

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

ALIAS_RATIO_LOW = 400_000
ALIAS_RATIO_HIGH = 4_000_000
EXCESSIVE_ALIASING = "yaml: document contains excessive aliasing"
_STRING_TAGS = frozenset({"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"})
_MERGE = "tag:yaml.org,2002:merge"


class YAMLDecodeError(ValueError):
    """A document refused: the message names the problem (go-yaml's words where it has them)."""


class DecodedTooLarge(YAMLDecodeError):
    """The document decodes to more than the size bound."""


# A JSON request body may be 3 MiB (limits.MAX_BODY); its YAML may decode to a
# little more (quotes, commas), never to four times that without aliases.
MAX_DECODED = 4 * MAX_BODY
MAX_DUPLICATES = 100


def allowed_alias_ratio(decodes: int) -> float:
    """go-yaml's allowedAliasRatio: the share of decodes aliases may take."""
    if decodes <= ALIAS_RATIO_LOW:
        return 0.99
    if decodes >= ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decodes - ALIAS_RATIO_LOW) / (ALIAS_RATIO_HIGH - ALIAS_RATIO_LOW)


class _Builder:
    def __init__(self, max_depth: int, max_size: int) -> None:
        self.max_depth = max_depth
        self.max_size = max_size
        self.size = 0  # bytes the JSON form of what was decoded takes, about
        self.decodes = 0
        self.aliased = 0
        self.alias_depth = 0
        self.scalars = SafeConstructor()
        self.duplicates: list[str] = []  # keys a mapping repeats, as go-yaml words them
        self.quoted = False  # whether the last key was a string (go-yaml quotes those)
        self.open: set[int] = set()  # nodes being built (an alias to one is a cycle)
        # Nodes built once: (value, nodes decoded for it, nesting below it, size).
        self.built: dict[int, tuple[Any, int, int, int]] = {}

    def grow(self, n: int) -> None:
        self.size += n
        if self.size > self.max_size:
            raise DecodedTooLarge(f"the YAML document decodes to more than {self.max_size} bytes")

    def count(self, n: int = 1, aliased: bool = False) -> None:
        self.decodes += n
        if aliased or self.alias_depth > 0:
            self.aliased += n
        if (self.aliased > 100 and self.decodes > 1000
                and self.aliased / self.decodes > allowed_alias_ratio(self.decodes)):  # fmt: skip
            raise YAMLDecodeError(EXCESSIVE_ALIASING)

    def build(self, node: Node, depth: int) -> tuple[Any, int]:
        """(the value, levels of containers below it)."""
        key = id(node)
        if key in self.open:
            raise YAMLDecodeError("yaml: an anchor's value contains itself")
        done = self.built.get(key)
        if done is not None:
            # A node reached again is reached through an alias: it costs what
            # decoding it again would (every node in it, as alias work), and
            # the result is a copy (JSON shares nothing).
            value, size, height, nbytes = done
            if depth + height > self.max_depth:
                raise YAMLDecodeError(self.too_deep())
            self.count(size, aliased=True)
            self.grow(nbytes)
            return (value if isinstance(node, ScalarNode) else jsoncodec.clone(value)), height
        before, size_before = self.decodes, self.size
        self.count()
        if isinstance(node, ScalarNode):
            value = self.scalar(node)
            self.grow(len(node.value) + 3)
            self.built[key] = (value, 1, 0, len(node.value) + 3)
            return value, 0
        if depth > self.max_depth:
            raise YAMLDecodeError(self.too_deep())
        self.grow(3)
        self.open.add(key)
        try:
            made: Any
            if isinstance(node, SequenceNode):
                built = [self.build(child, depth + 1) for child in node.value]
                made = [v for v, _ in built]
                height = max((1 + h for v, h in built if isinstance(v, dict | list)), default=0)
            elif isinstance(node, MappingNode):
                made, height = self.mapping(node, depth)
            else:
                raise YAMLDecodeError(f"yaml: cannot decode node {node!r}")
        finally:
            self.open.discard(key)
        self.built[key] = (made, self.decodes - before, height, self.size - size_before)
        return made, height

    def too_deep(self) -> str:
        return f"the document is nested more than {self.max_depth} levels deep"

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag in _STRING_TAGS:
            return node.value
        try:
            return self.scalars.construct_object(node, deep=True)
        except ConstructorError as err:
            raise YAMLDecodeError(f"yaml: {err.problem}") from None

    def key(self, node: Node) -> str:
        if not isinstance(node, ScalarNode):
            raise YAMLDecodeError("yaml: invalid map key: a mapping key must be a scalar")
        value = self.scalar(node)
        self.quoted = False
        if isinstance(value, str):
            self.quoted = True
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        return "null" if value is None else str(value)

    def mapping(self, node: MappingNode, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        height = 0
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    value, below = self.build(source, depth)
                    if not isinstance(value, dict):
                        raise YAMLDecodeError(
                            "yaml: map merge requires map or sequence of maps as the value"
                        )
                    height = max(height, below)
                    for k, v in value.items():
                        merged.setdefault(k, v)
                continue
            self.count()
            self.grow(len(key_node.value) + 4 if isinstance(key_node, ScalarNode) else 4)
            name = self.key(key_node)
            if name in out and len(self.duplicates) < MAX_DUPLICATES:
                # go-yaml's strict words, the line of the repeat (sigs.k8s.io/yaml)
                shown = json.dumps(name, ensure_ascii=False) if self.quoted else name
                line = key_node.start_mark.line + 1
                self.duplicates.append(f"line {line}: key {shown} already set in map")
            value, below = self.build(value_node, depth + 1)
            out[name] = value
            if isinstance(value, dict | list):
                height = max(height, below + 1)
        for k, v in merged.items():
            out.setdefault(k, v)
        return out, height


def loads(data: bytes | str, max_depth: int = 10_000, max_size: int = MAX_DECODED) -> Any:
    """The single document in `data` as JSON values; YAMLDecodeError when refused
    (yaml.YAMLError, with its position, when it does not parse)."""
    return loads_noting_duplicates(data, max_depth, max_size)[0]


def loads_noting_duplicates(
    data: bytes | str, max_depth: int = 10_000, max_size: int = MAX_DECODED
) -> tuple[Any, list[str]]:
    """loads(), and the keys a mapping repeats (the last one kept), each as
    go-yaml's strict decoding words it: `line 5: key "name" already set in map`."""
    root = yaml.compose(data, Loader=_Loader)
    if root is None:
        return None, []
    builder = _Builder(max_depth, max_size)
    return builder.build(root, 1)[0], builder.duplicates
