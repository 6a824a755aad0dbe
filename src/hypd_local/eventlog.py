"""What the local cloud's event buses received: every event put on any bus, newest last.

Read back with `LocalCloud.events()` or ``GET /_local/events`` (query: ``source``,
``detail-type``, ``bus``, ``after`` an event id; ``limit``). It is how a test or `hypd events
tail` on the local cloud sees what hypd published, without a rule of its own. Events are kept
as EventBridge delivers them (ISO ``time``, ``id``, ``account``, ``region``) with the bus's
name beside them, up to `EventLog.capacity` (the oldest go first).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from hypd_local.eventbus import aws_event_shape


class EventLog:
    """A bounded, thread-safe record of the events the buses received."""

    capacity = 10_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: deque[dict[str, Any]] = deque(maxlen=self.capacity)
        self._listeners: list[Callable[[dict[str, Any]], None]] = []

    def received(self, bus: str, event: Mapping[str, Any]) -> None:
        shaped = aws_event_shape(event)
        with self._lock:
            self._events.append({"bus": bus, "event": shaped})
            listeners = list(self._listeners)
        for listener in listeners:
            listener(shaped | {"bus": bus})

    def subscribe(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call `listener` with each event received from now on (as `events` returns them),
        on the thread that put it; returns what unsubscribes it."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def events(self, *, source: str | None = None, detail_type: str | None = None,
               bus: str | None = None, after: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
        """The events that match, oldest first; ``after``: only those received after the
        event with that id (all of them if it is no longer kept)."""
        with self._lock:
            kept = list(self._events)
        if after is not None:
            index = next((i for i, e in enumerate(kept) if e["event"].get("id") == after), None)
            if index is not None:
                kept = kept[index + 1:]
        found = [e["event"] | {"bus": e["bus"]} for e in kept
                 if (source is None or e["event"].get("source") == source)
                 and (detail_type is None or e["event"].get("detail-type") == detail_type)
                 and (bus is None or e["bus"] == bus)]
        return found[-limit:] if limit else found

    def admin_route(self, query: Any) -> tuple[int, Any]:
        """``GET /_local/events``."""
        args = query if isinstance(query, Mapping) else {}
        limit = args.get("limit")
        if limit is not None and (not str(limit).isdigit() or not 1 <= int(limit) <= 1000):
            return 400, {"message": "limit: a whole number from 1 to 1000"}
        unknown = set(args) - {"source", "detail-type", "bus", "after", "limit"}
        if unknown:
            return 400, {"message": f"unknown query parameter(s): {', '.join(sorted(unknown))}"}
        return 200, {"events": self.events(
            source=args.get("source"), detail_type=args.get("detail-type"),
            bus=args.get("bus"), after=args.get("after"),
            limit=int(limit) if limit is not None else None)}
