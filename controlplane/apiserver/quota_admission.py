"""The ResourceQuota admission plugin, as kube-apiserver's: a write that
would take a namespace past any of its quotas' hard limits is refused, and
one that fits is charged to the quotas' status.used before it is stored.

For each quota of the namespace whose scopes select the object and whose
status.hard limits something the object uses (controlplane/api/quota.py):
a pod must set every compute resource the quota limits (`failed quota: q:
must specify limits.cpu for: c`); a quota the controller has not yet
counted refuses (`status unknown for quota: q, resources: pods`); and used
plus the request may not pass hard (`exceeded quota: q, requested:
pods=1, used: pods=1, limited: pods=1`), all 403. Creates of every kind are
counted; updates of Services and PersistentVolumeClaims by what they add.

Charging writes the quotas' status.used with compare-and-swap, so two API
server threads never both take the last unit. As Kubernetes' quota
evaluator, the writes are batched per namespace: the first caller of a
namespace evaluates and charges every request that arrived while it
worked, in order, with one write per quota, so concurrent creates share a
quota write instead of queueing behind one each. A create (`create`, which
the registry calls to store one) is written with its batch's charge in one
store transaction (Store.update_and_create): on SQLite one commit makes
both durable, and an object whose name is taken is neither stored nor
charged. The quota controller recomputes status.used from the objects
themselves (an object refused after its charge, an update's or etcd's
create that lost a race, is given back there). A dry run is checked,
never charged.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controlplane.api import quota
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.apiserver.codec import (
    decode,
    encode,
    list_prefix,
    meta_of,
    object_key,
    parse_rv,
)
from controlplane.apiserver.registry import Registry
from controlplane.client.errors import ApiError, Conflict, Forbidden, Unavailable
from controlplane.storage.interface import (
    KeyExists,
    KeyNotFound,
    RevisionMismatch,
    StorageError,
    StoreUnavailable,
)

Object = dict[str, Any]

_UPDATED = ("Service", "PersistentVolumeClaim")  # kinds whose updates can use more
_ATTEMPTS = 8


@dataclass
class _Ask:
    info: KindInfo
    name: str
    obj: Object
    delta: quota.Usage
    key: str = ""  # a create's store key and value, written with the charge
    data: bytes | None = None
    error: ApiError | None = None
    stored: int | StorageError | None = None  # the create's revision, or why not
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Quota:
    obj: Object
    rev: int
    hard: dict[str, Fraction]
    used: quota.Usage
    changed: bool = False


class QuotaAdmission:
    """The plugin (Registry.plugins); one per API server."""

    last = True  # after every other admission, the webhooks' included

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[_Ask]] = {}
        self._busy: set[str] = set()
        self._reading: dict[str, threading.Lock] = {}

    def quotas(self, reg: Registry, namespace: str) -> list[Object]:
        """The namespace's quotas as last read (shared: read only).

        Where the store tells when a prefix was last written (the read cache
        keeps them), one caller of a namespace at a time reads them again: a
        charge's commit releases many creates at once, whose next requests
        all find the quotas changed, and the first one's read serves the rest.
        """
        prefix = list_prefix(by_kind("ResourceQuota"), namespace)

        def load() -> list[Object]:
            return [decode(d, r) for d, r in reg.list("ResourceQuota", namespace).items]

        def once() -> list[Object]:
            with self._lock:
                reading = self._reading.setdefault(namespace, threading.Lock())
            with reading:
                again: list[Object] = reg.cached(prefix, namespace, load)
                return again

        cached = getattr(reg.store, "prefix_revision", None) is not None
        found: list[Object] = reg.cached(prefix, namespace, once if cached else load)
        return found

    def __call__(
        self, reg: Registry, info: KindInfo, obj: Object, old: Object | None, dry_run: bool
    ) -> None:
        found = self._ask(reg, info, obj, old)
        if found is None:
            return
        ask, current = found
        if dry_run:  # checked against the quotas as they are, never charged
            self._evaluate(ask, {str(meta_of(q).get("name")): _state(q, 0) for q in current})
        else:
            self._charge(reg, str(meta_of(obj).get("namespace") or ""), ask)
        if ask.error is not None:
            raise ask.error

    def create(
        self, reg: Registry, info: KindInfo, obj: Object, key: str, data: bytes
    ) -> int | None:
        """Store a create (obj, as `data` under `key`) with its charge, in one
        store transaction; its revision, or None when no quota limits it (the
        caller stores it alone). Raises the quota's refusal, or the store's
        KeyExists (nothing charged) or StoreUnavailable."""
        found = self._ask(reg, info, obj, None)
        if found is None:
            return None
        ask = found[0]
        ask.key, ask.data = key, data
        self._charge(reg, str(meta_of(obj).get("namespace") or ""), ask)
        if ask.error is not None:
            raise ask.error
        if isinstance(ask.stored, StorageError):
            raise ask.stored
        assert ask.stored is not None
        return ask.stored

    def _ask(
        self, reg: Registry, info: KindInfo, obj: Object, old: Object | None
    ) -> tuple[_Ask, list[Object]] | None:
        """What the write asks of the namespace's quotas, and the quotas; None
        when none of them limits it."""
        if not info.namespaced or (old is not None and info.key not in _UPDATED):
            return None
        current = self.quotas(reg, str(meta_of(obj).get("namespace") or ""))
        if not current:
            return None
        delta = quota.usage(info, obj)
        if old is not None:
            delta.merge(quota.usage(info, old), -1)
            delta.values = {r: v for r, v in delta.values.items() if v > 0}
            if not delta.values:
                return None
        ask = _Ask(info, str(meta_of(obj).get("name") or ""), obj, delta)
        if not any(_limits(q, ask) for q in current):
            return None
        return ask, current

    # ---- batching ---------------------------------------------------------------

    def _charge(self, reg: Registry, namespace: str, ask: _Ask) -> None:
        with self._lock:
            self._pending.setdefault(namespace, []).append(ask)
            leader = namespace not in self._busy
            self._busy.add(namespace)
        if not leader:
            ask.done.wait()
            return
        while True:
            with self._lock:
                batch, later = _distinct(self._pending.pop(namespace, []))
                if later:  # the same name asked twice: the next batch sees the first stored
                    self._pending[namespace] = later
                if not batch:
                    self._busy.discard(namespace)
                    return
            try:
                self._run(reg, namespace, batch)
            except ApiError as err:
                for each in batch:
                    each.error = each.error or err
            except Exception as err:  # never leave a waiter hanging
                for each in batch:
                    each.error = each.error or Unavailable(f"quota admission: {err}")
            finally:
                for each in batch:
                    each.done.set()

    def _run(self, reg: Registry, namespace: str, batch: list[_Ask]) -> None:
        info = by_kind("ResourceQuota")
        conflicts = 0
        while batch:
            # The read cache answers a fresh list: it is stamped with the
            # revision of the namespace's quotas, which every write moves.
            states = {
                str(meta_of(q).get("name")): _state(q, parse_rv(meta_of(q)["resourceVersion"]))
                for q in self.quotas(reg, namespace)
            }
            for ask in batch:
                ask.error = None
                self._evaluate(ask, states)
            updates = [
                (object_key(info, namespace, name), encode(_charged(state)), state.rev)
                for name, state in states.items()
                if state.changed
            ]
            creates = [a for a in batch if a.error is None and a.data is not None]
            if not updates and not creates:
                return
            try:
                stored = reg.store.update_and_create(
                    updates, [(a.key, a.data) for a in creates if a.data is not None]
                )
            except KeyExists as err:  # its name is taken: neither stored nor charged
                taken = next((a for a in creates if a.key == str(err)), None)
                if taken is None:
                    raise Unavailable(f"quota admission: {err}") from err
                taken.stored = err
                batch = [a for a in batch if a is not taken]
                continue
            except (RevisionMismatch, KeyNotFound):
                # A quota changed under us (the controller): evaluate again.
                conflicts += 1
                if conflicts >= _ATTEMPTS:
                    raise Conflict("Operation cannot be fulfilled on resourcequotas: the quotas "
                                   "are being written by others; try again",
                                   retry_after=1) from None  # fmt: skip
                continue
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
            for ask, result in zip(creates, stored, strict=True):
                ask.stored = result
            return

    # ---- evaluation ---------------------------------------------------------------

    @staticmethod
    def _evaluate(ask: _Ask, states: dict[str, _Quota]) -> None:
        """Check `ask` against every quota, and charge it to their states when it fits."""
        relevant = [(n, s) for n, s in sorted(states.items()) if _limits(s.obj, ask)]
        prefix = f'{ask.info.resource} "{ask.name}" is forbidden: '
        for name, state in relevant:
            if ask.info.key == "Pod":
                missing = quota.missing_constraints(state.hard, ask.obj)
                if missing:
                    ask.error = Forbidden(f"{prefix}failed quota: {name}: {missing}")
                    return
            requested = [r for r in state.hard if r in ask.delta.values]
            unknown = sorted(
                r for r in state.hard
                if quota.matches(ask.info, r) and r not in state.used.values
            )  # fmt: skip
            if unknown:
                ask.error = Forbidden(f"{prefix}status unknown for quota: {name}, resources: "
                                      + ", ".join(unknown))  # fmt: skip
                return
            exceeded = [
                r for r in requested
                if state.used.values[r] + ask.delta.values[r] > state.hard[r]
            ]  # fmt: skip
            if exceeded:
                binary = state.used.binary | ask.delta.binary
                ask.error = Forbidden(
                    f"{prefix}exceeded quota: {name}, "
                    f"requested: {quota.pretty(ask.delta.values, exceeded, binary)}, "
                    f"used: {quota.pretty(state.used.values, exceeded, binary)}, "
                    f"limited: {quota.pretty(state.hard, exceeded, binary)}"
                )
                return
        for _name, state in relevant:
            for r in state.hard:
                if r in ask.delta.values:
                    state.used.add(r, ask.delta.values[r], r in ask.delta.binary)
                    state.changed = True


def _distinct(batch: list[_Ask]) -> tuple[list[_Ask], list[_Ask]]:
    """(the batch with each create's key once, the creates of a key already in it)."""
    keys: set[str] = set()
    first: list[_Ask] = []
    later: list[_Ask] = []
    for ask in batch:
        if ask.data is not None and ask.key in keys:
            later.append(ask)
        else:
            keys.add(ask.key)
            first.append(ask)
    return first, later


def _charged(state: _Quota) -> Object:
    """The quota with status.used as charged."""
    updated = dict(state.obj)
    status = dict(updated.get("status") or {})
    status["used"] = state.used.formatted(set(state.used.values) | set(status.get("used") or {}))
    updated["status"] = status
    return updated


def _state(obj: Object, rev: int) -> _Quota:
    return _Quota(obj, rev, quota.hard_of(obj), quota.used_of(obj))


def _limits(q: Object, ask: _Ask) -> bool:
    """Whether quota `q` selects the object and limits something its kind counts."""
    hard = (q.get("status") or {}).get("hard") or {}
    return any(quota.matches(ask.info, r) for r in hard) and quota.applies(q, ask.info, ask.obj)
