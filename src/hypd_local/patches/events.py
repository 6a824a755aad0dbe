"""EventBridge: the local cloud delivers to Lambda and Step Functions targets.

``Rule.send_to_targets``: Lambda and Step Functions targets are delivered (moto raises
NotImplementedError); DISABLED rules deliver nothing. ``EventsBackend.put_events``: every event
a bus takes is kept in the local cloud's event log (`hypd_local.eventlog`).
``events.models.unix_time``: event times on the virtual clock.
"""

from __future__ import annotations

import copy
import datetime
import json
from typing import Any

from hypd_local.eventbus import EventDelivery
from hypd_local.patches.engine import active, replace


def patch_events() -> None:
    from moto.events import models as events_models

    original_send: Any = events_models.Rule.send_to_targets
    original_unix_time: Any = vars(events_models)["unix_time"]

    def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
        engine = active()
        if engine is None:
            original_send(self, original_event, transform_input)
            return
        if self.state != "ENABLED" or not self.event_pattern.matches_event(original_event):
            return
        ours = [t for t in self.targets if EventDelivery.handles(str(t["Arn"]))]
        others = [t for t in self.targets if not EventDelivery.handles(str(t["Arn"]))]
        if others:
            # moto delivers the kinds it supports; a shallow copy keeps self.targets untouched.
            clone = copy.copy(self)
            clone.targets = others
            original_send(clone, original_event, transform_input)
        for target in ours:
            engine.delivery.dispatch(self.arn, target, original_event)

    def unix_time(dt: datetime.datetime | None = None) -> float:
        engine = active()
        if engine is None or dt is not None:
            seconds: float = original_unix_time(dt)
            return seconds
        return engine.clock.timestamp()

    original_put_events: Any = events_models.EventsBackend.put_events

    def put_events(self: Any, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        engine = active()
        if engine is None:
            result: list[dict[str, Any]] = original_put_events(self, events)
            return result
        # The ids moto draws for the entries it takes, so the log names them as the bus does.
        taken: list[dict[str, Any]] = original_put_events(self, events)
        for event, entry in zip(events, taken, strict=False):
            if "EventId" not in entry:
                continue
            bus = self._normalize_event_bus_arn(event.get("EventBusName"))
            engine.event_log.received(bus, {
                "version": "0", "id": entry["EventId"], "detail-type": event["DetailType"],
                "source": event["Source"], "account": self.account_id,
                "time": event.get("Time", engine.clock.timestamp()), "region": self.region_name,
                "resources": event.get("Resources", []), "detail": json.loads(event["Detail"]),
            })
        return taken

    replace(events_models.Rule, "send_to_targets", send_to_targets)
    replace(events_models, "unix_time", unix_time)
    replace(events_models.EventsBackend, "put_events", put_events)
