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
from typing import Any

from hypd.aws.eventbridge import MAX_ENTRIES, Entry, Refused
from hypd.errors import HypdError
from hypd.events.derive import derive

LOG = logging.getLogger(__name__)

Put = Callable[[Sequence[Entry]], list[Refused]]
"""Puts up to ten entries on the bus in one request (`hypd.aws.eventbridge.put_events` with
its client and bus); returns the ones EventBridge refused, raises when the request fails."""


def publish(records: Sequence[Mapping[str, Any]], put: Put, source: str) -> dict[str, Any]:
    """Publish the events of ``records`` (a DynamoDB stream batch) and answer Lambda: the
    ``batchItemFailures`` to retry from (empty when all were published)."""
    pending: list[tuple[str, Entry]] = []
    for record in records:
        images = record.get("dynamodb") or {}
        for event in derive(images.get("OldImage"), images.get("NewImage")):
            pending.append((_sequence(record), Entry(source, event.detail_type, event.detail,
                                                     tuple(event.resources))))
    for start in range(0, len(pending), MAX_ENTRIES):
        chunk = pending[start:start + MAX_ENTRIES]
        try:
            refused = put([entry for _seq, entry in chunk])
        except HypdError as exc:
            LOG.warning("putting events failed; retrying from record %s: %s", chunk[0][0], exc)
            return _retry_from(chunk[0][0])
        if refused:
            first = next(seq for seq, entry in chunk if entry is refused[0].entry)
            LOG.warning("EventBridge refused an event (%s: %s); retrying from record %s",
                        refused[0].code, refused[0].message, first)
            return _retry_from(first)
    return {"batchItemFailures": []}


def _sequence(record: Mapping[str, Any]) -> str:
    return str((record.get("dynamodb") or {}).get("SequenceNumber", ""))


def _retry_from(sequence: str) -> dict[str, Any]:
    return {"batchItemFailures": [{"itemIdentifier": sequence}]}
