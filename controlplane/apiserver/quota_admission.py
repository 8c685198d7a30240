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
evaluator, the writes are batched per namespace: a caller that finds no
charge of its namespace under way leads one, evaluating and charging
every request that arrived in the meantime, in order, with one write per
quota, so concurrent creates share a quota write instead of queueing
behind one each; then it wakes the first caller that arrived during its
write to lead the next batch (its own request among them) and returns,
never keeping its own client waiting on others' batches. A create (`create`, which
the registry calls to store one) is written with its batch's charge in one
store transaction (Store.update_and_create): on SQLite one commit makes
both durable, and an object whose name is taken is neither stored nor
charged. The quota controller recomputes status.used from the objects
themselves (an object refused after its charge, an update's or etcd's
create that lost a race, is given back there). A dry run is checked,
never charged.

The quotas a charge wrote are kept, parsed, for the namespace's next
creates instead of being read back and parsed again: on SQLite, which
counts the writes under a prefix (prefix_writes), they serve while the
count is the one they were read at plus the charges' own writes, so any
write by someone else (the controller's status, a new quota) is seen by
the next create; on etcd a batch is evaluated against the newest of its
own creates' reads begun after the namespace's last charge, and a create
that joins charges under way reads none itself. Either way the charge is
a compare-and-swap: what is kept never lets a create past hard, at worst
it costs a conflict and a read. A quota is parsed once per version (its
hard limits, scopes, the limits every container must set), and the newest
version of each, read or written, is kept parsed for the reads that find
it unchanged.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from controlplane.api import quota
from controlplane.api.kinds import KindInfo, by_kind
from controlplane.apiserver.codec import (
    decode,
    encode,
    list_prefix,
    meta_of,
    object_key,
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
    known: _Known | None = None  # the quotas as read when it was asked
    # Held while it waits for another caller: released when its batch has
    # run, or (`lead`) for it to lead the next batch itself.
    done: threading.Lock | None = None
    lead: bool = False


class _Limits:
    """What a quota's spec and status.hard say, parsed once per resourceVersion
    and shared by every copy charged from it: the hard limits (nano units),
    its scopes, the limits every container must set, and per kind the hard
    limits its objects count toward (filled as kinds come)."""

    __slots__ = ("hard", "matching", "required", "scopes")

    def __init__(self, obj: Object) -> None:
        self.hard = quota.hard_of(obj)
        self.scopes = quota.scopes_of(obj)
        self.required = quota.required(self.hard)
        self.matching: dict[str, tuple[str, ...]] = {}

    def limited(self, info: KindInfo) -> tuple[str, ...]:
        """The hard limits objects of `info` count toward (quota.matches)."""
        found = self.matching.get(info.key)
        if found is None:
            found = tuple(r for r in self.hard if quota.matches(info, r))
            self.matching[info.key] = found
        return found


@dataclass
class _Quota:
    obj: Object
    rev: int
    limits: _Limits
    used: quota.Usage
    changed: bool = False

    def copy(self) -> _Quota:
        """A copy to charge (limits and obj shared: never changed)."""
        used = quota.Usage(dict(self.used.values), set(self.used.binary))
        return _Quota(self.obj, self.rev, self.limits, used)


@dataclass
class _Known:
    """A namespace's quotas as last read or written, parsed.

    `writes`: the store's count of writes under the namespace's quota prefix
    (SqliteStore.prefix_writes) these are the quotas at; -1 where the store
    cannot tell, and the quotas are read for every use."""

    writes: int
    states: dict[str, _Quota]  # by name (shared templates: charged through copies)
    seq: int  # which read of the admission's it came from


class QuotaAdmission:
    """The plugin (Registry.plugins); one per API server."""

    last = True  # after every other admission, the webhooks' included

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[_Ask]] = {}
        self._busy: set[str] = set()
        self._reading: dict[str, threading.Lock] = {}
        self._known: dict[str, _Known] = {}
        self._reads = itertools.count(1)  # numbers each read of a namespace's quotas
        self._committed: dict[str, int] = {}  # namespace -> reads begun before its last charge
        # namespace -> the charge being written: the prefix_writes count it
        # was evaluated at, the count once it is written, and a lock its
        # leader holds until it has kept the quotas as charged.
        self._flight: dict[str, tuple[int, int, threading.Lock]] = {}
        # Each quota's newest version seen, parsed (a template): by (revision,
        # stored bytes), and which that is by (namespace, name).
        self._parsed: dict[tuple[int, bytes], _Quota] = {}
        self._parsed_at: dict[tuple[str, str], tuple[int, bytes]] = {}

    def known(self, reg: Registry, namespace: str) -> _Known:
        """The namespace's quotas now (shared: read only).

        Where the store counts the writes under a prefix (SQLite's
        prefix_writes), the quotas last read or charged here serve while the
        count stays where they were taken, so a charge's own write is not read
        back; when the count moved, one caller of a namespace at a time reads
        them again (a charge's commit releases many creates at once, and the
        first one's read serves the rest), except that a caller finding the
        count moved by a charge of the namespace's own, just written, waits
        for its leader to keep the quotas as charged instead of reading and
        parsing them back. Elsewhere (etcd) they are read.
        """
        writes_of = getattr(reg.store, "prefix_writes", None)
        if writes_of is None:
            return self._read(reg, namespace, -1)
        prefix = list_prefix(by_kind("ResourceQuota"), namespace)
        found = self._known.get(namespace)
        if found is not None:
            writes = writes_of(prefix)
            if found.writes == writes:
                return found
            flight = self._flight.get(namespace)
            if flight is not None and flight[:2] == (found.writes, writes):
                # Only a charge of ours wrote since (or it failed and one other
                # write did): its leader keeps the quotas as charged at once.
                flight[2].acquire()
                flight[2].release()
                found = self._known.get(namespace)
                if found is not None and found.writes == writes_of(prefix):
                    return found
        with self._lock:
            reading = self._reading.setdefault(namespace, threading.Lock())
        with reading:
            writes = writes_of(prefix)  # before reading: a newer read is only read again
            found = self._known.get(namespace)
            if found is None or found.writes != writes:
                found = self._read(reg, namespace, writes)
                self._keep(namespace, found)
            return found

    def _read(self, reg: Registry, namespace: str, writes: int) -> _Known:
        seq = next(self._reads)
        states = {}
        for data, rev in reg.list("ResourceQuota", namespace).items:
            # A quota as stored at a revision is decoded and parsed once.
            state = self._parsed.get((rev, data))
            if state is None:
                state = _state(decode(data, rev), rev)
                self._parse(namespace, state, data)
            states[str(meta_of(state.obj).get("name"))] = state
        return _Known(writes, states, seq)

    def _parse(self, namespace: str, state: _Quota, data: bytes) -> None:
        """Keep `state` as the quota stored as `data` (in place of an older version)."""
        name = (namespace, str(meta_of(state.obj).get("name")))
        with self._lock:
            older = self._parsed_at.get(name)
            if older is not None and older[0] > state.rev:
                return  # a newer one is kept
            if older is not None:
                self._parsed.pop(older, None)
            elif len(self._parsed_at) >= 4096:
                self._parsed.clear()
                self._parsed_at.clear()
            self._parsed[(state.rev, data)] = state
            self._parsed_at[name] = (state.rev, data)

    def _keep(self, namespace: str, known: _Known) -> None:
        with self._lock:
            kept = self._known.get(namespace)
            if kept is not None and kept.writes > known.writes:
                return  # counts only grow: the kept one is newer
            if kept is None and len(self._known) >= 4096:
                self._known.clear()
                self._reading.clear()
            self._known[namespace] = known

    def __call__(
        self, reg: Registry, info: KindInfo, obj: Object, old: Object | None, dry_run: bool
    ) -> None:
        ask = self._ask(reg, info, obj, old, join=not dry_run)
        if ask is None:
            return
        if dry_run:  # checked against the quotas as they are, never charged
            assert ask.known is not None
            self._evaluate(ask, {n: s.copy() for n, s in ask.known.states.items()})
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
        ask = self._ask(reg, info, obj, None, join=True)
        if ask is None:
            return None
        ask.key, ask.data = key, data
        self._charge(reg, str(meta_of(obj).get("namespace") or ""), ask)
        if ask.error is not None:
            raise ask.error
        if isinstance(ask.stored, StorageError):
            raise ask.stored
        assert ask.stored is not None
        return ask.stored

    def _ask(
        self, reg: Registry, info: KindInfo, obj: Object, old: Object | None, join: bool = False
    ) -> _Ask | None:
        """What the write asks of the namespace's quotas (with them as read);
        None when none of them limits it. `join`: to be charged; where the
        quotas are read for every use (etcd) and the namespace's charges are
        under way, it joins them unread: its batch reads them once for all
        and writes it uncharged if none limits it."""
        namespace = str(meta_of(obj).get("namespace") or "")
        if not info.namespaced or (old is not None and info.key not in _UPDATED):
            return None
        unread = join and namespace in self._busy and not hasattr(reg.store, "prefix_writes")
        known = None if unread else self.known(reg, namespace)
        if known is not None and not known.states:
            return None
        delta = quota.usage(info, obj)
        if old is not None:
            delta.merge(quota.usage(info, old), -1)
            delta.values = {r: v for r, v in delta.values.items() if v > 0}
            if not delta.values:
                return None
        ask = _Ask(info, str(meta_of(obj).get("name") or ""), obj, delta, known=known)
        if known is not None and not any(_limits(s, ask) for s in known.states.values()):
            return None
        return ask

    # ---- batching ---------------------------------------------------------------

    def _charge(self, reg: Registry, namespace: str, ask: _Ask) -> None:
        """Charge `ask` in a batch of its namespace's: led by this caller when
        none is under way, else by one that is; a leader runs one batch and
        hands the next to a caller waiting in it, so no caller waits for
        more than the batches ahead of its own (a leader running batch
        after batch would keep its own client waiting all along)."""
        with self._lock:
            self._pending.setdefault(namespace, []).append(ask)
            if namespace in self._busy:
                ask.done = threading.Lock()
                ask.done.acquire()
            else:
                self._busy.add(namespace)
        if ask.done is not None:
            ask.done.acquire()  # released by the leader of its batch, or to lead
            if not ask.lead:
                return
        with self._lock:
            batch, later = _distinct(self._pending.pop(namespace, []))
            if later:  # the same name asked twice: the next batch sees the first stored
                self._pending[namespace] = later
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
                if each.done is not None and each is not ask:
                    each.done.release()
            with self._lock:
                waiting = self._pending.get(namespace)
                if waiting:  # its first leads the next batch (the batch holds it)
                    waiting[0].lead = True
                    assert waiting[0].done is not None
                    waiting[0].done.release()
                else:
                    self._pending.pop(namespace, None)
                    self._busy.discard(namespace)

    def _base(self, reg: Registry, namespace: str, batch: list[_Ask]) -> _Known:
        """The quotas a batch is evaluated against: as known (SQLite), or the
        newest read of the batch's own that began after this namespace's last
        charge was written (etcd: a charge's write is never read back by then)."""
        reads = [a.known for a in batch if a.known is not None and a.known.writes < 0]
        newest = max(reads, key=lambda k: k.seq, default=None)
        if newest is not None and newest.seq > self._committed.get(namespace, 0):
            return newest
        return self.known(reg, namespace)

    def _run(self, reg: Registry, namespace: str, batch: list[_Ask]) -> None:
        info = by_kind("ResourceQuota")
        conflicts = 0
        known = self._base(reg, namespace, batch)
        while batch:
            states = {name: state.copy() for name, state in known.states.items()}
            for ask in batch:
                ask.error = None
                self._evaluate(ask, states)
            changed = {name: _charged(s) for name, s in states.items() if s.changed}
            updates = [
                (object_key(info, namespace, name), encode(obj), states[name].rev)
                for name, obj in changed.items()
            ]
            creates = [a for a in batch if a.error is None and a.data is not None]
            if not updates and not creates:
                return
            flight = self._take_off(namespace, known, len(updates))
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
                self._land(namespace, flight)
                known = self.known(reg, namespace)
                continue
            except StoreUnavailable as err:
                raise Unavailable(str(err)) from err
            else:
                for ask, result in zip(creates, stored[len(updates) :], strict=True):
                    ask.stored = result
                written = [data for _, data, _ in updates]
                self._wrote(namespace, known, states, changed, written, stored[: len(updates)])
                return
            finally:
                self._land(namespace, flight)

    def _take_off(
        self, namespace: str, known: _Known, updates: int
    ) -> tuple[int, int, threading.Lock] | None:
        """Mark a charge of `updates` quota writes, evaluated on `known`, as
        being written (where the store counts writes)."""
        if known.writes < 0 or not updates:
            return None
        held = threading.Lock()
        held.acquire()
        flight = (known.writes, known.writes + updates, held)
        self._flight[namespace] = flight
        return flight

    def _land(self, namespace: str, flight: tuple[int, int, threading.Lock] | None) -> None:
        """The charge marked by _take_off is written or failed (once only)."""
        if flight is not None and self._flight.get(namespace) is flight:
            del self._flight[namespace]
            flight[2].release()

    def _wrote(
        self, namespace: str, known: _Known, states: dict[str, _Quota], charged: dict[str, Object],
        written: list[bytes], revs: list[int | StorageError],
    ) -> None:  # fmt: skip
        """Keep the quotas as charged (`written` at `revs`): parsed, for the
        reads that find them so (etcd), and as `known` with the charges,
        valid while the store counts no other write under their prefix."""
        if len(self._committed) >= 4096:
            self._committed.clear()
        self._committed[namespace] = next(self._reads)
        kept: dict[str, _Quota] = {}
        for (name, obj), data, rev in zip(charged.items(), written, revs, strict=True):
            assert isinstance(rev, int)
            obj["metadata"] = {**meta_of(obj), "resourceVersion": str(rev)}
            kept[name] = _Quota(obj, rev, states[name].limits, states[name].used)
            self._parse(namespace, kept[name], data)
        if known.writes < 0:
            return
        # (A ResourceQuota created with the charge is one more write than
        # these account for: the count tells, and the next use reads.)
        now = {name: kept.get(name, state) for name, state in known.states.items()}
        self._keep(namespace, _Known(known.writes + len(revs), now, known.seq))

    # ---- evaluation ---------------------------------------------------------------

    @staticmethod
    def _evaluate(ask: _Ask, states: dict[str, _Quota]) -> None:
        """Check `ask` against every quota, and charge it to their states when it fits."""
        relevant = [(n, s) for n, s in sorted(states.items()) if _limits(s, ask)]
        prefix = f'{ask.info.resource} "{ask.name}" is forbidden: '
        delta = ask.delta.values
        sums: list[tuple[_Quota, dict[str, int]]] = []
        for name, state in relevant:
            limits = state.limits
            if ask.info.key == "Pod" and limits.required:
                missing = quota.missing_constraints(limits.required, ask.obj)
                if missing:
                    ask.error = Forbidden(f"{prefix}failed quota: {name}: {missing}")
                    return
            used = state.used.values
            unknown = sorted(r for r in limits.limited(ask.info) if r not in used)
            if unknown:
                ask.error = Forbidden(f"{prefix}status unknown for quota: {name}, resources: "
                                      + ", ".join(unknown))  # fmt: skip
                return
            # What it would use (every resource it requests is one its kind counts).
            hard = limits.hard
            after = {r: used[r] + delta[r] for r in hard if r in delta}
            exceeded = [r for r, total in after.items() if total > hard[r]]
            if exceeded:
                binary = state.used.binary | ask.delta.binary
                ask.error = Forbidden(
                    f"{prefix}exceeded quota: {name}, "
                    f"requested: {quota.pretty(delta, exceeded, binary)}, "
                    f"used: {quota.pretty(used, exceeded, binary)}, "
                    f"limited: {quota.pretty(hard, exceeded, binary)}"
                )
                return
            sums.append((state, after))
        for state, after in sums:
            for r, total in after.items():
                if r in ask.delta.binary and not state.used.values[r]:  # as Usage.add
                    state.used.binary.add(r)
                state.used.values[r] = total
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
    return _Quota(obj, rev, _Limits(obj), quota.used_of(obj))


def _limits(state: _Quota, ask: _Ask) -> bool:
    """Whether the quota selects the object and limits something its kind counts."""
    limits = state.limits
    return bool(limits.limited(ask.info)) and quota.selects(limits.scopes, ask.info, ask.obj)
