"""skiffctl apply: create or update objects from manifests, as `kubectl apply` does.

For each object in `-f FILE|DIR|-` (multi-document YAML, in order): if it
does not exist it is created, with the manifest recorded in the
`kubectl.kubernetes.io/last-applied-configuration` annotation; if it exists
a three-way merge patch is computed from the last-applied manifest (fields
removed from the manifest are removed), the new manifest and the live object
(only fields that differ are sent), and applied; an empty patch means
`unchanged`. Prints `deployment.apps/web created|configured|unchanged`. A
failing object is reported and the others still applied; the exit code is 1
if any failed. status is never sent.
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any

from controlplane.cli import printers
from controlplane.cli.context import CliError, Context
from controlplane.cli.resources import Manifest, load_manifests, object_namespace
from controlplane.client import errors
from controlplane.client.interface import Object

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_SERVER_FIELDS = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        required=True,
        help="manifest file, directory or - for stdin (repeatable)",
    )
    parser.add_argument("-R", "--recursive", action="store_true", help="descend into directories")
    parser.add_argument("-o", "--output", choices=("name",), help="print TYPE/NAME only")
    parser.add_argument(
        "--dry-run",
        choices=("none", "client", "server"),
        default="none",
        help="client: show what would change, write nothing",
    )


def desired_state(obj: Object) -> Object:
    """The manifest as it is recorded and compared: no status, no server-set metadata."""
    desired = copy.deepcopy(obj)
    desired.pop("status", None)
    meta = desired.setdefault("metadata", {})
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            meta.pop("annotations")
    return desired


def with_last_applied(desired: Object) -> Object:
    out = copy.deepcopy(desired)
    recorded = json.dumps(desired, sort_keys=True, separators=(",", ":"))
    out["metadata"].setdefault("annotations", {})[LAST_APPLIED] = recorded
    return out


def covers(have: Any, want: Any) -> bool:
    """True if `have` holds everything `want` says, allowing fields the server
    defaulted inside list items (a list of containers gains imagePullPolicy)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(
            k in have and covers(have[k], v) for k, v in want.items()
        )
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(have) == len(want)
            and all(covers(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


def three_way_patch(original: Any, modified: Any, current: Any) -> Any:
    """Deletions from original→modified plus what modified sets and current lacks."""
    if not isinstance(modified, dict):
        return copy.deepcopy(modified)
    original = original if isinstance(original, dict) else {}
    current = current if isinstance(current, dict) else {}
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified and key in current:
            patch[key] = None
    for key, value in modified.items():
        have = current.get(key)
        if isinstance(value, dict) and isinstance(have, dict):
            sub = three_way_patch(original.get(key), value, have)
            if sub:
                patch[key] = sub
        elif key not in current or not covers(have, value):
            patch[key] = copy.deepcopy(value)
    return patch


def apply_one(ctx: Context, manifest: Manifest) -> str:
    info, obj = manifest.info, manifest.obj
    namespace = object_namespace(info, obj, ctx.args.namespace)
    desired = desired_state(obj)
    if namespace is not None:
        desired["metadata"]["namespace"] = namespace
    modified = with_last_applied(desired)
    name = str(desired["metadata"].get("name") or "")
    dry = ctx.args.dry_run == "client"
    if not name:
        if dry:
            return (
                f"{printers.type_name(info, str(desired['metadata'].get('generateName')))} created"
            )
        created = ctx.client.create(info.key, modified, namespace)
        return f"{printers.type_name(info, printers.name(created))} created"
    try:
        live = ctx.client.get(info.key, name, namespace)
    except errors.NotFound:
        if not dry:
            ctx.client.create(info.key, modified, namespace)
        return f"{printers.type_name(info, name)} created"
    recorded = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        original = json.loads(recorded) if recorded else {}
    except json.JSONDecodeError:
        original = {}
    patch = three_way_patch(original, modified, live)
    patch.pop("kind", None)
    patch.pop("apiVersion", None)
    if not patch:
        return f"{printers.type_name(info, name)} unchanged"
    if not dry:
        ctx.client.patch(info.key, name, patch, namespace)
    return f"{printers.type_name(info, name)} configured"


def run(ctx: Context) -> int:
    if ctx.args.dry_run == "server":
        raise CliError("--dry-run=server is not supported by skiff; use --dry-run=client")
    manifests = load_manifests(ctx.args.filename, ctx.stdin, ctx.args.recursive)
    failed = 0
    for manifest in manifests:
        try:
            line = apply_one(ctx, manifest)
        except CliError as err:
            ctx.err(f"error: {err}")
            failed += 1
            continue
        except errors.ApiError as err:
            what = printers.type_name(manifest.info, printers.name(manifest.obj))
            ctx.err(
                f'Error from server ({err.reason}): error when applying "{manifest.source}" ({what}): {err}'
            )
            failed += 1
            continue
        if ctx.args.output == "name":
            line = line.rsplit(" ", 1)[0]
        elif ctx.args.dry_run == "client":
            line += " (dry run)"
        ctx.out(line)
    return 1 if failed else 0
