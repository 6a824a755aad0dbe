"""The events hypd published, recorded in its table for clients to read back (GET /events).

The publisher records each event after EventBridge took it (`EventStore.record`); the API lists
them (`EventStore.list_recent`). Clients thus read a cluster's recent events through the REST
API, the same on the local cloud and on a deployment, without a queue or a rule of their own.

The layout (docs/automation.md, "Clients"; keys in `hypd.table`):

- One item per event, keyed by its ``eventId`` and written only if absent: a redelivered
  event finds its record and leaves it as it is (same place in the listings, so a follower
  does not see it twice).
- Listed by when hypd recorded it, not by the event's own time: an event recorded late (its
  stream batch retried) comes after the ones a follower has read, instead of before them where
  a cursor would skip it. The event's ``time`` is the transition's.
- The four listings mirror the operations': all events, a cluster's, a detail type's, a
  cluster's of one type. Each is one Query, newest last.
- A listing shows only events recorded at least `SETTLE` ago: recorded by concurrent
  publishers, a later event can show in an index before an earlier one; hiding the last
  moments means a follower's cursor never passes an event still on its way.
- Each item expires `RETENTION` after the event (the table's TTL attribute).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from hypd import clock
from hypd.aws.dynamodb import ConditionFailed, Table, decode_body, encode_item
from hypd.errors import ValidationError
from hypd.events.model import (
    CLUSTER_STATE_CHANGE,
    NODE_HEALTH_CHANGE,
    OPERATION_STATE_CHANGE,
    Event,
)
from hypd.table import (
    TTL_ATTRIBUTE,
    event_index_keys,
    event_key,
    event_sort_key,
    events_partition,
)

RETENTION = timedelta(days=14)
"""How long a recorded event stays readable (DynamoDB deletes it some time after)."""

SETTLE = timedelta(seconds=2)
"""How long after it was recorded an event shows in the listings (see the module's doc)."""

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class DetailType(StrEnum):
    """The detail types hypd publishes, as EventBridge names them (``detail-type``)."""

    OPERATION = OPERATION_STATE_CHANGE
    CLUSTER = CLUSTER_STATE_CHANGE
    NODE = NODE_HEALTH_CHANGE

    @property
    def kind(self) -> str:
        """The short name: operation, cluster or node."""
        return self.name.lower()


SINCE_PATTERN = (
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})"
    r"(#[A-Za-z0-9#|:._+-]{1,400})?$"
)
"""``since``: an ISO time with its offset, or the ``next`` of a previous listing (that time
followed by ``#`` and the last event's place)."""

_SINCE = re.compile(SINCE_PATTERN)
_FLOOR = "0"
"""Below every sort key (they start with a year)."""
_ABOVE_TIME = "$"
"""Sorts after ``#``: ``{time}$`` is above every sort key of that time, below later ones."""


@dataclass(frozen=True)
class EventPage:
    events: list[dict[str, Any]]
    """Each event as EventBridge delivers it (``id``, ``time``, ``source``, ``detail-type``,
    ``resources``, ``detail``), newest last."""
    next: str | None
    """Pass as ``since`` to read the events recorded after these (None: none were listed and
    no ``since`` was given)."""


