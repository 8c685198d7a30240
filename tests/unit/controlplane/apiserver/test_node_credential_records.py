"""A node credential's record: when it was issued travels with it, and a
client certificate signed before that (a deleted node's, once its name
joined again) no longer holds."""

from __future__ import annotations

import time

from controlplane.api import jsoncodec
from controlplane.apiserver.codec import ROOT
from controlplane.apiserver.nodecredentials import (
    SIGNED_BEFORE_ISSUE,
    NodeCredentials,
    Record,
    record_of,
    secret_of,
    signed_since_issue,
)
from controlplane.storage.interface import Event, EventType

ISSUED = 1_800_000_000.0
BACKDATE = 300.0  # csrsigning's notBefore: five minutes before signing


def test_the_issue_time_survives_the_secret() -> None:
    record = Record("abc", "uid-1", ISSUED)
    assert record_of(secret_of("n1", record)) == record
    assert record_of(secret_of("n1", Record("abc"))) == Record("abc")  # older records
    # to the millisecond: a Node may appear a fraction of a second after its join
    assert record_of(secret_of("n1", Record("abc", "", ISSUED + 0.25))) == Record(
        "abc", "", ISSUED + 0.25
    )


def test_only_certificates_signed_since_the_issue_hold() -> None:
    record = Record("abc", issued=ISSUED)
    assert signed_since_issue(record, ISSUED - BACKDATE)  # signed at the issue
    assert signed_since_issue(record, ISSUED + 3600 - BACKDATE)  # renewed later
    # Signed two minutes before the name joined again: the deleted node's.
    assert not signed_since_issue(record, ISSUED - 120 - BACKDATE)
    assert not signed_since_issue(record, ISSUED - SIGNED_BEFORE_ISSUE - 1)
    assert signed_since_issue(Record("abc"), 0.0)  # a record of unknown age accepts any


def node_event(kind: EventType, name: str, uid: str) -> Event:
    value = jsoncodec.dumps({"metadata": {"name": name, "uid": uid}})
    return Event(kind, f"{ROOT}nodes/{name}", value, 1)


def credentials(*records: tuple[str, Record]) -> NodeCredentials:
    """Records on hand, no worker: what the events decide, before any write."""
    creds = NodeCredentials(registry=None)  # type: ignore[arg-type]
    creds._records.update(dict(records))
    return creds


def test_a_node_deleted_before_its_uid_was_bound_loses_its_credential() -> None:
    """The worker had not yet recorded the Node's uid when the Node went (a
    loaded etcd): the credential it registered with still dies with it."""
    issued = time.time() - 5
    creds = credentials(("n1", Record("abc", issued=issued)))
    creds.on_event(node_event(EventType.CREATE, "n1", "uid-1"))
    creds.on_event(node_event(EventType.DELETE, "n1", "uid-1"))
    assert not creds.valid("n1", "abc")
    queued = [creds._work.get_nowait() for _ in range(2)]
    assert [item[:2] for item in queued if item] == [("bind", "n1"), ("revoke", "n1")]


def test_a_join_after_the_node_was_deleted_keeps_its_credential() -> None:
    """A record issued after the deleted Node appeared is a new join's."""
    creds = credentials()
    creds.on_event(node_event(EventType.CREATE, "n1", "uid-1"))
    creds._records["n1"] = Record("new", issued=time.time() + 1)
    creds.on_event(node_event(EventType.DELETE, "n1", "uid-1"))
    assert creds.valid("n1", "new")  # not registered yet: it may create its Node


def test_a_known_nodes_heartbeats_are_not_decoded_but_still_bind_its_record() -> None:
    """A Node's uid cannot change, so its status updates (heartbeats, most
    Node events) are not decoded again; each still reconciles its record."""
    creds = credentials()
    creds.on_event(node_event(EventType.CREATE, "n1", "uid-1"))
    creds._records["n1"] = Record("abc")  # the record arrives after the Node
    creds.on_event(Event(EventType.UPDATE, f"{ROOT}nodes/n1", b"not json", 2))
    assert creds._nodes["n1"] == "uid-1"
    assert creds._work.get_nowait() == ("bind", "n1", "abc")
