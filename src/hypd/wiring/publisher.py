"""The events publisher's services (see hypd.wiring): the bus it puts on, its source, and the
copies it keeps for GET /events."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from hypd.aws.clients import lazy_client
from hypd.aws.eventbridge import put_events
from hypd.config import PublisherSettings
from hypd.events.publish import publish
from hypd.events.store import EventStore
from hypd.wiring import table

Batch = Sequence[Mapping[str, Any]]


def publisher(settings: PublisherSettings) -> Callable[[Batch], dict[str, Any]]:
    """``publish_batch(records)``: a stream batch -> Lambda's batch-item-failures answer."""
    events = lazy_client("events", settings.region)
    bus = settings.event_bus_name
    store = EventStore(table(settings))

    def publish_batch(records: Batch) -> dict[str, Any]:
        return publish(records, lambda entries: put_events(events(), bus, entries),
                       settings.event_source, keep=partial(store.record,
                                                           source=settings.event_source))

    return publish_batch
