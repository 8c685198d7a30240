"""Volcano's scheduler configuration (volcano-scheduler.conf), refused with the line at fault.

```yaml
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
```

Every `enable*` switch of a plugin option is a boolean (absent: on). An
unknown key, a duplicate plugin or action, a bad value: `ConfError` whose
message starts with `line N:`. Which actions and plugins exist is the
registry's to say (registry.py `check`, with the line kept here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

SWITCHES = (
    "enableJobOrder", "enableNamespaceOrder", "enableHierarchy", "enableJobReady",
    "enableJobPipelined", "enableTaskOrder", "enablePreemptable", "enableReclaimable",
    "enablePreemptive", "enableQueueOrder", "enableClusterOrder", "enablePredicate",
    "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enableVictim", "enableJobStarving", "enableOverused",
    "enableAllocatable",
)  # fmt: skip

DEFAULT_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


class ConfError(ValueError):
    """The configuration is refused; the message names the line."""


@dataclass(frozen=True)
class PluginOption:
    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)
    line: int = field(default=0, compare=False)  # where the configuration names it

    def enabled(self, switch: str) -> bool:
        return self.switches.get(switch, True)


@dataclass(frozen=True)
class Conf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    actions_line: int = field(default=0, compare=False)

    def plugin(self, name: str) -> PluginOption | None:
        for tier in self.tiers:
            for p in tier:
                if p.name == name:
                    return p
        return None


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _fail(node: yaml.Node, message: str) -> ConfError:
    return ConfError(f"line {_line(node)}: {message}")


def _mapping(node: yaml.Node, what: str) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
    if not isinstance(node, yaml.MappingNode):
        raise _fail(node, f"{what} must be a mapping")
    out = []
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise _fail(k, f"{what}: keys must be names")
        out.append((k, v))
    return out


def _value(node: yaml.Node) -> Any:
    return yaml.safe_load(yaml.serialize(node))


def _plugin(node: yaml.Node, seen: set[str]) -> PluginOption:
    name = ""
    line = _line(node)
    switches: dict[str, bool] = {}
    arguments: dict[str, Any] = {}
    for k, v in _mapping(node, "a plugin"):
        key = k.value
        if key == "name":
            if not isinstance(v, yaml.ScalarNode) or not isinstance(_value(v), str):
                raise _fail(v, f"a plugin's name must be a string, not {_value(v)!r}")
            name, line = v.value, _line(v)
            if name in seen:
                raise _fail(v, f"plugin {name!r} appears twice")
            seen.add(name)
        elif key in SWITCHES:
            val = _value(v)
            if not isinstance(val, bool):
                raise _fail(v, f"{key} must be true or false, not {val!r}")
            switches[key] = val
        elif key == "arguments":
            val = _value(v)
            if not isinstance(val, dict):
                raise _fail(v, "arguments must be a mapping")
            arguments = val
        else:
            raise _fail(k, f"unknown plugin option {key!r}")
    if not name:
        raise _fail(node, "a plugin needs a name")
    return PluginOption(name, switches, arguments, line)


def load(text: str) -> Conf:
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfError(f"{where}invalid YAML: {getattr(e, 'problem', e)}") from e
    if root is None:
        return load(DEFAULT_CONF)
    actions: tuple[str, ...] = ()
    actions_line = 0
    tiers: list[tuple[PluginOption, ...]] = []
    seen: set[str] = set()
    for k, v in _mapping(root, "the configuration"):
        if k.value == "actions":
            if not isinstance(v, yaml.ScalarNode):
                raise _fail(v, 'actions must be a string such as "enqueue, allocate, backfill"')
            names = [a.strip() for a in str(v.value).split(",") if a.strip()]
            if len(set(names)) != len(names):
                raise _fail(v, "an action appears twice")
            actions, actions_line = tuple(names), _line(v)
        elif k.value == "tiers":
            if not isinstance(v, yaml.SequenceNode):
                raise _fail(v, "tiers must be a list of {plugins: [...]}")
            for tier in v.value:
                plugins: list[PluginOption] = []
                for tk, tv in _mapping(tier, "a tier"):
                    if tk.value != "plugins":
                        raise _fail(tk, f"unknown tier key {tk.value!r}")
                    if not isinstance(tv, yaml.SequenceNode):
                        raise _fail(tv, "plugins must be a list")
                    plugins.extend(_plugin(p, seen) for p in tv.value)
                tiers.append(tuple(plugins))
        elif k.value == "configurations":
            continue  # per-action arguments: none of ours takes any
        else:
            raise _fail(k, f"unknown key {k.value!r} (actions, tiers, configurations)")
    if not actions:
        raise _fail(root, "actions is required")
    return Conf(actions, tuple(tiers), actions_line)


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0}  # fmt: skip
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(value: Any) -> float | None:
    """Go's time.ParseDuration ("1h2m3s4ms5us6ns", "3s", "1.5h") in seconds;
    None when absent, not positive or not a duration (Volcano logs and
    ignores a bad one)."""
    if not isinstance(value, str) or not value:
        return None
    text, sign = value, 1.0
    if text[0] in "+-":
        sign, text = (-1.0 if text[0] == "-" else 1.0), text[1:]
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0:
        return None
    total *= sign
    return total if total > 0 else None


def _check_argument(conf: Conf, plugin: str, arg: str, lo: float, hi: float) -> None:
    opt = conf.plugin(plugin)
    if opt is None or arg not in opt.arguments:
        return
    v = opt.arguments[arg]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise ConfError(
            f"plugin {plugin}: argument {arg} must be a number in {lo}..{hi}, not {v!r}"
        )


def validate(conf: Conf) -> Conf:
    """Checks of arguments the plugins read (their lines are gone by now: named by plugin)."""
    _check_argument(conf, "binpack", "binpack.weight", 0, 100)
    _check_argument(conf, "binpack", "binpack.cpu", 0, 100)
    _check_argument(conf, "binpack", "binpack.memory", 0, 100)
    _check_argument(conf, "overcommit", "overcommit-factor", 1, 100)
    for arg in ("leastrequested.weight", "mostrequested.weight", "balancedresource.weight",
                "nodeaffinity.weight", "podaffinity.weight", "tainttoleration.weight",
                "imagelocality.weight", "podtopologyspread.weight"):  # fmt: skip
        _check_argument(conf, "nodeorder", arg, 0, 100)
    return conf
