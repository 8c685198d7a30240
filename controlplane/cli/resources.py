"""Turning what a user typed into kinds, names and objects.

Resource arguments come in kubectl's forms: `KIND` (all of them), `KIND NAME
[NAME...]`, `TYPE/NAME [TYPE/NAME...]` (as `-o name` prints them:
`pod/web`, `deployment.apps/web`), or `KIND1,KIND2`; a kind is its Kind,
plural, singular or short name in any case. Manifests come from files,
directories (`*.yaml`, `*.yml`, `*.json`, sorted) or `-` (stdin), as
multi-document YAML, with `kind: List` unpacked. Errors are CliErrors that
name the offending argument or file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from controlplane.api import kinds, limits
from controlplane.api.kinds import KindInfo
from controlplane.cli.context import CliError
from controlplane.client.interface import Object

# kubectl's "all" category: what `get all` lists.
ALL = (
    "Pod",
    "Service",
    "DaemonSet",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Job",
    "CronJob",
)


def resolve_kind(name: str) -> KindInfo:
    try:
        return kinds.lookup(name)
    except kinds.UnknownKind:
        raise CliError(
            f'the server doesn\'t have a resource type "{name}"; supported kinds: '
            + ", ".join(kinds.supported_kinds())
        ) from None


@dataclass(frozen=True)
class Target:
    info: KindInfo
    name: str | None  # None: every object of the kind


def parse_targets(words: list[str], need_name: bool = False) -> list[Target]:
    """`KIND [NAME...]`, `TYPE/NAME...` or `KIND1,KIND2` as a list of targets."""
    if not words:
        raise CliError("you must specify the type of resource (e.g. pods, deployments, nodes)")
    if "/" in words[0]:
        targets = []
        for word in words:
            kind, sep, obj_name = word.partition("/")
            if not sep or not kind or not obj_name:
                raise CliError(
                    f"there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'skiffctl get pod/web'): {word!r}"
                )
            targets.append(Target(resolve_kind(kind), obj_name))
        return targets
    infos: list[KindInfo] = []
    for word in (k for k in words[0].split(",") if k):
        if word == "all":
            infos.extend(kinds.by_kind(k) for k in ALL)
        else:
            infos.append(resolve_kind(word))
    names = words[1:]
    if any("/" in n for n in names):
        raise CliError(
            "there is no need to specify a resource type as a separate argument when "
            "passing arguments in resource/name form"
        )
    if names:
        if len(infos) > 1:
            raise CliError("a resource name may only follow a single resource type")
        return [Target(infos[0], n) for n in names]
    if need_name:
        raise CliError(
            f"resource name may not be empty; usage: TYPE NAME or TYPE/NAME ({words[0]})"
        )
    return [Target(info, None) for info in infos]


# ---- manifests ------------------------------------------------------------------


def _files(path_text: str, recursive: bool) -> list[Path]:
    path = Path(path_text)
    if path.is_dir():
        pattern = "**/*" if recursive else "*"
        return sorted(
            p for p in path.glob(pattern) if p.is_file() and p.suffix in (".yaml", ".yml", ".json")
        )
    if not path.exists():
        raise CliError(f'the path "{path_text}" does not exist')
    return [path]


def _nesting(text: str) -> int:
    """The deepest nesting of mappings and sequences in YAML text, read from
    the parser's events (a flat loop: PyYAML's composer recurses per level)."""
    depth = deepest = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            deepest = max(deepest, depth)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return deepest


def _documents(text: str, source: str) -> list[Object]:
    try:
        depth = _nesting(text)
        if depth > limits.MAX_DEPTH:  # what the API server refuses too, said before a crash
            raise CliError(f"error parsing {source}: nested {depth} levels deep, more than "
                           f"the {limits.MAX_DEPTH} levels the API accepts")  # fmt: skip
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise CliError(f"error parsing {source}: {err}") from None
    out: list[Object] = []
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise CliError(f"error parsing {source}: a document is not a mapping")
        if doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            out.extend(i for i in doc["items"] if isinstance(i, dict))
        else:
            out.append(doc)
    return out


@dataclass(frozen=True)
class Manifest:
    source: str
    obj: Object
    info: KindInfo


def check_manifest(obj: Object, source: str) -> KindInfo:
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    if not kind or not isinstance(kind, str):
        raise CliError(f"error validating {source}: kind not set")
    if not api_version or not isinstance(api_version, str):
        raise CliError(f"error validating {source}: apiVersion not set")
    try:
        info = kinds.for_object(api_version, kind)
    except kinds.UnknownKind:
        raise CliError(
            f'{source}: no matches for kind "{kind}" in version "{api_version}"; supported kinds: '
            + ", ".join(kinds.supported_kinds())
        ) from None
    if info.kind != kind or not info.accepts_api_version(api_version):
        raise CliError(
            f'{source}: no matches for kind "{kind}" in version "{api_version}" '
            f"(skiff serves {info.key} as {info.api_version})"
        )
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        raise CliError(f"error validating {source}: metadata.name: Required value")
    return info


def load_manifests(paths: list[str], stdin: TextIO, recursive: bool = False) -> list[Manifest]:
    """Every object in the given files/directories/stdin, checked for kind and name."""
    if not paths:
        raise CliError("must specify one of -f")
    manifests: list[Manifest] = []
    for path_text in paths:
        if path_text == "-":
            sources = [("STDIN", stdin.read())]
        else:
            sources = []
            for p in _files(path_text, recursive):
                try:
                    sources.append((str(p), p.read_text()))
                except OSError as err:
                    raise CliError(f"cannot read {p}: {err.strerror}") from None
        for source, text in sources:
            for obj in _documents(text, source):
                manifests.append(Manifest(source, obj, check_manifest(obj, source)))
    if not manifests:
        raise CliError(f"no objects passed ({', '.join(paths)})")
    return manifests


def parse_patch(text: str) -> dict[str, Any]:
    """A patch given as JSON (or YAML, which is a superset)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise CliError(f"unable to parse the patch {text!r}: {err}") from None
    if not isinstance(value, dict):
        raise CliError(f"unable to parse the patch {text!r}: it must be a JSON object")
    return value


def object_namespace(info: KindInfo, obj: Object, flag: str | None) -> str | None:
    """The namespace an object from a manifest goes to (None for cluster-scoped).

    An explicit -n that disagrees with the manifest is an error, as in kubectl.
    """
    if not info.namespaced:
        return None
    declared = (obj.get("metadata") or {}).get("namespace")
    if declared and flag and declared != flag:
        raise CliError(
            f'the namespace from the provided object "{declared}" does not match the namespace '
            f"\"{flag}\". You must pass '--namespace={declared}' to perform this operation."
        )
    return str(declared or flag or "default")
