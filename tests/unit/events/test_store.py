"""hypd.events.store.EventStore on moto DynamoDB (table from template.yaml): recorded once,
listed newest last by when they were recorded, followed with the cursor, filtered by cluster
and detail type."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import pytest

from hypd.aws.dynamodb import Table
from hypd.errors import ValidationError
from hypd.events.derive import derive
from hypd.events.model import (
    ClusterStateChange,
    Event,
    NodeHealthChange,
    OperationStateChange,
)
from hypd.events.publish import publish
from hypd.events.store import MAX_LIMIT, RETENTION, SETTLE, DetailType, EventStore
from hypd.operations import lifecycle
from hypd.operations.models import OperationKind
from hypd.operations.store import OperationStore
from hypd.table import TTL_ATTRIBUTE, event_key
from tests.unit.events.schemas import validator
from tests.unit.events.test_publish import FakeBus, new_operations
from tests.unit.support import FakeClock

pytestmark = pytest.mark.usefixtures("fixed_clock")

OP = "op-" + "a" * 32


@pytest.fixture
def store(table: Table) -> EventStore:
    return EventStore(table)


def operation_event(status: str, version: int, tag: str | None = "train",
                    time: str = "2026-01-15T09:00:00.000Z") -> Event:
    detail = OperationStateChange(
        event_id=f"OP#{OP}|OP|v{version}", operation_id=OP, kind=OperationKind.CREATE_CLUSTER,
        cluster_tag=tag, status=status, links={"operation": f"/operations/{OP}"})
    return Event.of(detail, ["arn:aws:states:us-west-2:123456789012:execution:x:op"], time)


def cluster_event(tag: str, status: str, time: str = "2026-01-15T09:00:00.000Z") -> Event:
    detail = ClusterStateChange(event_id=f"CLUSTER#{tag}|CLUSTER|{time}", tag=tag,
                                status=status, links={"cluster": f"/clusters/{tag}"})
    return Event.of(detail, [], time)


def node_event(tag: str, health: str, number: int) -> Event:
    detail = NodeHealthChange(event_id=f"CLUSTER#{tag}|NODE#i-0abc|v{number}", tag=tag,
                              node_id="i-0abc", health=health, links={})
    return Event.of(detail, [], "2026-01-15T09:00:00.000Z")


def settled(clock: FakeClock) -> None:
    clock.advance(SETTLE.total_seconds())


def ids(events: list[dict[str, Any]]) -> list[str]:
    return [event["id"] for event in events]


# ---------------------------------------------------------------------------- record
def test_an_event_is_recorded_as_eventbridge_delivers_it(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given an event derived from a real write (a new operation)
    operation = lifecycle.new_operation(OperationKind.CREATE_CLUSTER, cluster_tag="train")
    (event,) = derive(None, OperationStore._encode(operation))
    # When it is recorded and listed
    store.record([event], source="hypd")
    settled(fixed_clock)
    (listed,) = store.list_recent().events
    # Then it is the envelope, its id the detail's eventId, its time the transition's
    assert listed == {"id": event.detail["eventId"], "time": operation.updated_at,
                      "source": "hypd", "detail-type": "hypd Operation State Change",
                      "resources": [], "detail": event.detail}
    validator(event.detail_type).validate(listed)


def test_a_redelivered_event_is_recorded_once_and_keeps_its_place(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given two events recorded, the first redelivered after the second
    first, second = operation_event("PENDING", 1), operation_event("RUNNING", 2)
    store.record([first], source="hypd")
    fixed_clock.advance(1)
    store.record([second], source="hypd")
    fixed_clock.advance(1)
    # When both come again (a retried stream batch)
    store.record([first, second], source="hypd")
    settled(fixed_clock)
    # Then each is listed once, in the order of the first recording
    assert ids(store.list_recent().events) == [f"OP#{OP}|OP|v1", f"OP#{OP}|OP|v2"]


def test_a_recorded_event_expires_fourteen_days_after_it_happened(
    store: EventStore, table: Table
) -> None:
    event = operation_event("PENDING", 1, time="2026-01-15T09:00:00.000Z")
    store.record([event], source="hypd")

    item = table.get(event_key(str(event.detail["eventId"])))

    assert item is not None
    expected = datetime.fromisoformat("2026-01-15T09:00:00.000Z") + RETENTION
    assert int(item[TTL_ATTRIBUTE]["N"]) == int(expected.timestamp())


def test_an_event_without_its_time_is_refused(store: EventStore) -> None:
    event = Event("hypd Operation State Change", operation_event("PENDING", 1).detail)
    with pytest.raises(ValueError, match="without its time"):
        store.record([event], source="hypd")


def test_events_of_one_batch_keep_the_stream_order_in_one_millisecond(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given versions 2 to 11 of an operation in one batch (v10 sorts before v2 as text)
    events = [operation_event("RUNNING", version) for version in range(2, 12)]
    store.record(events, source="hypd")
    settled(fixed_clock)
    # Then they are listed in the order given
    assert ids(store.list_recent().events) == [e.detail["eventId"] for e in events]


# ---------------------------------------------------------------------------- list
def test_the_last_events_are_listed_newest_last(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    for version in range(1, 6):
        store.record([operation_event("RUNNING", version)], source="hypd")
        fixed_clock.advance(1)
    settled(fixed_clock)

    page = store.list_recent(limit=3)

    assert ids(page.events) == [f"OP#{OP}|OP|v{v}" for v in (3, 4, 5)]
    assert page.next is not None


def test_a_follower_reads_each_event_once_with_the_cursor(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given one event read
    store.record([operation_event("PENDING", 1)], source="hypd")
    settled(fixed_clock)
    first = store.list_recent()
    assert ids(first.events) == [f"OP#{OP}|OP|v1"]
    # When nothing new was recorded, the cursor stays where it was
    again = store.list_recent(since=first.next)
    assert again.events == []
    assert again.next == first.next
    # When three more are recorded in one batch, the follower reads two, then the third
    store.record([operation_event("RUNNING", v) for v in (2, 3, 4)], source="hypd")
    settled(fixed_clock)
    page = store.list_recent(since=first.next, limit=2)
    assert ids(page.events) == [f"OP#{OP}|OP|v2", f"OP#{OP}|OP|v3"]
    rest = store.list_recent(since=page.next, limit=2)
    assert ids(rest.events) == [f"OP#{OP}|OP|v4"]


def test_an_event_recorded_late_comes_after_the_ones_already_read(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given a follower that read an event of 09:00:05
    store.record([cluster_event("train", "ACTIVE", "2026-01-15T09:00:05.000Z")], source="hypd")
    settled(fixed_clock)
    cursor = store.list_recent().next
    # When an event of 09:00:01 is recorded only now (its stream batch was retried)
    store.record([cluster_event("other", "FAILED", "2026-01-15T09:00:01.000Z")], source="hypd")
    settled(fixed_clock)
    # Then the follower still reads it
    (late,) = store.list_recent(since=cursor).events
    assert late["time"] == "2026-01-15T09:00:01.000Z"


def test_an_event_shows_only_once_settled(store: EventStore, fixed_clock: FakeClock) -> None:
    # Recorded by concurrent publishers, a later event can reach an index before an earlier
    # one: the last moments are not listed, so a cursor never passes an event on its way
    store.record([operation_event("PENDING", 1)], source="hypd")
    early = store.list_recent()
    assert early.events == []
    assert early.next is None
    settled(fixed_clock)
    assert len(store.list_recent(since=None).events) == 1


def test_since_a_time_lists_what_was_recorded_after_it(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    store.record([operation_event("PENDING", 1)], source="hypd")  # at 10:00:00
    fixed_clock.advance(60)
    store.record([operation_event("RUNNING", 2)], source="hypd")  # at 10:01:00
    settled(fixed_clock)

    # exclusive: an event recorded at the very time given is not listed
    assert ids(store.list_recent(since="2026-01-15T10:00:00Z").events) == [f"OP#{OP}|OP|v2"]
    assert len(store.list_recent(since="2026-01-15T11:59:00+02:00").events) == 2
    future = store.list_recent(since="2026-01-16T00:00:00Z")
    assert future.events == []
    assert future.next == "2026-01-16T00:00:00Z"


def test_events_are_listed_by_cluster_by_detail_type_and_by_both(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    store.record([
        operation_event("PENDING", 1, tag="train"),
        operation_event("RUNNING", 2, tag=None),  # an operation of no cluster
        cluster_event("train", "CREATING"),
        cluster_event("serve", "ACTIVE"),
        node_event("train", "Unhealthy", 1),
    ], source="hypd")
    settled(fixed_clock)

    def listed(**filters: Any) -> list[str]:
        return [e["detail-type"].split()[1] + ":" + str(e["detail"].get("clusterTag")
                                                         or e["detail"].get("tag"))
                for e in store.list_recent(**filters).events]

    assert listed() == ["Operation:train", "Operation:None", "Cluster:train", "Cluster:serve",
                        "Node:train"]
    assert listed(cluster="train") == ["Operation:train", "Cluster:train", "Node:train"]
    assert listed(detail_type=DetailType.OPERATION) == ["Operation:train", "Operation:None"]
    assert listed(cluster="train", detail_type=DetailType.NODE) == ["Node:train"]
    assert listed(cluster="nothing") == []


def test_an_expired_event_is_not_listed_before_dynamodb_deletes_it(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    store.record([operation_event("PENDING", 1, time="2026-01-15T09:00:00.000Z")],
                 source="hypd")
    fixed_clock.advance(RETENTION.total_seconds() - 3600 + 1)
    assert store.list_recent().events == []


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-13-01T00:00:00Z"}, "since"),
        ({"since": "2026-01-15T10:00:00"}, "since"),  # no offset: whose time?
        ({"limit": 0}, "limit"),
        ({"limit": MAX_LIMIT + 1}, "limit"),
    ],
)
def test_bad_filters_are_refused_naming_the_field(
    store: EventStore, filters: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        store.list_recent(**filters)
    assert raised.value.details == {"field": field}
    assert raised.value.message.startswith(f"{field}: ")


def test_the_publisher_keeps_what_the_bus_took_and_a_retry_adds_nothing(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given a stream batch of 12 new operations (and a rewrite that makes no event), whose
    # eighth event the bus refuses once
    records = new_operations(12)
    keep = functools.partial(store.record, source="hypd")
    bus = FakeBus(refuse_at=7)
    # When it is published with the store as keep, then retried from the record it names
    answer = publish(records, bus, "hypd", keep=keep)
    (failure,) = answer["batchItemFailures"]
    start = next(i for i, r in enumerate(records)
                 if r["dynamodb"]["SequenceNumber"] == failure["itemIdentifier"])
    assert publish(records[start:], bus, "hypd", keep=keep) == {"batchItemFailures": []}
    settled(fixed_clock)
    # Then each event was recorded once, in stream order
    listed = store.list_recent().events
    assert [e["detail"]["clusterTag"] for e in listed] == [f"t{i}" for i in range(12)]


def test_one_publishers_requests_keep_their_order_on_a_clock_that_did_not_move(
    store: EventStore, fixed_clock: FakeClock
) -> None:
    # Given two requests' events recorded in one millisecond (the local cloud's frozen clock)
    store.record([operation_event("RUNNING", 2), operation_event("RUNNING", 10)], source="hypd")
    store.record([operation_event("RUNNING", 11)], source="hypd")
    settled(fixed_clock)
    # Then the second request's come after the first's
    assert ids(store.list_recent().events) == [f"OP#{OP}|OP|v{v}" for v in (2, 10, 11)]
