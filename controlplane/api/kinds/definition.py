"""KindDef: everything about one kind, in one object.

A kind's module (controlplane/api/kinds/<group>/<kind>.py) declares one
`DEFINITION = KindDef(...)`; the kinds registry (registry.py) finds it, and
the generic machinery reads it: validation.validate(), defaults,
the REST tables and skiffctl's columns, strategic merge patch and
server-side apply, pruning, the OpenAPI documents, discovery, the served
apiVersions and their conversions, and admission. What Kubernetes spreads
over pkg/apis/<group> (types, defaults, validation), its registry strategy
and its printers is here one object:

- `info`: the KindInfo row (names, group/version, scope, subresources,
  other apiVersions accepted in manifests, discovery categories).
- `types`: the schema of its objects, as schema.Type by name: the kind's own
  type (the one whose `kinds` names its group/version/kind) and every type
  it refers to (shared ones such as PodTemplateSpec included). No type for
  an apiVersion: objects there are not pruned, and the OpenAPI documents
  publish an open schema.
- `defaults(obj)`: fills in what the API server defaults, in place.
- `validate(errors, obj, old)`: the kind's own rules (`old`: the stored
  object on update); metadata and apiVersion are checked for every kind
  before, with `name_rule` for metadata.name.
- `admit(api, info, obj, old)`: what the API server's admission does for
  this kind on create and update (may change obj, raises API errors).
- `admit_delete(api, info, stored)`: admission on delete: raises to refuse
  it (Volcano's queue webhook keeps `default`, `root` and parents).
- `keeps_status_on_create`: a create keeps the status it carries (Node);
  every other kind with a status subresource starts with `initial_status`
  (what Kubernetes' zero status serializes to: a Service's
  `{loadBalancer: {}}`, a StatefulSet's zero counts; `{}` by default).
- `printer`: the columns of `kubectl get` and of the REST Table (as
  Kubernetes' printers define them); none: NAME, AGE.
- `patch_meta`: how strategic merge patch and server-side apply merge its
  lists and maps, by field path; None: no strategic merge patch (JSON merge
  patch semantics).
- `conversions`: other apiVersions served in another shape, with the
  functions that convert to and from the stored one.
- `subresources`: subresources beyond status and scale, as discovery lists them.
- `status_subresources`: those of `subresources` that write the status as
  status does (a CertificateSigningRequest's approval); `prepare_update`
  says what each may change.
- `prepare_update(subresource, new, old)`: what the kind's update strategies
  reset before validation, in place (Kubernetes' PrepareForUpdate: a CSR's
  spec never changes, only the approval writes Approved/Denied, only the
  status the certificate); subresource "" for the object itself. Returns
  the problems it found (`path: problem`, refused with validation's).

Every field but `info` is optional, so a new hook is a new field with a
default that changes nothing. Pure data and functions: a kind's module
never imports the API server, the storage or the client transport.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from controlplane.api.checks import Errors
from controlplane.api.kinds.info import KindInfo
from controlplane.api.schema import Type

Object = dict[str, Any]

NameRule = Literal["subdomain", "label", "path-segment"]


@dataclass(frozen=True)
class FieldMeta:
    """How one list or map field merges (Kubernetes' `patchStrategy` and
    `patchMergeKey`, published as x-kubernetes-patch-strategy/-merge-key)."""

    strategy: str  # "merge", "retainKeys" or "merge,retainKeys"
    merge_key: str = ""  # for a list of objects: the field that identifies an item

    @property
    def merges(self) -> bool:
        return "merge" in self.strategy.split(",")

    @property
    def retains_keys(self) -> bool:
        return "retainKeys" in self.strategy.split(",")


# A table row: (object, now, wide) -> the cells of every column when wide,
# of the priority-0 columns otherwise.
Row = Callable[[Object, float, bool], list[str]]


class Column(NamedTuple):
    """One column of a kind's table. type/format/description left empty take
    the facts every kind shares for that header (NAME, AGE, READY, ...)."""

    name: str
    priority: int = 0  # 1: shown with -o wide only
    type: str = ""  # the OpenAPI type of its cells: string, integer, number, boolean, date
    format: str = ""
    description: str = ""


class Printer(NamedTuple):
    columns: tuple[Column, ...]
    row: Row

    def headers(self, wide: bool) -> list[str]:
        return [c.name for c in self.columns if wide or c.priority == 0]


def columns(names: tuple[str, ...], wide: tuple[str, ...] = ()) -> tuple[Column, ...]:
    """Columns by header, those of `wide` at priority 1 after the others."""
    return (*(Column(n) for n in names), *(Column(n, 1) for n in wide))


class Conversion(NamedTuple):
    """An apiVersion served in another shape than the stored one."""

    to_stored: Callable[[Object], Object]  # the served version's object -> the stored one
    from_stored: Callable[[Object], Object]  # and back
    remote: bool = False  # calls out (a conversion webhook): never on the event loop
    # A list's items at once (one webhook call per list page), when it can.
    from_stored_many: Callable[[list[Object]], list[Object]] | None = None


class Subresource(NamedTuple):
    """A subresource discovery lists beyond status and scale (pods/log)."""

    name: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""
    kind: str = ""  # "": the kind's own


class AdmissionApi(Protocol):
    """What a kind's admission hook may use of the API server: reads of
    other objects and the cluster's settings."""

    service_cidr: str

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Object: ...

    def cached_objects(self, kind: str) -> list[Object]:
        """Every object of a kind, decoded; shared: read, never change."""
        ...


# (api, info, obj, old) -> None: may change obj; raises controlplane.client.errors.
Admit = Callable[[AdmissionApi, KindInfo, Object, Object | None], None]
# (api, info, stored) -> None: refuses a DELETE by raising (a webhook on DELETE).
AdmitDelete = Callable[[AdmissionApi, KindInfo, Object], None]
Validate = Callable[[Errors, Object, Object | None], None]
Default = Callable[[Object], None]
# (subresource, new, old) -> problems: resets in `new` what that write may not change.
PrepareUpdate = Callable[[str, Object, Object], list[str]]


@dataclass(frozen=True, eq=False, repr=False)
class KindDef:
    """See the module docstring."""

    info: KindInfo
    types: Mapping[str, Type] = field(default_factory=dict)
    defaults: Default | None = None
    validate: Validate | None = None
    name_rule: NameRule = "subdomain"
    admit: Admit | None = None
    admit_delete: AdmitDelete | None = None
    keeps_status_on_create: bool = False
    initial_status: Mapping[str, Any] = field(default_factory=dict)
    printer: Printer | None = None
    patch_meta: Mapping[str, FieldMeta] | None = None
    conversions: Mapping[str, Conversion] = field(default_factory=dict)
    subresources: tuple[Subresource, ...] = ()
    status_subresources: tuple[str, ...] = ()
    prepare_update: PrepareUpdate | None = None

    @property
    def key(self) -> str:
        return self.info.key

    def __repr__(self) -> str:
        return f"KindDef({self.info.key})"

    def served_versions(self) -> tuple[str, ...]:
        """Every group/version the kind is served at, its own first."""
        info = self.info
        return tuple(dict.fromkeys((info.api_version, *info.also_api_versions, *self.conversions)))
