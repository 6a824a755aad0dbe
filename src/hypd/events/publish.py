"""A batch of the table's stream records -> hypd's events on the bus, and what to retry.

The events of each record (`derive`) are put in stream order, ten to a request. When a request
fails or EventBridge refuses an entry, the batch stops there and the answer names the first
record not fully published (Lambda's ``ReportBatchItemFailures`` for streams): the event
source mapping retries from that record, so nothing after it is skipped. The records before it
are checkpointed; the ones after it that were put are put again on the retry, with the same
``eventId``, which is how a consumer drops the duplicate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hypd.aws.eventbridge import MAX_ENTRIES, Entry, Refused
from hypd.errors import HypdError
from hypd.events.derive import derive
from hypd.events.model import Event

LOG = logging.getLogger(__name__)

Put = Callable[[Sequence[Entry]], list[Refused]]
"""Puts up to ten entries on the bus in one request (`hypd.aws.eventbridge.put_events` with
its client and bus); returns the ones EventBridge refused, raises when the request fails."""

Keep = Callable[[Sequence[Event]], None]
"""Keeps a copy of events the bus took (`hypd.events.store`), idempotently by ``eventId``;
raises when it cannot (the records are then retried like an unpublished batch)."""


def publish(records: Sequence[Mapping[str, Any]], put: Put, source: str,
            keep: Keep | None = None) -> dict[str, Any]:
    """Publish the events of ``records`` (a DynamoDB stream batch), keep a copy of each that
    the bus took, and answer Lambda: the ``batchItemFailures`` to retry from (empty when all
    were published)."""
    pending: list[tuple[str, Event, Entry]] = []
    for record in records:
        images = record.get("dynamodb") or {}
        for event in derive(images.get("OldImage"), images.get("NewImage"), _sequence(record)):
            pending.append((_sequence(record), event, _entry(event, source)))
    for start in range(0, len(pending), MAX_ENTRIES):
        chunk = pending[start:start + MAX_ENTRIES]
        try:
            refused = put([entry for _seq, _event, entry in chunk])
        except HypdError as exc:
            LOG.warning("putting events failed; retrying from record %s: %s", chunk[0][0], exc)
            return _retry_from(chunk[0][0])
        taken = chunk
        if refused:
            index = next(i for i, (_seq, _event, entry) in enumerate(chunk)
                         if entry is refused[0].entry)
            taken = chunk[:index]
        if keep is not None and taken:
            try:
                keep([event for _seq, event, _entry in taken])
            except HypdError as exc:
                LOG.warning("keeping published events failed; retrying from record %s: %s",
                            taken[0][0], exc)
                return _retry_from(taken[0][0])
        if refused:
            first = chunk[len(taken)][0]
            LOG.warning("EventBridge refused an event (%s: %s); retrying from record %s",
                        refused[0].code, refused[0].message, first)
            return _retry_from(first)
    return {"batchItemFailures": []}


def _entry(event: Event, source: str) -> Entry:
    when = None
    if event.time:
        try:
            when = datetime.fromisoformat(event.time)
        except ValueError:  # an unparseable record time: the bus's time of receipt stands
            when = None
    return Entry(source, event.detail_type, event.detail, tuple(event.resources), when)


def _sequence(record: Mapping[str, Any]) -> str:
    return str((record.get("dynamodb") or {}).get("SequenceNumber", ""))


def _retry_from(sequence: str) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": sequence}]}
