"""The versions of a CustomResourceDefinition: how a custom object changes
between its served versions and the one it is stored in, and the facts
kube-apiserver derives from the version list.

- `conversions(spec, storage)`: the KindDef conversions of every served
  version but the storage one. `conversion.strategy: None` only rewrites
  apiVersion (kube-apiserver's nopConverter); `Webhook` sends the object to
  the CRD's conversion webhook (ConversionReview v1) through the converter
  the API server installs with `set_webhook_converter` (the HTTP call is
  the server's: this module does no I/O). Objects read at a version are
  then defaulted and pruned by that version's schema, as kube-apiserver's
  schema-coercing converter does.
- `kube_aware_key(version)`: Kubernetes' version priority (GA > beta >
  alpha > other, higher numbers first), which orders discovery.
- `deprecation_warning(spec, version)`: the Warning a request at a
  deprecated version gets: its deprecationWarning, else Kubernetes' text.
- `stored_versions(old, new)`: status.storedVersions after a write.

Pure apart from the installed converter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from controlplane.api.kinds.definition import Conversion

Object = dict[str, Any]

# (webhook spec, objects, desired apiVersion, gvk text for errors, whether
# they are a list's items) -> the converted objects, in order; raises
# machinery.apierrors errors.
WebhookConverter = Callable[[Object, list[Object], str, str, bool], list[Object]]

_converter: WebhookConverter | None = None


def set_webhook_converter(converter: WebhookConverter | None) -> None:
    """Install the function that calls conversion webhooks (the API server's)."""
    global _converter
    _converter = converter


_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def kube_aware_key(version: str) -> tuple[int, int, int, str]:
    """A sort key putting versions in Kubernetes' priority order (ascending
    sorts highest first): v10, v2, v1, v11beta2, v10beta3, v3beta1,
    v12alpha1, v11alpha2, then other names alphabetically."""
    m = _KUBE_VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, "")


def sorted_versions(names: list[str]) -> list[str]:
    return sorted(dict.fromkeys(names), key=kube_aware_key)


def deprecation_warning(spec: Object, version: Object) -> str:
    """The Warning of a request at a deprecated served version ("" when it
    is not deprecated): its deprecationWarning, else `group/version Kind is
    deprecated`, followed by `; use group/version Kind` naming the served,
    not deprecated version of highest priority above it, as kube-apiserver's
    default text."""
    if not version.get("deprecated"):
        return ""
    if version.get("deprecationWarning"):
        return str(version["deprecationWarning"])
    group, kind, name = spec["group"], spec["names"]["kind"], str(version["name"])
    text = f"{group}/{name} {kind} is deprecated"
    newer = [
        str(v["name"])
        for v in spec.get("versions") or []
        if v.get("served")
        and not v.get("deprecated")
        and kube_aware_key(str(v["name"])) < kube_aware_key(name)
    ]
    if newer:
        text += f"; use {group}/{sorted_versions(newer)[0]} {kind}"
    return text


def stored_versions(old_status: Object | None, spec: Object) -> list[str]:
    """status.storedVersions: the ones recorded before, then the storage
    version appended when new (kube-apiserver's CRD strategy)."""
    found = list((old_status or {}).get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if isinstance(v, dict) and v.get("storage") and v.get("name") not in found:
            found.append(str(v.get("name")))
    return found


def gvk_text(api_version: str, kind: str) -> str:
    """A GroupVersionKind as Go's %v prints it (`group/v1, Kind=Widget`)."""
    return f"{api_version}, Kind={kind}"


Tidy = Callable[[Object], None]  # defaults and prunes an object in its own version


def conversions(spec: Object, storage: str, tidy: Tidy) -> dict[str, Conversion]:
    """The conversions of every served version but `storage`, keyed by
    group/version. `tidy` defaults and prunes an object by the schema of
    the version its apiVersion names."""
    group = spec["group"]
    stored_gv = f"{group}/{storage}"
    conversion = spec.get("conversion") or {}
    webhook = conversion.get("webhook") if conversion.get("strategy") == "Webhook" else None
    out: dict[str, Conversion] = {}
    for v in spec.get("versions") or []:
        if not v.get("served") or v.get("name") == storage:
            continue
        served_gv = f"{group}/{v['name']}"
        if webhook is None:
            out[served_gv] = Conversion(_rewrite(stored_gv, None), _rewrite(served_gv, tidy))
        else:
            list_gvk = gvk_text(stored_gv, str(spec["names"].get("listKind") or ""))
            out[served_gv] = Conversion(
                _call(webhook, stored_gv, None),
                _call(webhook, served_gv, tidy),
                remote=True,
                from_stored_many=_call_many(webhook, served_gv, tidy, list_gvk),
            )
    return out


def _rewrite(desired: str, tidy: Tidy | None) -> Callable[[Object], Object]:
    """`tidy`: for objects read (a written one is defaulted, pruned and
    checked for unknown fields by the registry, in the storage version)."""

    def convert(obj: Object) -> Object:
        out = {**obj, "apiVersion": desired}
        if tidy is not None:
            tidy(out)
        return out

    return convert


def _call(webhook: Object, desired: str, tidy: Tidy | None) -> Callable[[Object], Object]:
    def convert(obj: Object) -> Object:
        if obj.get("apiVersion") == desired:
            return obj
        gvk = gvk_text(str(obj.get("apiVersion")), str(obj.get("kind")))
        if _converter is None:
            from machinery.apierrors import InternalError

            raise InternalError(f"conversion webhook for {gvk} failed: no webhook client")
        out = _converter(webhook, [obj], desired, gvk, False)[0]
        if tidy is not None:
            tidy(out)
        return out

    return convert


def _call_many(
    webhook: Object, desired: str, tidy: Tidy, list_gvk: str
) -> Callable[[list[Object]], list[Object]]:
    """A list's items in one ConversionReview (those not at `desired` yet),
    as kube-apiserver converts a list."""

    def convert(objs: list[Object]) -> list[Object]:
        todo = [i for i, obj in enumerate(objs) if obj.get("apiVersion") != desired]
        out = list(objs)
        if todo:
            if _converter is None:
                from machinery.apierrors import InternalError

                raise InternalError(f"conversion webhook for {list_gvk} failed: no webhook client")
            done = _converter(webhook, [objs[i] for i in todo], desired, list_gvk, True)
            for i, obj in zip(todo, done, strict=True):
                out[i] = obj
        for obj in out:
            tidy(obj)
        return out

    return convert
