"""EventBridge adapter: putting hypd's own events on a bus."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypd.aws.errors import translated

MAX_ENTRIES = 10
"""PutEvents takes at most 10 entries per request."""


@dataclass(frozen=True)
class Entry:
    source: str
    detail_type: str
    detail: dict[str, Any]
    resources: tuple[str, ...] = ()
    time: datetime | None = None


@dataclass(frozen=True)
class Refused:
    """An entry PutEvents did not take (``FailedEntryCount``), with EventBridge's reason."""

    entry: Entry
    code: str
    message: str


def put_events(client: Any, bus: str, entries: Sequence[Entry]) -> list[Refused]:
    """Put up to ten ``entries`` on ``bus`` in one request; returns the entries EventBridge
    refused one by one (a request that fails as a whole raises, translated). The caller
    batches: it knows which of its records a failure stops at."""
    if not 0 < len(entries) <= MAX_ENTRIES:
        raise ValueError(f"PutEvents takes 1 to {MAX_ENTRIES} entries, not {len(entries)}")
    requests = [_request(e, bus) for e in entries]
    answer: dict[str, Any] = translated(
        lambda: client.put_events(Entries=requests),
        f"putting {len(entries)} event(s) on bus {bus}")
    if not answer.get("FailedEntryCount"):
        return []
    return [Refused(entry, str(result["ErrorCode"]), str(result.get("ErrorMessage", "")))
            for entry, result in zip(entries, answer.get("Entries") or [], strict=False)
            if result.get("ErrorCode")]


def _request(entry: Entry, bus: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "Source": entry.source,
        "DetailType": entry.detail_type,
        "Detail": json.dumps(entry.detail, separators=(",", ":"), sort_keys=True),
        "EventBusName": bus,
    }
    if entry.resources:
        request["Resources"] = list(entry.resources)
    if entry.time is not None:
        request["Time"] = entry.time
    return request