class EventStore:
    def __init__(self, table: Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._last = ("", -1)
        """The millisecond and position of the last event this store recorded: the next
        one in the same millisecond (the next request's events, on a clock that did not
        move) takes the next position, so one publisher's events keep their order."""

    # ------------------------------------------------------------------ writes
    def record(self, events: Iterable[Event], *, source: str) -> None:
        """Record ``events`` (published with ``source``), in the order given; an event
        recorded already (a redelivery) is left as it was. The publisher's ``keep``
        (`hypd.events.publish`): ``functools.partial(store.record, source=source)``.

        Raises:
            ValueError: an event without its ``time`` (`hypd.events.derive` sets it).
            TemporaryError: DynamoDB throttled or failed (translated by the adapter).
        """
        for event in events:
            recorded_at, position = self._place()
            # attribute_not_exists(PK): recorded once; a redelivery keeps its first place.
            with contextlib.suppress(ConditionFailed):
                self._table.put(self._encode(event, source, recorded_at, position),
                                condition="attribute_not_exists(PK)")

    def _place(self) -> tuple[str, int]:
        """(when, position within that millisecond) of the next event recorded."""
        with self._lock:
            now = clock.now_iso()
            last, position = self._last
            self._last = (now, position + 1 if now == last else 0)
            return self._last

    # ------------------------------------------------------------------ reads
    def list_recent(
        self,
        *,
        cluster: str | None = None,
        since: str | None = None,
        limit: int = DEFAULT_LIMIT,
        detail_type: DetailType | None = None,
    ) -> EventPage:
        """The events recorded after ``since`` (an ISO time, exclusive, or a listing's
        ``next``), oldest first, at most ``limit``; without ``since``, the last ``limit``
        recorded. Newest last either way.

        Raises:
            ValidationError: ``since`` is not a time, or ``limit`` is not 1-200 (the field is
                named in ``details``).
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise ValidationError(f"limit: must be 1 to {MAX_LIMIT}", details={"field": "limit"})
        now = clock.now()
        index, partition = events_partition(cluster, detail_type.kind if detail_type else None)
        upper = clock.isoformat(now - SETTLE) + _ABOVE_TIME
        lower, cursor = _lower_bound(since)
        if lower > upper:
            return EventPage([], since)
        if since is None:
            items = self._table.query_between(index, partition, lower, upper, limit=limit,
                                              newest_first=True)[::-1]
        else:
            items = self._table.query_between(index, partition, lower, upper,
                                              limit=limit + (cursor is not None),
                                              newest_first=False)
            items = [item for item in items if item[f"{index}SK"]["S"] != cursor][:limit]
        expired = int(now.timestamp())
        events = [decode_body(item) for item in items
                  if int(item.get(TTL_ATTRIBUTE, {}).get("N", expired + 1)) > expired]
        last = items[-1][f"{index}SK"]["S"] if items else since
        return EventPage(events, last)

    # ------------------------------------------------------------------ encoding
    @staticmethod
    def _encode(event: Event, source: str, recorded_at: str, position: int) -> dict[str, Any]:
        if event.time is None:
            raise ValueError(f"a {event.detail_type} event without its time cannot be recorded")
        detail_type = DetailType(event.detail_type)
        event_id = str(event.detail["eventId"])
        envelope = {
            "id": event_id,
            "time": event.time,
            "source": source,
            "detail-type": event.detail_type,
            "resources": list(event.resources),
            "detail": event.detail,
        }
        tag = event.detail.get("clusterTag") or event.detail.get("tag")
        item = encode_item(
            event_key(event_id),
            envelope,
            index_keys=event_index_keys(
                event_sort_key(recorded_at, position, event_id), detail_type.kind,
                str(tag) if tag else None),
            attributes={"detailType": event.detail_type, "recordedAt": recorded_at},
        )
        expires = datetime.fromisoformat(event.time) + RETENTION
        item[TTL_ATTRIBUTE] = {"N": str(int(expires.timestamp()))}
        return item


def _lower_bound(since: str | None) -> tuple[str, str | None]:
    """(the lowest sort key to read, the cursor to leave out: the last one already read)."""
    if since is None:
        return _FLOOR, None
    if not _SINCE.match(since):
        raise ValidationError(
            "since: not an ISO time with its offset (2026-01-15T10:00:00Z) nor a listing's "
            "next", details={"field": "since"})
    time, mark, rest = since.partition("#")
    normal = clock.isoformat(_parse_time(time, "since"))
    if not mark:
        return normal + _ABOVE_TIME, None
    cursor = f"{normal}#{rest}"
    return cursor, cursor


def _parse_time(text: str, field: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValidationError(f"{field}: not a time: {text!r}", details={"field": field}) from None
    if value.tzinfo is None:
        raise ValidationError(f"{field}: the time needs its offset (Z for UTC)",
                              details={"field": field})
    return value.astimezone(UTC)
