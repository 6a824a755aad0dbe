"""The watch protocol: ``GET <collection>?watch=1`` streams ``{"type", "object"}`` events.

What the API server does, and so this does:

* **Where a watch starts** (``resourceVersion``): unset or ``"0"``, a synthetic ``ADDED`` event
  for every object there is now, then every change; a number, every change after that
  resourceVersion (e.g. a list's, so list + watch misses nothing). A resourceVersion older than
  the changes the store keeps (`store.WATCH_HISTORY`) gets one ``ERROR`` event with a 410
  ``Expired`` Status, and the stream ends: the client lists again.
* **Selectors** (``labelSelector``, ``fieldSelector``) filter as the watch cache does: an object
  that starts matching arrives as ``ADDED``, one that stops matching leaves as ``DELETED``.
* **Bookmarks** (``allowWatchBookmarks=true``): a ``BOOKMARK`` (the kind, apiVersion and only
  ``metadata.resourceVersion``) about once a minute; with ``sendInitialEvents=true``
  (``resourceVersionMatch=NotOlderThan``, the watch-list of client-go's informers) the initial
  ADDED events end with a bookmark annotated ``k8s.io/initial-events-end: "true"``.
* **End**: after ``timeoutSeconds`` (default 30 minutes, kube-apiserver's
  ``--min-request-timeout``), when the server stops, or when the client goes away.

Waiting is on the store's condition variable with real-time timeouts: this is a server thread
serving a client, not a test.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hypd_local.kube.errors import KubeError, bad_request
from hypd_local.kube.resources import ResourceType
from hypd_local.kube.selectors import parse_field_selector, parse_label_selector
from hypd_local.kube.store import Change, Expired, ObjectStore

DEFAULT_TIMEOUT_SECONDS = 1800
BOOKMARK_INTERVAL_SECONDS = 60.0
_POLL_SECONDS = 1.0  # how often a waiting watch looks at its deadline and the server's stop
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

Event = dict[str, Any]


def _flag(value: str | None) -> bool:
    return value in ("1", "true", "True")


@dataclass(frozen=True)
class WatchRequest:
    """A watch's query parameters, checked as the API server checks them."""

    since: int | None
    label_selector: str | None
    field_selector: str | None
    bookmarks: bool
    send_initial_events: bool  # the initial events end with an annotated bookmark
    synthetic_added: bool  # the watch starts with an ADDED event per object there is now
    timeout_seconds: float

    @classmethod
    def from_args(cls, args: Mapping[str, str]) -> WatchRequest:
        version = args.get("resourceVersion") or None
        since: int | None = None
        if version not in (None, "0"):
            try:
                since = int(str(version))
            except ValueError as exc:
                raise bad_request(f'resourceVersion: Invalid value: "{version}": must be a '
                                  "non-negative integer") from exc
            if since < 0:
                raise bad_request(f'resourceVersion: Invalid value: "{version}": must be a '
                                  "non-negative integer")
        bookmarks = _flag(args.get("allowWatchBookmarks"))
        initial = _flag(args.get("sendInitialEvents"))
        if initial:
            if args.get("resourceVersionMatch") != "NotOlderThan":
                raise KubeError(422, "Invalid", "resourceVersionMatch: Forbidden: "
                                "sendInitialEvents requires setting resourceVersionMatch to "
                                "NotOlderThan")
            if not bookmarks:
                raise KubeError(422, "Invalid", "allowWatchBookmarks: Required value: "
                                "sendInitialEvents requires allowWatchBookmarks=true")
        timeout = args.get("timeoutSeconds")
        try:
            seconds = float(timeout) if timeout else float(DEFAULT_TIMEOUT_SECONDS)
        except ValueError as exc:
            raise bad_request(f'timeoutSeconds: Invalid value: "{timeout}"') from exc
        # Labels and fields are parsed now, so a bad selector is a 400, not a broken stream.
        parse_label_selector(args.get("labelSelector"))
        parse_field_selector(args.get("fieldSelector"))
        # sendInitialEvents=false: no synthetic ADDED events even from the current state
        synthetic = initial or (since is None and args.get("sendInitialEvents") is None)
        return cls(since, args.get("labelSelector"), args.get("fieldSelector"), bookmarks,
                   initial, synthetic, max(seconds, 0.0))


def _bookmark(rtype: ResourceType, resource_version: int, *, initial_end: bool = False
              ) -> Event:
    metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"type": "BOOKMARK",
            "object": {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": metadata}}


def _as_version(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored view as this watch's version serves it (a CRD served at several versions)."""
    if obj.get("apiVersion") == rtype.api_version:
        return obj
    return {**obj, "apiVersion": rtype.api_version}


def _event(rtype: ResourceType, change: Change, matches: Any) -> Event | None:
    now = matches(change.obj)
    if change.type == "MODIFIED" and change.prev is not None:
        before = matches(change.prev)
        if now and not before:
            return {"type": "ADDED", "object": _as_version(rtype, change.obj)}
        if before and not now:
            gone = {**change.prev, "metadata": {**change.prev["metadata"],
                                                "resourceVersion": str(change.rv)}}
            return {"type": "DELETED", "object": _as_version(rtype, gone)}
    if not now:
        return None
    return {"type": change.type, "object": _as_version(rtype, change.obj)}


def watch_events(store: ObjectStore, rtype: ResourceType, namespace: str | None,
                 request: WatchRequest, stop: threading.Event) -> Iterator[Event]:
    """The events of one watch (see the module docstring). Where it starts is settled before
    the first event is asked for, so the caller can answer an error before streaming."""
    labels = parse_label_selector(request.label_selector)
    fields = parse_field_selector(request.field_selector)

    def matches(obj: dict[str, Any]) -> bool:
        return bool(labels(obj) and fields(obj))

    try:
        initial, position = store.watch_start(
            rtype, namespace, None if request.synthetic_added else request.since)
    except Expired as exc:
        return iter([{"type": "ERROR", "object": exc.status()}])
    if not request.synthetic_added:
        initial = None
    return _stream(store, rtype, namespace, request, stop, matches, initial, position)


def _stream(store: ObjectStore, rtype: ResourceType, namespace: str | None,
            request: WatchRequest, stop: threading.Event, matches: Any,
            initial: list[dict[str, Any]] | None, position: int) -> Iterator[Event]:
    deadline = time.monotonic() + request.timeout_seconds
    next_bookmark = time.monotonic() + BOOKMARK_INTERVAL_SECONDS
    for obj in initial or []:
        if matches(obj):
            yield {"type": "ADDED", "object": obj}
    if request.send_initial_events:
        yield _bookmark(rtype, position, initial_end=True)
    while not stop.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        try:
            changes, position = store.changes_since(rtype, namespace, position,
                                                    wait=min(_POLL_SECONDS, remaining))
        except Expired as exc:
            yield {"type": "ERROR", "object": exc.status()}
            return
        for change in changes:
            event = _event(rtype, change, matches)
            if event is not None:
                yield event
        if request.bookmarks and time.monotonic() >= next_bookmark:
            next_bookmark = time.monotonic() + BOOKMARK_INTERVAL_SECONDS
            yield _bookmark(rtype, position)
